"""What holds a job back, answered first: the findings by the time they cost per step, the
largest first, and the causes behind a wait (a rank waiting in communication points at the rank
it waits for and what that rank spends its time on; a pipeline-stage gap at the stages).

A finding's size is its own ``size`` (seconds per step, share of the step, how it was computed)
when the rules give one; otherwise, for the rules whose value is a share of the step, that share
times the step, and unknown for the others (their value is a share of operator time)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from npumon.daemon.analysis.figures import partition
from npumon.daemon.model.profile import AnalysisReport, Bottleneck, RankBreakdown

# rules whose value is a share of the (slowest rank's or mean) step
STEP_SHARE_KINDS = frozenset(
    {
        "communication",
        "host_bound",
        "input_pipeline",
        "slow_preparing",
        "slow_rank",
        "pipeline_imbalance",
    }
)


@dataclass(frozen=True, slots=True)
class Sized:
    finding: Bottleneck
    seconds_per_step: float | None
    share_of_step: float | None
    how: str


@dataclass(frozen=True, slots=True)
class Wait:
    """A rank waiting in communication for another one that reaches the collectives late."""

    waiting: str
    waiting_seconds: float  # its communication not overlapped per step
    late: str
    late_seconds: float
    why_phase: str | None  # the phase where the late rank spends the most more than the waiter
    why_seconds: float


def _field(size: Any, name: str) -> Any:
    if isinstance(size, Mapping):
        return size.get(name)
    return getattr(size, name, None)


def sized(report: AnalysisReport) -> list[Sized]:
    """The findings with their time per step, the largest first; unknown sizes last, in rule
    order."""
    step = report.summary.step
    mean = step.mean_seconds if step is not None else None
    out = []
    for b in report.summary.bottlenecks:
        size = getattr(b, "size", None)
        if size is not None:
            seconds, share = _field(size, "seconds_per_step"), _field(size, "share_of_step")
            how = _field(size, "how") or ""
            if seconds is None and share is not None and mean:
                seconds = share * mean
            out.append(Sized(b, seconds, share, how))
        elif b.kind in STEP_SHARE_KINDS and mean:
            how = "the rule's share of the step times the mean step"
            out.append(Sized(b, b.value * mean, b.value, how))
        else:
            out.append(Sized(b, None, None, "not estimated: the rule measures operator time"))
    return _by_size(out)


def _by_size(items: Sequence[Sized]) -> list[Sized]:
    known = sorted(
        (s for s in items if s.seconds_per_step is not None),
        key=lambda s: s.seconds_per_step or 0.0,
        reverse=True,
    )
    return known + [s for s in items if s.seconds_per_step is None]


def _phase(rank: RankBreakdown, name: str) -> float | None:
    return next((p.seconds for p in rank.phases if p.phase == name), None)


def wait(ranks: Sequence[RankBreakdown]) -> Wait | None:
    """The rank that waits longest in communication not overlapped and the one that waits least
    (the others wait for it), with the phase where the late one spends the most more time."""
    timed = [(r, c) for r in ranks if (c := _phase(r, "communication")) is not None]
    if len(timed) < 2:
        return None
    waiting, w_comm = max(timed, key=lambda x: x[1])
    late, l_comm = min(timed, key=lambda x: x[1])
    if waiting.rank == late.rank or w_comm <= l_comm:
        return None
    mine = dict(partition(late.phases, late.step_seconds))
    theirs = dict(partition(waiting.phases, waiting.step_seconds))
    more = [
        (name, seconds - theirs.get(name, 0.0))
        for name, seconds in mine.items()
        if name != "communication"
    ]
    why, gap = max(more, key=lambda x: x[1], default=(None, 0.0))
    return Wait(waiting.rank, w_comm, late.rank, l_comm, why if gap > 0 else None, max(gap, 0.0))


def reference_ratio(report: AnalysisReport, baseline_seconds: float | None) -> float | None:
    """This capture's median step over the reference (the workload's baseline median step) - 1."""
    step = report.summary.step
    if step is None or not baseline_seconds:
        return None
    return step.p50_seconds / baseline_seconds - 1
