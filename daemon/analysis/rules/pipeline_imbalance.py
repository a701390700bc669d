"""pipeline_imbalance: data-parallel groups (readers/replicas.py) whose mean compute differs:
pipeline stages running other layers, never a slow rank."""

from __future__ import annotations

from collections.abc import Sequence

from npumon.daemon.analysis.evidence import Evidence
from npumon.daemon.analysis.findings import finding
from npumon.daemon.model.profile import Bottleneck, RankBreakdown, Thresholds

KIND = "pipeline_imbalance"
ORDER = 130
ADVICE = (
    "Pipeline stages do different amounts of work, so the lighter stages "
    "wait. Rebalance the layers between stages (e.g. Megatron's decoder first/last pipeline "
    "num layers, or moving the embedding/loss), or use virtual pipeline stages to shrink bubbles."
)


def _computing(rank: RankBreakdown) -> float | None:
    return next((p.seconds for p in rank.phases if p.phase in ("computing", "fp_bp")), None)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    """The gap between the groups of least and most mean compute, over the mean step."""
    ranks, by_name = e.ranks, {r.rank: r for r in e.ranks}
    groups = e.replica_groups
    stages = []
    for group in groups:
        values = [v for n in group if (v := _computing(by_name[n])) is not None]
        if values:
            stages.append((_mean(values), group))
    if len(stages) < 2 or not ranks:
        return ()
    step = _mean([r.step_seconds for r in ranks])
    (low, light), (high, heavy) = min(stages), max(stages)
    ratio = (high - low) / step if step > 0 else 0.0
    if ratio <= t.pipeline_imbalance_ratio:
        return ()
    return (
        finding(
            ADVICE,
            KIND,
            f"data-parallel groups ({', '.join(heavy)}) compute {high * 1e3:.1f} ms per step, "
            f"({', '.join(light)}) {low * 1e3:.1f} ms: a gap of {ratio:.0%} of the step between "
            f"pipeline stages (threshold {t.pipeline_imbalance_ratio:.0%})",
            ratio,
            t.pipeline_imbalance_ratio,
        ),
    )
