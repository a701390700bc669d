"""The immutable picture of a node that a scrape renders: chip readings, node identity, sources."""

from __future__ import annotations

from dataclasses import dataclass

from npumon.daemon.model.chips import ChipId
from npumon.daemon.model.network_view import EMPTY_NETWORK, NetworkView
from npumon.daemon.model.profile import ProfilingView
from npumon.daemon.model.reading import ChipReading

__all__ = [
    "EMPTY_SNAPSHOT",
    "BackendInfo",
    "ChipId",
    "ChipReading",
    "NodeIdentity",
    "NodeSnapshot",
    "SourceStatus",
]


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
    # (field, count) since start: values outside physical bounds, dropped (parsers/plausible.py)
    rejected: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class BackendInfo:
    """Which backend serves the npu-smi table (`npumon_backend_info{backend,reason}`)."""

    backend: str  # "dcmi" or "cli"
    reason: str  # a short label: configured, cross_check_passed, library_not_found, ...


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
    chips: tuple[ChipReading, ...]
    sources: tuple[SourceStatus, ...]
    has_table: bool = False  # False until the first successful `npu-smi info`
    profiles: ProfilingView | None = None  # None when profiling and ingest are both off
    network: NetworkView = EMPTY_NETWORK  # NIC ports (hccn_tool), HCCS/PCIe/SIO (npu-smi)
    # since start, per kind (conflict, unmapped_device): attribution problems (model/attribution)
    attribution_problems: tuple[tuple[str, int], ...] = ()
    backend: BackendInfo | None = None  # None until the npu-smi table source has chosen


EMPTY_SNAPSHOT = NodeSnapshot(taken_at=0.0, node=NodeIdentity(), chips=(), sources=())
