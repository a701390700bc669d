"""operator_pmu: vector operators judged by their PMU ratios (kernel_details with
aic_metrics=PipeUtilization).

msprof-analyze's "Vector Operator Perf Analysis" (advisor's AI Core performance checker, rules
aicore_performance.yaml), restated: of the vector operators (Accelerator Core AI_VECTOR_CORE or
MIX_AIV; on 910A, whose one AI Core kind does both, the AI_CORE tasks that never used the cube)
whose op type takes at least operator_pmu_min_share of all operator time, each (name, input
shapes, output shapes) is judged on its mean aiv_vec_ratio, aiv_mte2_ratio and
aiv_mte3_ratio: bound when vec + mte2 + mte3 >= pmu_vector_total_ratio (vec_mte2_mte3) or one unit
>= pmu_vector_unit_ratio (mte2, then mte3, then vec); otherwise it has headroom, the most any
unit is below pmu_vector_unit_ratio. Unlike msprof-analyze, which lists every shape (2-17 us ones
too), only the shapes of at least operator_pmu_shape_share of operator time are judged and
named: ``operator_pmu`` names those with the most headroom and the longest bound ones, and
counts the smaller ones. It fires only when such a shape has headroom: a profile whose vector
operators that matter are all bound uses its units fully, which is no finding. The
checker's cube (MatMul) and FlashAttention parts judge shape affinity (inner axes divisible by
256 / 128) and are not restated here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from npumon.daemon.analysis.evidence import PMU_RATIOS, Evidence, VectorRows
from npumon.daemon.analysis.findings import finding
from npumon.daemon.model.profile import Bottleneck, Thresholds

KIND = "operator_pmu"
ORDER = 180
OPERATOR_TABLE = True  # judges the operator tables: withheld when they cover too little
ADVICE = (
    "Vector operators that take a noticeable share of operator time run "
    "with poor pipe utilisation (the PMU ratios of kernel_details, aic_metrics=PipeUtilization). "
    "For those with headroom (no unit busy), look at their shapes and block dim (too few cores, "
    "unaligned or tiny tiles) and fuse them with neighbours; for bound ones, reduce the work of "
    "the bounding unit: mte2/mte3 (memory traffic: fewer copies, TransData, better formats) or "
    "vec (fewer elementwise passes, fused operators). msprof-analyze's advisor lists the same "
    "operators per shape."
)

_KEY = ["name", "input_shapes", "output_shapes"]


SHOWN = 3  # operators named per list in the finding


SHAPES_SHOWN = 60  # characters of the input shapes quoted (a foreach op lists dozens)


@dataclass(frozen=True, slots=True)
class VectorOp:
    name: str
    shapes: str
    duration_us: float
    ratios: tuple[float, float, float]  # vec, mte2, mte3 (means)
    bound: str  # "" when it has headroom
    headroom: float


def classify(vec: float, mte2: float, mte3: float, t: Thresholds) -> tuple[str, float]:
    unit = t.pmu_vector_unit_ratio
    if vec + mte2 + mte3 >= t.pmu_vector_total_ratio:
        return "vec_mte2_mte3", 0.0
    for name, value in (("mte2", mte2), ("mte3", mte3), ("vec", vec)):
        if value >= unit:
            return name, 0.0
    return "", max(unit - vec, unit - mte2, unit - mte3)


def vector_ops(parts: Sequence[VectorRows], t: Thresholds) -> list[VectorOp]:
    import pandas as pd

    total = sum(p.total_us for p in parts)
    frames = [p.rows for p in parts if len(p.rows)]
    if total <= 0 or not frames:
        return []
    rows = pd.concat(frames, ignore_index=True)
    for column in ("op_type", *_KEY):
        rows[column] = rows[column].astype("object").astype(str)
    by_type = rows.groupby("op_type")["duration_us"].sum()
    heavy = by_type[(by_type / total >= t.operator_pmu_min_share) | (by_type >= 1e6)].index
    rows = rows[rows["op_type"].isin(heavy)]
    grouped = (
        rows.groupby(_KEY, sort=False)
        .agg(duration_us=("duration_us", "sum"), **{r: (r, "mean") for r in PMU_RATIOS})
        .dropna()
        .reset_index()
    )
    found = []
    for g in grouped.to_dict("records"):
        ratios = (float(g["aiv_vec_ratio"]), float(g["aiv_mte2_ratio"]), float(g["aiv_mte3_ratio"]))
        bound, headroom = classify(*ratios, t)
        found.append(
            VectorOp(
                str(g["name"]),
                str(g["input_shapes"]).strip('"'),
                float(g["duration_us"]),
                ratios,
                bound,
                headroom,
            )
        )
    return found


def _line(op: VectorOp, total_us: float) -> str:
    vec, mte2, mte3 = op.ratios
    shapes = op.shapes if len(op.shapes) <= SHAPES_SHOWN else op.shapes[:SHAPES_SHOWN] + "..."
    return (
        f"{op.name} [{shapes}] {op.duration_us:.0f} us ({op.duration_us / total_us:.2%}), "
        f"vec {vec:.2f} mte2 {mte2:.2f} mte3 {mte3:.2f}"
    )


def _judge(parts: Sequence[VectorRows], t: Thresholds) -> tuple[Bottleneck, ...]:
    """The shapes of at least operator_pmu_shape_share of operator time are judged; a finding
    when one of them has headroom (the smaller ones are counted, never named)."""
    ops = vector_ops(parts, t)
    total = sum(p.total_us for p in parts)
    judged = [o for o in ops if o.duration_us >= t.operator_pmu_shape_share * total]
    if all(o.bound for o in judged):  # none, or every one that matters saturates a unit
        return ()
    room = sorted((o for o in judged if not o.bound), key=lambda o: (-o.headroom, o.name))
    bound = sorted((o for o in judged if o.bound), key=lambda o: (-o.duration_us, o.name))
    lists = [
        f"{len(room)} with headroom (a PMU unit up to {room[0].headroom:.0%} below "
        f"{t.pmu_vector_unit_ratio:.0%}), most: "
        + "; ".join(f"{_line(o, total)}, {o.headroom:.0%}" for o in room[:SHOWN])
    ]
    if bound:
        lists.append(
            f"{len(bound)} bound, longest: "
            + "; ".join(f"{_line(o, total)}, {o.bound} bound" for o in bound[:SHOWN])
        )
    small = [o for o in ops if o not in judged]
    left = (
        f" ({len(small)} smaller shape(s), {sum(o.duration_us for o in small) / 1e3:.3f} ms "
        "together, not named)"
        if small
        else ""
    )
    partial = [note for part in parts for note in part.notes]
    return (
        finding(
            ADVICE,
            KIND,
            f"{len(judged)} vector operator shape(s) of at least "
            f"{t.operator_pmu_shape_share:.1%} of operator time each ({total / 1e3:.3f} ms), "
            f"of op types over {t.operator_pmu_min_share:.0%} of it, by PMU ratios: "
            + ". ".join(lists)
            + left
            + "".join(f" ({note})" for note in partial),
            float(len(judged)),
            0.0,
        ),
    )


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    return _judge(e.vector, t)
