"""What the daemon knows of a capture it took, beyond the profile: the job (its identity and what
named it), the slot an aligned capture started in (profiling/align.py), the global steps its ranks
captured, and the time each telemetry source's counters cover (the hardware join,
profiling/window.py). It travels to the analysis worker in the job, which adds the steps and
puts it in the report (<workload>.json, the page's first lines) and reports/<workload>.capture.json;
``npumon analyze`` has none, so its output has no such key."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from pydantic import ConfigDict, with_config

# What set each identity source (profiling/identity.py SOURCES), as the report's page says it
SOURCE_SAID = {
    "mindx_task_id": "MINDX_TASK_ID",
    "torchelastic_run_id": "TORCHELASTIC_RUN_ID",
    "pet_rdzv_id": "PET_RDZV_ID",
    "master_addr": "MASTER_ADDR",
    "pet_master_addr": "PET_MASTER_ADDR",
    "volcano": "Volcano's VC_*_HOSTS",
    "slurm": "SLURM_JOB_ID",
    "pod": "its pod",
    "target": "a configured target",
    "process": "the process name",
}


@with_config(ConfigDict(allow_inf_nan=False, strict=True))  # as model/profile.py's FINITE
@dataclass(frozen=True, slots=True)
class CaptureInfo:
    """One daemon capture's job, slot, global steps and telemetry coverage."""

    workload: str  # the job identity (profiling/identity.py), the workload label
    workload_source: str  # what named it: a key of SOURCE_SAID
    interval_seconds: float  # the workload's capture interval (its slot's period)
    slot: float | None = None  # an aligned capture's slot start, Unix seconds; None: not aligned
    first_step: int | None = None  # the first and last global step (step ID) of its ranks
    last_step: int | None = None
    steps: int | None = None  # distinct global steps its ranks captured (None: no step IDs)
    rank_steps: dict[str, tuple[int, int]] = field(default_factory=dict)  # rank: (first, last)
    # Unix seconds the job was profiled: msprof from its acknowledged start to the stop sent;
    # torch_npu config, the capture's start and stop
    window: tuple[float, float] | None = None
    # telemetry source: (from, to), the Unix times of the polls its counters were compared
    # between, the last before the capture started and the first after it stopped
    telemetry: dict[str, tuple[float, float]] = field(default_factory=dict)

    def with_steps(self, ranks: Iterable[tuple[str, Iterable[int | None]]]) -> CaptureInfo:
        """This capture with the global steps of ``ranks`` (rank, its captured step IDs)."""
        ids = {rank: {s for s in steps if s is not None} for rank, steps in ranks}
        per_rank = {rank: (min(found), max(found)) for rank, found in ids.items() if found}
        seen = set().union(*ids.values())
        return replace(
            self,
            first_step=min((first for first, _ in per_rank.values()), default=None),
            last_step=max((last for _, last in per_rank.values()), default=None),
            steps=len(seen) or None,
            rank_steps=per_rank,
        )
