"""The immutable profiling picture a scrape renders: summaries, baselines, capture self-metrics."""

from __future__ import annotations

from dataclasses import dataclass

from npumon.daemon.profiling.summary import ProfileSummary

CAPTURE_RESULTS = (
    "ok",
    "timeout",
    "target_exited",
    "disk_quota",
    "failed",
    "skipped_busy",
    "skipped_not_attachable",
)


@dataclass(frozen=True, slots=True)
class WorkloadProfile:
    """What the collector shows for one workload (any part may be unknown)."""

    workload: str
    summary: ProfileSummary | None = None
    baseline_seconds: float | None = None  # median p99 over the rolling window
    last_success_timestamp: float | None = None
    capture_duration_seconds: float | None = None  # wall time of the last successful capture


@dataclass(frozen=True, slots=True)
class ProfilingView:
    """All workloads (sorted by name) plus capture counters since start, every result present."""

    workloads: tuple[WorkloadProfile, ...] = ()
    captures: tuple[tuple[str, int], ...] = tuple((r, 0) for r in CAPTURE_RESULTS)
    state_errors: tuple[tuple[str, int], ...] = ()  # (reason, count): corrupt, write_failed
