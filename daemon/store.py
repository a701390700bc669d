"""SnapshotStore: sources write pieces, a scrape reads one immutable NodeSnapshot (never waits)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from npumon.daemon.config import Throttle as ThrottleConfig
from npumon.daemon.model.npu_smi import (
    BoardReport,
    ChipCommon,
    ChipEcc,
    ChipMapping,
    ChipUsage,
    HealthReport,
    InfoTable,
    MemoryReport,
    TableChip,
)
from npumon.daemon.model.profile import ProfilingView
from npumon.daemon.model.snapshot import (
    EMPTY_SNAPSHOT,
    ChipId,
    ChipSnapshot,
    NodeIdentity,
    NodeSnapshot,
    SourceStatus,
)
from npumon.daemon.throttle import judge_throttle

V = TypeVar("V")


@dataclass
class _Pieces:
    """Latest result of every source, mutated only under the store's lock."""

    table: InfoTable | None = None
    usage: dict[ChipId, ChipUsage] = field(default_factory=dict)
    common: dict[ChipId, ChipCommon] = field(default_factory=dict)
    health: dict[ChipId, HealthReport] = field(default_factory=dict)
    ecc: dict[ChipId, ChipEcc] = field(default_factory=dict)
    memory: dict[ChipId, MemoryReport] = field(default_factory=dict)
    chip_board: dict[ChipId, BoardReport] = field(default_factory=dict)
    card_board: dict[int, BoardReport] = field(default_factory=dict)
    mapping: ChipMapping | None = None
    sources: dict[str, SourceStatus] = field(default_factory=dict)
    profiling: frozenset[ChipId] = frozenset()
    profiles: ProfilingView | None = None


def _drop_npu(pieces: dict[ChipId, V], npu: int) -> None:
    for key in [key for key in pieces if key[0] == npu]:
        del pieces[key]


class SnapshotStore:
    """Writers replace pieces under a lock and publish a new snapshot; readers take a reference."""

    def __init__(
        self,
        throttle: ThrottleConfig,
        *,
        max_processes_per_chip: int = 8,
        cann_version: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._throttle = throttle
        self._max_processes = max_processes_per_chip
        self._cann_version = cann_version
        self._clock = clock
        self._lock = threading.Lock()
        self._pieces = _Pieces()
        self._latest = EMPTY_SNAPSHOT

    def latest(self) -> NodeSnapshot:
        return self._latest  # a plain attribute read: atomic, never blocks on a writer

    def table(self) -> InfoTable | None:
        return self._pieces.table

    def mapping(self) -> ChipMapping | None:
        return self._pieces.mapping

    def set_table(self, table: InfoTable | None) -> None:
        """None after a failed poll: no chip is served from stale data."""
        with self._lock:
            self._pieces.table = table
            self._publish()

    def set_detail(
        self, npu: int, usage: Iterable[ChipUsage] | None, common: Iterable[ChipCommon] | None
    ) -> None:
        with self._lock:
            _drop_npu(self._pieces.usage, npu)
            _drop_npu(self._pieces.common, npu)
            self._pieces.usage.update({(npu, u.chip): u for u in usage or ()})
            self._pieces.common.update({(npu, c.chip): c for c in common or ()})
            self._publish()

    def set_health(self, chip: ChipId, report: HealthReport | None) -> None:
        with self._lock:
            self._set_or_drop(self._pieces.health, chip, report)
            self._publish()

    def set_ecc(self, npu: int, chips: Iterable[ChipEcc] | None) -> None:
        with self._lock:
            _drop_npu(self._pieces.ecc, npu)
            self._pieces.ecc.update({(npu, e.chip): e for e in chips or ()})
            self._publish()

    def set_memory(self, chip: ChipId, report: MemoryReport | None) -> None:
        with self._lock:
            self._set_or_drop(self._pieces.memory, chip, report)
            self._publish()

    def set_identity(
        self,
        mapping: ChipMapping | None,
        card_boards: dict[int, BoardReport],
        chip_boards: dict[ChipId, BoardReport],
    ) -> None:
        """Identity is slow-changing: keep the last known board data for chips not re-read."""
        with self._lock:
            if mapping is not None:
                self._pieces.mapping = mapping
            self._pieces.card_board.update(card_boards)
            self._pieces.chip_board.update(chip_boards)
            self._publish()

    def set_source(self, status: SourceStatus) -> None:
        with self._lock:
            self._pieces.sources[status.source] = status
            self._publish()

    def set_profiling(self, chips: frozenset[ChipId]) -> None:
        with self._lock:
            self._pieces.profiling = chips
            self._publish()

    def profiling(self) -> frozenset[ChipId]:
        return self._pieces.profiling

    def set_profiles(self, view: ProfilingView | None) -> None:
        """Profile summaries and capture self-metrics (rendered by exporters' profiles group)."""
        with self._lock:
            self._pieces.profiles = view
            self._publish()

    @staticmethod
    def _set_or_drop(pieces: dict[ChipId, V], chip: ChipId, value: V | None) -> None:
        if value is None:
            pieces.pop(chip, None)
        else:
            pieces[chip] = value

    def _publish(self) -> None:
        pieces = self._pieces
        table = pieces.table
        chips = tuple(self._chip(t) for t in table.chips) if table else ()
        node = NodeIdentity(
            npu_smi_version=table.npu_smi_version if table else None,
            driver_version=table.version if table else None,
            cann_version=self._cann_version,
        )
        sources = tuple(pieces.sources[name] for name in sorted(pieces.sources))
        self._latest = NodeSnapshot(
            taken_at=self._clock(),
            node=node,
            chips=chips,
            sources=sources,
            has_table=table is not None,
            profiling=pieces.profiles,
        )

    def _chip(self, table_chip: TableChip) -> ChipSnapshot:
        pieces = self._pieces
        key = (table_chip.npu, table_chip.chip)
        usage, common = pieces.usage.get(key), pieces.common.get(key)
        profiling = key in pieces.profiling
        mapped = None
        if pieces.mapping is not None:
            mapped = next((m for m in pieces.mapping.chips if (m.npu, m.chip) == key), None)
        processes = tuple(
            p for p in (pieces.table.processes if pieces.table else ())
            if (p.npu, p.chip if p.chip is not None else 0) == key
        )[: self._max_processes]
        return ChipSnapshot(
            npu=key[0],
            chip=key[1],
            table=table_chip,
            usage=usage,
            common=common,
            health=pieces.health.get(key),
            ecc=pieces.ecc.get(key),
            memory=pieces.memory.get(key),
            chip_board=pieces.chip_board.get(key),
            card_board=pieces.card_board.get(key[0]),
            mapping=mapped,
            processes=processes,
            throttle=judge_throttle(table_chip, usage, common, self._throttle, profiling),
            profiling_active=profiling,
        )
