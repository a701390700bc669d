"""Operator time by type and core type, AI CPU, format conversions, dynamic shapes, small ops.

One model whichever tables exist: compute operators by (op type, core type); communication
(HCCL) tasks apart, by collective (``collectives.py``); waits and idle are never operator time
(text tables do not list them as operators, db exports keep them in other tables)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from npumon.daemon.analysis.readers.collectives import collective_of, is_communication
from npumon.daemon.model.profile import CORE_TYPES, CoreShare, OpShare

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


# Ops that only change layout or dtype (NCHW <-> NC1HWC0 / FRACTAL_Z, fp32 <-> fp16 ...).
FORMAT_CONVERSION_OPS = frozenset(
    {"TransData", "TransDataRNN", "Cast", "Transpose", "TransposeD", "ConfusionTransposeD"}
)
COPY_OPS = frozenset({"TensorMove", "Identity", "MemcpyAsync", "ViewCopy"})
RESHAPE_TRANSPOSE_OPS = frozenset({"Reshape", "Transpose", "TransposeD", "ConfusionTransposeD"})
# compute-bound work of the checklist: Conv/MatMul, and FlashAttention (two MatMuls + softmax)
_CONV_MATMUL = re.compile(
    r"^(Conv|MatMul|BatchMatMul|GroupedMatmul|QuantBatchMatmul|Gemm|FlashAttention)", re.I
)
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
    "DSA_SQE": "dsa_sqe",
}
UNKNOWN = "unknown"


def core_type_label(raw: object) -> str:
    """Task Type / Core Type -> one of CORE_TYPES, else the lower-cased raw value."""
    if not isinstance(raw, str) or not raw.strip():
        return UNKNOWN
    text = raw.strip().upper()
    return _CORE_NAMES.get(text, text.lower())


# a GE node name: the op type, then the node's counter (Conv2D1, AxpyV2102, ReduceSum7)
_GE_NODE = re.compile(r"^(?P<type>.*?[A-Za-z])_?(?P<counter>\d+)$")
# a task GE adds to a node, named after it: Conv2DBackpropFilter10_MemSet (type MemSet)
_NODE_TASK = re.compile(r"^[A-Za-z]\w*?\d+_(?P<type>[A-Z][A-Za-z0-9]*)$")


def infer_op_type(name: object) -> str:
    """Level0 tables have no op type: guess it from the kernel name as Level1 types it.

    ``aclnnX_Y_Relu`` -> Relu, ``trans_TransData_3`` -> TransData, ``Conv2DBackpropFilter10_MemSet``
    -> MemSet; a GE node name drops its counter, except that an op version (a ``V`` and one digit)
    stays: ``AxpyV2102`` -> AxpyV2, ``TopKV25`` -> TopKV2, ``Conv2D1`` -> Conv2D."""
    if not isinstance(name, str) or not name:
        return UNKNOWN
    base = name.split("/")[0]
    if base.startswith("aclnn"):
        return base.rsplit("_", 1)[-1] or UNKNOWN
    if base.startswith("trans_") and base.count("_") >= 2:
        return base.split("_")[1]
    task = _NODE_TASK.match(base)
    if task:
        return task["type"]
    node = _GE_NODE.match(base)
    if node is None:
        return base
    if node["type"].endswith("V"):  # the version's digit, then the counter
        return node["type"] + node["counter"][0]
    return node["type"]


Groups = dict[tuple[str, str], tuple[float, int]]
ByName = dict[str, tuple[float, int]]


@dataclass(frozen=True, slots=True)
class AiCpuRows:
    """The AI CPU rows of one table: per task (kernel tables) or per op type (op_statistic)."""

    rows: pd.DataFrame
    value: str  # the column of their time (us)
    count: str | None  # the column of their task count; None: one task a row
    judged: str  # the column of the time a task took (us): its own, or its type's average


@dataclass(frozen=True, slots=True)
class OpTimes:
    """The compute (not communication) operators of one table: how long each took (us), per
    task, or per op type's average with its task count."""

    us: np.ndarray
    counts: np.ndarray | None  # None: one task each


@dataclass(frozen=True, slots=True)
class OpFacts:
    """Totals of one or more tables, in microseconds: compute operators keyed by (op_type, core
    label), communication by collective; the AI CPU rows and compute operator times, per table,
    for the counts a threshold decides (opcounts.py)."""

    groups: Groups
    comm: ByName
    ai_cpu: tuple[AiCpuRows, ...] | None  # None when no table has a core type column
    dynamic_count: int | None  # None when the table has no OP State column
    static_count: int | None
    op_times: tuple[OpTimes, ...]
    op_count: int
    inferred: bool

    @property
    def total_us(self) -> float:
        return sum(us for us, _ in self.groups.values())


def _add(into: dict[object, tuple[float, int]], key: object, us: float, n: int) -> None:
    old_us, old_n = into.get(key, (0.0, 0))
    into[key] = (old_us + us, old_n + n)


def _group(frame: pd.DataFrame, value: str, count: str | None) -> tuple[Groups, ByName]:
    """Group on the raw (categorical) columns, then label the few groups: cheap on 1M rows.
    Communication groups go to the second dict, by collective."""
    keys = ["op_type", "core_type"] if "core_type" in frame else ["op_type"]
    agg = frame.groupby(keys, sort=False, observed=True, dropna=False)
    sums = agg[value].sum()
    counts = agg[count].sum() if count else agg.size()
    groups: dict[object, tuple[float, int]] = {}
    comm: dict[object, tuple[float, int]] = {}
    # positional: NaN keys (no core type) cannot be looked up by label
    for key, us, n in zip(sums.index, sums.to_numpy(), counts.to_numpy(), strict=True):
        op_type, core = key if isinstance(key, tuple) else (key, None)
        label = (op_type if isinstance(op_type, str) else UNKNOWN, core_type_label(core))
        if is_communication(*label):
            _add(comm, collective_of(label[0]), float(us), int(n))
        else:
            _add(groups, label, float(us), int(n))
    return groups, comm  # type: ignore[return-value]


def _equals(column: pd.Series, text: str) -> pd.Series:
    """Case-insensitive equality without touching every row of a categorical column."""
    import pandas as pd

    if isinstance(column.dtype, pd.CategoricalDtype):
        hits = [c for c in column.cat.categories if str(c).strip().lower() == text]
        return column.isin(hits)
    return column.astype("object").str.strip().str.lower() == text


def _matching(column: pd.Series, test: Callable[[str], bool]) -> pd.Series:
    """Rows whose value passes ``test``, judged once per category of a categorical column."""
    import pandas as pd

    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.isin([c for c in column.cat.categories if test(str(c))])
    return column.astype("object").map(lambda v: isinstance(v, str) and test(v)).astype(bool)


def _comm_rows(frame: pd.DataFrame) -> pd.Series:
    by_type = _matching(frame["op_type"], lambda t: is_communication(t, ""))
    if "core_type" not in frame:
        return by_type
    return by_type | _matching(frame["core_type"], lambda c: core_type_label(c) == "communication")


def kernel_facts(frame: pd.DataFrame, inferred: bool) -> OpFacts:
    """From kernel_details / op_summary rows (one row per task)."""
    duration = frame["duration_us"]
    compute = ~_comm_rows(frame)
    ai_cpu: tuple[AiCpuRows, ...] | None = None
    if "core_type" in frame and frame["core_type"].notna().any():
        rows = frame[_equals(frame["core_type"], "ai_cpu")]
        ai_cpu = (AiCpuRows(rows, "duration_us", None, "duration_us"),)
    dynamic = static = None
    if "op_state" in frame:
        dynamic = int((_equals(frame["op_state"], "dynamic") & compute).sum())
        static = int((_equals(frame["op_state"], "static") & compute).sum())
    groups, comm = _group(frame, "duration_us", None)
    return OpFacts(
        groups=groups,
        comm=comm,
        ai_cpu=ai_cpu,
        dynamic_count=dynamic,
        static_count=static,
        op_times=(OpTimes(duration[compute].to_numpy(), None),),
        op_count=int((duration.notna() & compute).sum()),
        inferred=inferred,
    )


def statistic_facts(frame: pd.DataFrame) -> OpFacts:
    """From op_statistic (one row per op type); a type's tasks timed by its average."""
    counts = frame["count"].fillna(0) if "count" in frame else None
    avg = frame.get("avg_us")
    ai_cpu: tuple[AiCpuRows, ...] | None = None
    times: tuple[OpTimes, ...] = ()
    if avg is not None and counts is not None:
        ai_cpu = (
            AiCpuRows(frame[_equals(frame["core_type"], "ai_cpu")], "total_us", "count", "avg_us"),
        )
        compute = ~_comm_rows(frame)
        times = (OpTimes(avg[compute].to_numpy(), counts[compute].to_numpy()),)
    groups, comm = _group(frame, "total_us", "count" if counts is not None else None)
    return OpFacts(
        groups=groups,
        comm=comm,
        ai_cpu=ai_cpu,
        dynamic_count=None,
        static_count=None,
        op_times=times,
        op_count=sum(n for _, n in groups.values()),
        inferred=False,
    )


def combine(statistic: OpFacts, kernel: OpFacts) -> OpFacts:
    """op_statistic for compute time by type; the per-task table for communication and what
    needs single tasks (AI CPU tasks, op states, small tasks)."""
    return OpFacts(
        groups=statistic.groups,
        comm=kernel.comm or statistic.comm,
        ai_cpu=kernel.ai_cpu if kernel.ai_cpu is not None else statistic.ai_cpu,
        dynamic_count=kernel.dynamic_count,
        static_count=kernel.static_count,
        op_times=kernel.op_times,
        op_count=kernel.op_count,
        inferred=False,
    )


def _sum_optional(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _merge_names(parts: Iterable[ByName]) -> ByName:
    merged: dict[object, tuple[float, int]] = {}
    for part in parts:
        for key, (us, n) in part.items():
            _add(merged, key, us, n)
    return merged  # type: ignore[return-value]


def merge_facts(facts: list[OpFacts]) -> OpFacts:
    """Several ranks' operator tables as one."""
    groups: dict[object, tuple[float, int]] = {}
    for fact in facts:
        for key, (us, count) in fact.groups.items():
            _add(groups, key, us, count)
    ai_cpu = [rows for f in facts if f.ai_cpu is not None for rows in f.ai_cpu]
    known = any(f.ai_cpu is not None for f in facts)
    return OpFacts(
        groups=groups,  # type: ignore[arg-type]
        comm=_merge_names(f.comm for f in facts),
        ai_cpu=tuple(ai_cpu) if known else None,
        dynamic_count=_sum_optional(f.dynamic_count for f in facts),
        static_count=_sum_optional(f.static_count for f in facts),
        op_times=tuple(t for f in facts for t in f.op_times),
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
    """Compute operator time by core type: every kind the tables name (known ones first)."""
    total = facts.total_us
    if total <= 0:
        return ()
    by_core = dict.fromkeys(CORE_TYPES, 0.0)
    for (_, core), (us, _) in facts.groups.items():
        by_core[core] = by_core.get(core, 0.0) + us
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
