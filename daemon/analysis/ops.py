"""Operator time by type and core type, AI CPU, format conversions, dynamic shapes, small ops."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from npumon.daemon.model.profile import CORE_TYPES, CoreShare, OpShare, Thresholds

if TYPE_CHECKING:
    import pandas as pd


# Ops that only change layout or dtype (NCHW <-> NC1HWC0 / FRACTAL_Z, fp32 <-> fp16 ...).
FORMAT_CONVERSION_OPS = frozenset(
    {"TransData", "TransDataRNN", "Cast", "Transpose", "TransposeD", "ConfusionTransposeD"}
)
COPY_OPS = frozenset({"TensorMove", "Identity", "MemcpyAsync", "ViewCopy"})
RESHAPE_TRANSPOSE_OPS = frozenset({"Reshape", "Transpose", "TransposeD", "ConfusionTransposeD"})
_CONV_MATMUL = re.compile(r"^(Conv|MatMul|BatchMatMul|GroupedMatmul|QuantBatchMatmul|Gemm)", re.I)
_SOFTMAX = re.compile(r"softmax", re.I)
_CORE_NAMES = {
    "AI_CORE": "ai_core",
    "AI_VECTOR_CORE": "ai_vector_core",
    "AI_CPU": "ai_cpu",
    "MIX_AIC": "mix",
    "MIX_AIV": "mix",
    "MIX": "mix",
    "HCCL": "communication",
    "COMMUNICATION": "communication",
}
UNKNOWN = "unknown"


def core_type_label(raw: object) -> str:
    """Task Type / Core Type -> one of CORE_TYPES, else the lower-cased raw value."""
    if not isinstance(raw, str) or not raw.strip():
        return UNKNOWN
    text = raw.strip().upper()
    return _CORE_NAMES.get(text, text.lower())


def infer_op_type(name: object) -> str:
    """Level0 tables have no op type: guess it from the kernel name (``aclnnX_Y_Relu`` -> Relu)."""
    if not isinstance(name, str) or not name:
        return UNKNOWN
    base = name.split("/")[0]
    if base.startswith("aclnn"):
        return base.rsplit("_", 1)[-1] or UNKNOWN
    if base.startswith("trans_") and base.count("_") >= 2:
        return base.split("_")[1]
    return re.sub(r"_?\d+$", "", base) or UNKNOWN


@dataclass(frozen=True, slots=True)
class OpFacts:
    """Operator totals of one or more tables, in microseconds, keyed by (op_type, core label)."""

    groups: dict[tuple[str, str], tuple[float, int]]
    ai_cpu_us: float | None
    ai_cpu_count: int | None
    dynamic_count: int | None
    small_count: int
    op_count: int
    inferred: bool

    @property
    def total_us(self) -> float:
        return sum(us for us, _ in self.groups.values())


def _group(
    frame: pd.DataFrame, value: str, count: str | None
) -> dict[tuple[str, str], tuple[float, int]]:
    """Group on the raw (categorical) columns, then label the few groups: cheap on 1M rows."""
    keys = ["op_type", "core_type"] if "core_type" in frame else ["op_type"]
    agg = frame.groupby(keys, sort=False, observed=True, dropna=False)
    sums = agg[value].sum()
    counts = agg[count].sum() if count else agg.size()
    groups: dict[tuple[str, str], tuple[float, int]] = {}
    # positional: NaN keys (no core type) cannot be looked up by label
    for key, us, n in zip(sums.index, sums.to_numpy(), counts.to_numpy(), strict=True):
        op_type, core = key if isinstance(key, tuple) else (key, None)
        label = (op_type if isinstance(op_type, str) else UNKNOWN, core_type_label(core))
        old_us, old_count = groups.get(label, (0.0, 0))
        groups[label] = (old_us + float(us), old_count + int(n))
    return groups


def _equals(column: pd.Series, text: str) -> pd.Series:
    """Case-insensitive equality without touching every row of a categorical column."""
    import pandas as pd

    if isinstance(column.dtype, pd.CategoricalDtype):
        hits = [c for c in column.cat.categories if str(c).strip().lower() == text]
        return column.isin(hits)
    return column.astype("object").str.strip().str.lower() == text


def kernel_facts(frame: pd.DataFrame, thresholds: Thresholds, inferred: bool) -> OpFacts:
    """From kernel_details / op_summary rows (one row per task)."""
    duration = frame["duration_us"]
    ai_cpu_us: float | None = None
    ai_cpu_count: int | None = None
    if "core_type" in frame and frame["core_type"].notna().any():
        mask = _equals(frame["core_type"], "ai_cpu") & (duration >= thresholds.ai_cpu_min_op_us)
        ai_cpu_us, ai_cpu_count = float(duration[mask].sum()), int(mask.sum())
    dynamic = None
    if "op_state" in frame:
        dynamic = int(_equals(frame["op_state"], "dynamic").sum())
    return OpFacts(
        groups=_group(frame, "duration_us", None),
        ai_cpu_us=ai_cpu_us,
        ai_cpu_count=ai_cpu_count,
        dynamic_count=dynamic,
        small_count=int((duration < thresholds.small_op_us).sum()),
        op_count=int(duration.notna().sum()),
        inferred=inferred,
    )


def statistic_facts(frame: pd.DataFrame, thresholds: Thresholds) -> OpFacts:
    """From op_statistic (one row per op type); AI CPU and small ops judged by average time."""
    counts = frame["count"].fillna(0) if "count" in frame else None
    avg = frame.get("avg_us")
    ai_cpu_us = ai_cpu_count = None
    small = 0
    if avg is not None and counts is not None:
        mask = _equals(frame["core_type"], "ai_cpu") & (avg >= thresholds.ai_cpu_min_op_us)
        ai_cpu_us, ai_cpu_count = float(frame["total_us"][mask].sum()), int(counts[mask].sum())
        small = int(counts[avg < thresholds.small_op_us].sum())
    return OpFacts(
        groups=_group(frame, "total_us", "count" if counts is not None else None),
        ai_cpu_us=ai_cpu_us,
        ai_cpu_count=ai_cpu_count,
        dynamic_count=None,
        small_count=small,
        op_count=int(counts.sum()) if counts is not None else len(frame),
        inferred=False,
    )


def _sum_optional(values: Iterable[float | int | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def merge_facts(facts: list[OpFacts]) -> OpFacts:
    """Several ranks' operator tables as one."""
    groups: dict[tuple[str, str], tuple[float, int]] = {}
    for fact in facts:
        for key, (us, count) in fact.groups.items():
            old_us, old_count = groups.get(key, (0.0, 0))
            groups[key] = (old_us + us, old_count + count)
    ai_cpu_count = _sum_optional(f.ai_cpu_count for f in facts)
    dynamic = _sum_optional(f.dynamic_count for f in facts)
    return OpFacts(
        groups=groups,
        ai_cpu_us=_sum_optional(f.ai_cpu_us for f in facts),
        ai_cpu_count=None if ai_cpu_count is None else int(ai_cpu_count),
        dynamic_count=None if dynamic is None else int(dynamic),
        small_count=sum(f.small_count for f in facts),
        op_count=sum(f.op_count for f in facts),
        inferred=any(f.inferred for f in facts),
    )


def top_ops(facts: OpFacts, top_n: int) -> tuple[OpShare, ...]:
    """The top_n (op type, core type) by time, then one ``other`` row for the rest."""
    total = facts.total_us
    if total <= 0:
        return ()
    ranked = sorted(facts.groups.items(), key=lambda kv: (-kv[1][0], kv[0]))
    shares = [OpShare(t, c, us / 1e6, us / total, n) for (t, c), (us, n) in ranked[:top_n]]
    rest = ranked[top_n:]
    if rest:
        rest_us = sum(us for _, (us, _) in rest)
        shares.append(
            OpShare("other", "other", rest_us / 1e6, rest_us / total, sum(n for _, (_, n) in rest))
        )
    return tuple(shares)


def core_shares(facts: OpFacts) -> tuple[CoreShare, ...]:
    total = facts.total_us
    if total <= 0:
        return ()
    by_core = dict.fromkeys(CORE_TYPES, 0.0)
    for (_, core), (us, _) in facts.groups.items():
        if core in by_core:
            by_core[core] += us
    return tuple(CoreShare(c, us / 1e6, us / total) for c, us in by_core.items() if us > 0)


def ratio_of(facts: OpFacts, wanted: frozenset[str] | re.Pattern[str]) -> float:
    """Share of operator time whose op type is in ``wanted`` (a set or a regex)."""
    total = facts.total_us
    if total <= 0:
        return 0.0
    if isinstance(wanted, frozenset):
        hit = sum(us for (t, _), (us, _) in facts.groups.items() if t in wanted)
    else:
        hit = sum(us for (t, _), (us, _) in facts.groups.items() if wanted.search(t))
    return hit / total


def conv_matmul_ratio(facts: OpFacts) -> float:
    return ratio_of(facts, _CONV_MATMUL)


def softmax_ratio(facts: OpFacts) -> float:
    return ratio_of(facts, _SOFTMAX)
