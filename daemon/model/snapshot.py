"""The immutable picture of a node that a scrape renders: chips, node identity, source health."""

from __future__ import annotations

from dataclasses import dataclass

from npumon.daemon.model.npu_smi import (
    BoardReport,
    ChipCommon,
    ChipEcc,
    ChipUsage,
    HealthReport,
    MappedChip,
    MemoryReport,
    TableChip,
    TableProcess,
)
from npumon.daemon.model.profile import ProfilingView

ChipId = tuple[int, int]
"""(npu, chip): NPU ID and chip index inside the NPU, the identity of every per-chip series."""

HEALTH_STATES = ("ok", "warning", "alarm", "critical", "unknown")


def health_state(raw: str | None) -> str:
    """Map npu-smi's health text onto the `state` label values of npu_health_state."""
    text = (raw or "").strip().lower()
    return text if text in HEALTH_STATES[:4] else "unknown"


@dataclass(frozen=True, slots=True)
class Throttle:
    """Why a chip is clocked down under load (`reason` = thermal, power, unknown)."""

    throttled: bool
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ChipSnapshot:
    """Everything known about one chip (npu, chip), merged from all npu-smi tiers.

    ``table`` always comes from the latest successful `npu-smi info`; the other parts are the
    latest per-NPU detail for a chip that is still in that table (None until first read).
    """

    npu: int
    chip: int
    table: TableChip
    usage: ChipUsage | None = None
    common: ChipCommon | None = None
    health: HealthReport | None = None
    ecc: ChipEcc | None = None
    memory: MemoryReport | None = None
    chip_board: BoardReport | None = None  # -t board -i N -c M (vdie, chip name, firmware)
    card_board: BoardReport | None = None  # -t board -i N (serial, software version)
    mapping: MappedChip | None = None  # -m (logic id, phy id)
    processes: tuple[TableProcess, ...] = ()
    throttle: Throttle | None = None  # None when it cannot be judged (no frequency data)
    profiling_active: bool = False


@dataclass(frozen=True, slots=True)
class SourceStatus:
    """Self-observability of one source (`npumon_source_*{source=...}`)."""

    source: str
    up: bool
    duration_seconds: float | None
    last_success_timestamp: float | None
    exit_code: int | None
    failures: tuple[tuple[str, int], ...] = ()  # (reason, count), counters since start
    last_error: str | None = None


@dataclass(frozen=True, slots=True)
class NodeIdentity:
    npu_smi_version: str | None = None
    driver_version: str | None = None
    cann_version: str | None = None


@dataclass(frozen=True, slots=True)
class NodeSnapshot:
    """What `store.latest()` returns; never mutated after publish."""

    taken_at: float
    node: NodeIdentity
    chips: tuple[ChipSnapshot, ...]
    sources: tuple[SourceStatus, ...]
    has_table: bool = False  # False until the first successful `npu-smi info`
    profiling: ProfilingView | None = None  # None when profiling and ingest are both off


EMPTY_SNAPSHOT = NodeSnapshot(taken_at=0.0, node=NodeIdentity(), chips=(), sources=())
