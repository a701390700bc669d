"""What the text and HTML reports print, computed once: phases that partition the step, which
percentiles the steps support, link types counted once, and the ranks behind a figure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# re-exported: the reports import it from here, the exporter from the model
from npumon.daemon.model.profile import PERCENTILE_MIN_STEPS as PERCENTILE_MIN_STEPS
from npumon.daemon.model.profile import (
    AnalysisReport,
    LinkStat,
    NotJudged,
    PhaseStat,
    StepStats,
)

# torch_npu's step: Computing + Communication(Not Overlapped) + Free; Preparing is part of Free
# (the host preparing the step, device idle), so it is drawn out of it, never beside it
PHASE_TITLES = {
    "computing": "computing",
    "communication": "communication not overlapped",
    "preparing": "free: preparing",
    "free": "free: other",
    "fp_bp": "FP->BP",
    "iteration_refresh": "iteration refresh",
    "data_aug": "data aug bound",
    "other": "other (step minus the phases)",
    "communication_overlapped": "computing: communication overlapped",
}
_PARTS = {
    "computing": ("computing", "communication", "free"),
    "fp_bp": ("fp_bp", "iteration_refresh", "data_aug"),
}
SDMA_PARTS = ("HCCS", "PCIE", "SIO")  # communication.json's SDMA entry sums these link types


def partition(phases: Sequence[PhaseStat], step_seconds: float) -> tuple[tuple[str, float], ...]:
    """(phase, mean seconds per step) that add up to the step: preparing taken out of free, and
    whatever the phases leave of the step as `other` (graph mode: Iteration Time is more than
    FP->BP + refresh + data aug when the table leaves a gap unaccounted)."""
    seconds = {p.phase: p.seconds for p in phases}
    parts: list[tuple[str, float]] = []
    for name in next((v for k, v in _PARTS.items() if k in seconds), ()):
        if name not in seconds:
            continue
        value = seconds[name]
        if name == "free" and "preparing" in seconds:
            preparing = min(seconds["preparing"], value)
            parts.append(("preparing", preparing))
            value -= preparing
        parts.append((name, value))
    rest = step_seconds - sum(v for _, v in parts)
    if rest > 0.001 * step_seconds:
        parts.append(("other", rest))
    return tuple(parts)


@dataclass(frozen=True, slots=True)
class Overlap:
    """A rank's communication per step from its step table, seconds: what no computing hid (the
    communication phase) and what ran while the device computed (None: the table does not
    say)."""

    not_overlapped: float
    overlapped: float | None

    @property
    def total(self) -> float | None:
        return None if self.overlapped is None else self.not_overlapped + self.overlapped


def overlap(phases: Sequence[PhaseStat]) -> Overlap | None:
    """The communication split of a step's phases; None without a communication phase (graph
    mode, msprof, MindSpore)."""
    seconds = {p.phase: p.seconds for p in phases}
    if "communication" not in seconds:
        return None
    return Overlap(seconds["communication"], seconds.get("communication_overlapped"))


def percentiles(step: StepStats) -> tuple[tuple[int, float | None], ...]:
    """(q, seconds) of p50, p90, p99; None where there are fewer steps than q needs."""
    values = {50: step.p50_seconds, 90: step.p90_seconds, 99: step.p99_seconds}
    return tuple(
        (q, v if step.count >= PERCENTILE_MIN_STEPS[q] else None) for q, v in values.items()
    )


def distinct_links(links: Sequence[LinkStat]) -> tuple[LinkStat, ...]:
    """Link types with each transfer once: SDMA left out when HCCS, PCIE or SIO (which it sums)
    are there."""
    named = {link.link_type for link in links}
    if named & set(SDMA_PARTS):
        return tuple(link for link in links if link.link_type != "SDMA")
    return tuple(links)


def ranks_label(ranks: Sequence[str], how: str = "summed") -> str:
    """`rank0` alone, or `ranks rank0, rank2 (summed)`."""
    if not ranks:
        return "no rank"
    if len(ranks) == 1:
        return ranks[0]
    return f"ranks {', '.join(ranks)} ({how})"


def findings_scope(report: AnalysisReport) -> str:
    """Whose figures the findings quote, when the profile has several ranks: the step and its
    phases are the slowest rank's, operator shares the summed ranks'."""
    scope, ranks = report.scope, report.summary.ranks
    parts = []
    if scope.step_rank and len(ranks) > 1:
        parts.append(f"step and phase figures: {scope.step_rank}, the slowest rank")
    if len(scope.op_ranks) > 1:
        parts.append(f"operator figures: {ranks_label(scope.op_ranks)}")
    return "; ".join(parts)


def not_judged(entries: Sequence[NotJudged]) -> tuple[tuple[tuple[str, ...], str], ...]:
    """(rule kinds, reason): the rules withheld for one reason together, in the order given."""
    grouped: dict[str, list[str]] = {}
    for entry in entries:
        grouped.setdefault(entry.reason, []).append(entry.kind)
    return tuple((tuple(kinds), reason) for reason, kinds in grouped.items())
