"""Profile summaries (persisted, then rendered) and the profiling picture a scrape renders."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

PHASES = (
    "fp_bp",
    "iteration_refresh",
    "data_aug",
    "computing",
    "communication",
    "free",
    "preparing",
)
CORE_TYPES = ("ai_core", "ai_vector_core", "ai_cpu", "mix", "communication")
BOTTLENECK_KINDS = (
    "input_pipeline",
    "host_bound",
    "format_conversion",
    "ai_cpu_fallback",
    "communication",
    "compute_bound",
    "dynamic_shape",
    "small_ops",
)


@dataclass(frozen=True, slots=True)
class StepStats:
    """Step (or graph iteration) duration over the analysed steps, warm-up excluded."""

    count: int
    mean_seconds: float
    p50_seconds: float
    p90_seconds: float
    p99_seconds: float


@dataclass(frozen=True, slots=True)
class PhaseStat:
    """Mean time per step in one phase; ratio is that over the mean step time (None if unknown)."""

    phase: str
    seconds: float
    ratio: float | None


@dataclass(frozen=True, slots=True)
class OpShare:
    """Time of one (op type, core type) over all operator time; op_type `other` sums the rest."""

    op_type: str
    core_type: str
    seconds: float
    ratio: float
    count: int


@dataclass(frozen=True, slots=True)
class CoreShare:
    core_type: str
    seconds: float
    ratio: float


@dataclass(frozen=True, slots=True)
class RankBreakdown:
    """One rank's (or one device's) mean step and phases."""

    rank: str
    device_id: int | None
    steps: int
    step_seconds: float
    phases: tuple[PhaseStat, ...]


@dataclass(frozen=True, slots=True)
class RankSpread:
    """(max - min) of a phase across ranks over the mean step time; flagged above the threshold."""

    phase: str
    spread_ratio: float
    slowest_rank: str
    fastest_rank: str
    flagged: bool


@dataclass(frozen=True, slots=True)
class Bottleneck:
    kind: str
    detail: str
    advice: str
    value: float
    threshold: float


@dataclass(frozen=True, slots=True)
class ProfileSummary:
    """What one capture (or one directory on disk) says about a workload."""

    workload: str
    layout: str  # torch_npu, msprof, legacy, or several joined with "+"
    capture_time_seconds: float | None  # Unix time the capture ended, when known
    step: StepStats | None
    phases: tuple[PhaseStat, ...]
    op_total_seconds: float | None
    op_time_ratio: tuple[OpShare, ...]
    core_type_time_ratio: tuple[CoreShare, ...]
    ai_cpu_seconds: float | None  # AI CPU ops of at least Thresholds.ai_cpu_min_op_us
    ai_cpu_count: int | None
    format_conversion_seconds: float | None
    format_conversion_ratio: float | None
    dynamic_shape_op_count: int | None  # None when the table has no OP State column
    op_types_inferred: bool  # Level0 tables: op types guessed from kernel names
    ranks: tuple[RankBreakdown, ...]
    rank_spread: tuple[RankSpread, ...]
    bottlenecks: tuple[Bottleneck, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProfileSummary:
        step = data.get("step")
        return cls(
            workload=data["workload"],
            layout=data["layout"],
            capture_time_seconds=data.get("capture_time_seconds"),
            step=StepStats(**step) if step else None,
            phases=_phases(data.get("phases", ())),
            op_total_seconds=data.get("op_total_seconds"),
            op_time_ratio=tuple(OpShare(**o) for o in data.get("op_time_ratio", ())),
            core_type_time_ratio=tuple(
                CoreShare(**c) for c in data.get("core_type_time_ratio", ())
            ),
            ai_cpu_seconds=data.get("ai_cpu_seconds"),
            ai_cpu_count=data.get("ai_cpu_count"),
            format_conversion_seconds=data.get("format_conversion_seconds"),
            format_conversion_ratio=data.get("format_conversion_ratio"),
            dynamic_shape_op_count=data.get("dynamic_shape_op_count"),
            op_types_inferred=bool(data.get("op_types_inferred", False)),
            ranks=tuple(
                RankBreakdown(
                    rank=r["rank"],
                    device_id=r.get("device_id"),
                    steps=r["steps"],
                    step_seconds=r["step_seconds"],
                    phases=_phases(r.get("phases", ())),
                )
                for r in data.get("ranks", ())
            ),
            rank_spread=tuple(RankSpread(**s) for s in data.get("rank_spread", ())),
            bottlenecks=tuple(Bottleneck(**b) for b in data.get("bottlenecks", ())),
        )


def _phases(items: Any) -> tuple[PhaseStat, ...]:
    return tuple(PhaseStat(**p) for p in items)


@dataclass(frozen=True, slots=True)
class AnalysisReport:
    """A summary plus what was read and what could not be (one message per file problem)."""

    summary: ProfileSummary
    sources: tuple[str, ...]  # table files that were read
    problems: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary.to_dict(),
            "sources": list(self.sources),
            "problems": list(self.problems),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AnalysisReport:
        return cls(
            summary=ProfileSummary.from_dict(data["summary"]),
            sources=tuple(data.get("sources", ())),
            problems=tuple(data.get("problems", ())),
        )


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
