"""The chip polling tiers: table (fast), per-NPU detail, health/ECC/memory, identity (slow).

Each tier asks its backend (npu-smi, or DCMI with npu-smi behind it) for query values, keeps its
own last results and publishes all tiers' latest once per run. The sources keep npu-smi's names
(`npumon_source_up{source="npu_smi_table"}`, ...) whichever backend serves them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

from npumon.daemon.containers import ContainerResolver
from npumon.daemon.model.chips import (
    BoardReport,
    ChipCommon,
    ChipDcmi,
    ChipEcc,
    ChipMapping,
    ChipResults,
    ChipUsage,
    HealthReport,
    InfoTable,
    MemoryReport,
)
from npumon.daemon.model.network import ChipInterconnect
from npumon.daemon.model.snapshot import ChipId, SourceStatus
from npumon.daemon.sources import query
from npumon.daemon.sources.interconnect import poll_interconnect
from npumon.daemon.sources.query import ChipBackend, Query, Runner, Unsupported
from npumon.daemon.sources.wrapper import SourceFailure, SourceRun, SourceTracker

__all__ = ["SOURCES", "ChipBackend", "ChipSources", "Publish", "Runner"]

T = TypeVar("T")
SOURCES = ("npu_smi_table", "npu_smi_detail", "npu_smi_health", "npu_smi_identity")


def _chips(table_result: InfoTable | None) -> list[ChipId]:
    return [(c.npu, c.chip) for c in table_result.chips] if table_result else []


def _npus(table_result: InfoTable | None) -> list[int]:
    return sorted({npu for npu, _ in _chips(table_result)})


def _by_npu(table_result: InfoTable | None) -> bool:
    """Whether chips are asked through their NPU alone: the 950's npu-smi refuses `-c`."""
    return table_result is not None and table_result.one_chip_npus


Publish = Callable[[ChipResults, SourceStatus], None]


class Ask(Protocol):
    """One optional query of a multi-call source: None while known to be unsupported."""

    def __call__(self, run: SourceRun, asked: Query[T]) -> T | None: ...


class ChipSources:
    """The four chip sources; each method is one scheduler job (never run concurrently).

    Each tier writes only its own attributes; ``_publish`` hands all of them, with the run's
    status, to the store in one call. ``identity_due`` asks for an identity run now (the
    scheduler's job) when the table shows an NPU that identity has not read yet.
    """

    def __init__(
        self,
        backend: ChipBackend,
        publish: Publish,
        *,
        health_interval: float,
        retry_unsupported_after: float = 3600.0,
        containers: ContainerResolver | None = None,
        identity_due: Callable[[], None] = lambda: None,
        initial: ChipResults | None = None,
        busy: dict[str, threading.Lock] | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._backend = backend
        self._publish_results = publish
        self._health_interval = health_interval
        self._monotonic = monotonic
        self._last_full_health: float | None = None
        self._unsupported = Unsupported(retry_unsupported_after, monotonic)
        self._containers = containers or ContainerResolver()
        self.identity_due = identity_due
        # one lock per kind, shared with the agent a reload replaces (``busy``): its calls
        # still in flight keep this one's of the same kind from starting beside them
        self.busy = busy if busy is not None else {name: threading.Lock() for name in SOURCES}
        self._publish_lock = threading.Lock()
        self.trackers = {name: SourceTracker(name, clock, monotonic) for name in SOURCES}
        # the last results, each written only by its own tier (a reload starts from the old ones)
        start = initial or ChipResults()
        self._table: InfoTable | None = start.table
        self._usage: dict[ChipId, ChipUsage] = dict(start.usage)
        self._common: dict[ChipId, ChipCommon] = dict(start.common)
        self._health: dict[ChipId, HealthReport] = dict(start.health)
        self._ecc: dict[ChipId, ChipEcc] = dict(start.ecc)
        self._memory: dict[ChipId, MemoryReport] = dict(start.memory)
        self._interconnect: dict[ChipId, ChipInterconnect] = dict(start.interconnect)
        self._dcmi: dict[ChipId, ChipDcmi] = dict(start.dcmi)
        self._identity = Identity(start)
        self._presence = Presence(start.table)

    def poll_table(self) -> None:
        self._run("npu_smi_table", self._poll_table)

    def poll_detail(self) -> None:
        self._run("npu_smi_detail", self._poll_detail)

    def poll_health(self) -> None:
        self._run("npu_smi_health", self._poll_health)

    def poll_identity(self) -> None:
        self._run("npu_smi_identity", self._poll_identity)

    def poll_all(self) -> None:
        """Every source once, in dependency order (for `collect --once` and start-up)."""
        self.poll_table()
        self.poll_identity()
        self.poll_detail()
        self.poll_health()

    def _ask(self, run: SourceRun, asked: Query[T]) -> T | None:
        """One optional query of a multi-call source, skipped while known to be unsupported."""
        return self._unsupported.attempt(run, lambda: self._backend.ask(run, asked), asked)

    def _run(self, name: str, body: Callable[[SourceRun], None]) -> None:
        # At most one call of a kind in flight: a run that finds its source busy is skipped.
        lock = self.busy[name]
        if not lock.acquire(blocking=False):
            return
        try:
            status = self.trackers[name].run(body)
            self._publish(status)
        finally:
            lock.release()

    def results(self) -> ChipResults:
        """Every tier's latest result, as the next publish would send them."""
        return ChipResults(
            table=self._table,
            usage=self._usage,
            common=self._common,
            health=self._health,
            ecc=self._ecc,
            memory=self._memory,
            chip_board=self._identity.chip_board,
            card_board=self._identity.card_board,
            mapping=self._identity.mapping,
            interconnect=self._interconnect,
            dcmi=self._dcmi,
            identity_pending=frozenset(set(_npus(self._table)) - self._identity.tried),
        )

    def _publish(self, status: SourceStatus) -> None:
        # Under one lock, so a slower tier never publishes an older picture over a newer one.
        with self._publish_lock:
            self._publish_results(self.results(), status)

    def _poll_table(self, run: SourceRun) -> None:
        try:
            result = self._backend.ask(run, query.info())
            if result.cut_short is not None:
                raise SourceFailure(
                    "truncated",
                    f"'npu-smi info' output ended early ({result.cut_short}): the chips after "
                    "the cut are unknown, so none is served; is its output being cut?",
                )
        except SourceFailure:
            self._table = None  # no chip is served from stale data
            raise
        self._table = self._containers.label(result)
        missing = self._presence.missing(result, self._identity.mapped())
        for failure in _table_failures(result, missing):
            run.record(failure)
        if not self._identity.npus.issuperset(_npus(result)):
            self.identity_due()  # a chip appeared: learn who it is now, not in an hour

    def _poll_detail(self, run: SourceRun) -> None:
        usages: dict[ChipId, ChipUsage] = {}
        commons: dict[ChipId, ChipCommon] = {}
        try:
            for npu in _npus(self._table):
                usage = self._ask(run, query.usages(npu))
                usages.update({(npu, u.chip): u for u in usage.chips} if usage else {})
                common = self._ask(run, query.common(npu))
                commons.update({(npu, c.chip): c for c in common.chips} if common else {})
        finally:  # an aborted pass keeps what it read, and nothing older
            self._usage, self._common = usages, commons

    def _poll_health(self, run: SourceRun) -> None:
        current = self._table
        now = self._monotonic()
        last = self._last_full_health
        full = last is None or now - last >= self._health_interval
        due = [
            (c.npu, c.chip)
            for c in (current.chips if current else ())
            if full or (c.health or "").upper() != "OK"
        ]
        kept = set(_chips(current)) - set(due)  # read by an earlier pass, not due now
        reports = {chip: r for chip, r in self._health.items() if chip in kept}
        try:
            for npu, chip in due:
                report = self._ask(run, query.health_of(npu, chip, by_npu=_by_npu(current)))
                if report is not None:
                    reports[(npu, chip)] = report
        except SourceFailure:
            if full:  # this pass was to re-read them: the old ones are no longer current
                self._ecc, self._memory, self._interconnect, self._dcmi = {}, {}, {}, {}
            raise
        finally:
            self._health = reports
        if full:
            self._last_full_health = now
            # first: a timeout below ends the pass, and DCMI's own failures never raise
            self._dcmi = self._dcmi_only(run, _chips(current))
            try:
                self._ecc_and_memory(run, _chips(current))
            except SourceFailure:
                self._interconnect = {}  # this pass was to re-read them: no longer current
                raise
            self._links(run, _chips(current))

    def _dcmi_only(self, run: SourceRun, chips: list[ChipId]) -> dict[ChipId, ChipDcmi]:
        """What only DCMI gives, where the backend has it (its own failures never raise)."""
        if not self._backend.offers(query.Kind.DCMI):
            return {}
        found = {key: self._backend.ask(run, query.dcmi_only(*key)) for key in chips}
        return {key: reading for key, reading in found.items() if reading != ChipDcmi()}

    def _links(self, run: SourceRun, chips: list[ChipId]) -> None:
        links: dict[ChipId, ChipInterconnect] = {}
        try:
            poll_interconnect(self._ask, run, chips, links, chip_option=not _by_npu(self._table))
        finally:  # an aborted pass keeps what it read, and nothing older
            self._interconnect = links

    def _ecc_and_memory(self, run: SourceRun, chips: list[ChipId]) -> None:
        eccs: dict[ChipId, ChipEcc] = {}
        memories: dict[ChipId, MemoryReport] = {}
        try:
            for npu in sorted({n for n, _ in chips}):
                ecc = self._ask(run, query.ecc(npu))
                eccs.update({(npu, e.chip): e for e in ecc.chips} if ecc else {})
            for npu, chip in chips:
                asked = query.memory_of(npu, chip, by_npu=_by_npu(self._table))
                memory = self._ask(run, asked)
                if memory is not None:
                    memories[(npu, chip)] = memory
        finally:
            self._ecc, self._memory = eccs, memories

    def _poll_identity(self, run: SourceRun) -> None:
        self._identity.poll(run, self._ask, self._table)


def _table_failures(result: InfoTable, missing: list[ChipId]) -> list[SourceFailure]:
    """What a whole table says is wrong, each recorded on the run (the table is still served):
    a process list cut short, chips whose heartbeat is lost, chips ``missing``."""
    found = []
    if result.processes_cut is not None:
        found.append(
            SourceFailure(
                "truncated",
                f"'npu-smi info' process list was cut ({result.processes_cut}): every chip is "
                "served, but no process of this poll; is its output being cut?",
            )
        )
    if result.lost:
        found.append(
            SourceFailure(
                "chip_missing",
                f"chips (npu, chip) {sorted(result.lost)} lost their heartbeat: npu-smi "
                "lists them with every reading zeroed (served as npu_health_state "
                "heartbeat_lost, without readings); check dmesg "
                "and 'npu-smi info -t health -i N' for error code 40F84E00",
            )
        )
    if missing:
        found.append(
            SourceFailure(
                "chip_missing",
                f"chips (npu, chip) {missing} listed by 'npu-smi info -m' or by two polls "
                "in a row are missing from 'npu-smi info'; check lspci and dmesg for a card "
                "that fell off the bus (npumon expects them until it restarts)",
            )
        )
    return found


class Presence:
    """Every chip two whole tables in a row have listed since start: a chip that leaves is
    missed even where -m gives nothing (a card that falls off the bus does not come back by
    itself), and one garbled NPU number is not expected for ever."""

    def __init__(self, table: InfoTable | None) -> None:
        self._seen: set[ChipId] = set(_chips(table))
        self._listed: set[ChipId] = set(self._seen)  # by the last whole table

    def missing(self, result: InfoTable, mapped: set[ChipId]) -> list[ChipId]:
        """The chips ``mapped`` (`-m`) or seen that ``result`` lacks; a chip whose heartbeat is
        lost is still there."""
        present = set(_chips(result)) | set(result.lost)
        missing = sorted((mapped | self._seen) - present)
        self._seen |= present & self._listed
        self._listed = present
        return missing


class Identity:
    """The identity tier's results (`-m` and the boards) and which NPUs it has read or tried."""

    def __init__(self, start: ChipResults) -> None:
        self.mapping: ChipMapping | None = start.mapping
        self.card_board: dict[int, BoardReport] = dict(start.card_board)
        self.chip_board: dict[ChipId, BoardReport] = dict(start.chip_board)
        self.npus: set[int] = {npu for npu, _ in start.chip_board} | set(start.card_board)
        # NPUs an identity pass has tried, read or not: a failed pass does not hold them back
        self.tried: set[int] = set(self.npus) | (set(_npus(start.table)) - start.identity_pending)
        self._mapping_before_table = False  # -m read by a run that had no table yet

    def mapped(self) -> set[ChipId]:
        """The chips `-m` listed (none before it was read)."""
        return {(m.npu, m.chip) for m in self.mapping.chips} if self.mapping else set()

    def poll(self, run: SourceRun, ask: Ask, table: InfoTable | None) -> None:
        """Identity is slow-changing: keep the last known values for what is not re-read (also
        when a timeout stops the pass: a serial number does not go stale). A run before the
        first table reads `-m` alone (the table checks its chips against it); the run the
        table's arrival then asks for (``identity_due``) reads the boards without reading `-m`
        again, so a start whose table is slower than identity's first slot asks it once."""
        chips = _chips(table)
        if self._mapping_before_table:
            self._mapping_before_table = False
        else:
            chip_map = ask(run, query.chip_map())
            self.mapping = chip_map or self.mapping
            self._mapping_before_table = chip_map is not None and not chips
        cards = dict(self.card_board)
        per_chip = dict(self.chip_board)
        try:
            for npu in sorted({n for n, _ in chips}):
                card = ask(run, query.board_of(npu))
                if card is not None:
                    cards[npu] = card
            for npu, chip in chips:
                if _by_npu(table):
                    # no `-c` there: the card-level report is the one chip's
                    if npu in cards:
                        per_chip[(npu, chip)] = cards[npu]
                    continue
                found = ask(run, query.board_of(npu, chip))
                if found is not None:
                    per_chip[(npu, chip)] = found
            self.npus = {n for n, _ in chips}
        finally:
            self.card_board, self.chip_board = cards, per_chip
            self.tried |= {n for n, _ in chips}
