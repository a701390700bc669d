"""npu-smi polling tiers: table (fast), per-NPU detail, health/ECC/memory, identity (slow)."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from npumon.daemon.containers import ContainerResolver
from npumon.daemon.model.npu_smi import BoardReport, InfoTable
from npumon.daemon.model.snapshot import ChipId
from npumon.daemon.parsers import board, detail, health, mapping, table
from npumon.daemon.runner import CommandResult, resolve_command, run_command
from npumon.daemon.sources.wrapper import (
    SourceFailure,
    SourceRun,
    SourceTracker,
    check_result,
    parse_or_fail,
)
from npumon.daemon.store import SnapshotStore

T = TypeVar("T")
Runner = Callable[[Sequence[str], float], CommandResult]
SOURCES = ("npu_smi_table", "npu_smi_detail", "npu_smi_health", "npu_smi_identity")


class NpuSmi:
    """argv prefix + timeout; `query` returns parsed output or raises SourceFailure."""

    def __init__(self, command: Sequence[str], timeout: float, runner: Runner = run_command):
        self.command = resolve_command(command)
        self.timeout = timeout
        self._runner = runner

    def query(self, parse: Callable[[str], T], *args: str) -> T:
        """`npu-smi info *args` parsed, or SourceFailure."""
        result = self._runner((*self.command, "info", *args), self.timeout)
        return parse_or_fail(parse, check_result(result), result.argv)


class Unsupported:
    """Queries a chip or driver said it does not support, not asked again until `retry_after`.

    Without this a 310P (no ECC query) would keep its health source down forever; with it the
    refusal is counted once per retry period (reason="not_supported") and the source stays up.
    """

    def __init__(self, retry_after: float, monotonic: Callable[[], float]) -> None:
        self._retry_after = retry_after
        self._monotonic = monotonic
        self._until: dict[tuple[str, ...], float] = {}

    def attempt(self, run: SourceRun, call: Callable[[], T], *args: str) -> T | None:
        if self._until.get(args, 0.0) > self._monotonic():
            return None
        try:
            return call()
        except SourceFailure as failure:
            if failure.reason == "not_supported":
                self._until[args] = self._monotonic() + self._retry_after
            run.record(failure)
            return None


def _chips(table_result: InfoTable | None) -> list[ChipId]:
    return [(c.npu, c.chip) for c in table_result.chips] if table_result else []


def _npus(table_result: InfoTable | None) -> list[int]:
    return sorted({npu for npu, _ in _chips(table_result)})


class NpuSmiSources:
    """The four npu-smi sources; each method is one scheduler job (never run concurrently)."""

    def __init__(
        self,
        npu_smi: NpuSmi,
        store: SnapshotStore,
        *,
        health_interval: float,
        retry_unsupported_after: float = 3600.0,
        containers: ContainerResolver | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._smi = npu_smi
        self._store = store
        self._health_interval = health_interval
        self._monotonic = monotonic
        self._last_full_health: float | None = None
        self._identity_npus: set[int] = set()
        self._unsupported = Unsupported(retry_unsupported_after, monotonic)
        self._containers = containers or ContainerResolver()
        self._busy = {name: threading.Lock() for name in SOURCES}
        self.trackers = {
            name: SourceTracker(name, store.set_source, clock, monotonic) for name in SOURCES
        }

    def poll_table(self) -> None:
        self._run("npu_smi_table", self._table)

    def poll_detail(self) -> None:
        self._run("npu_smi_detail", self._detail)

    def poll_health(self) -> None:
        self._run("npu_smi_health", self._health)

    def poll_identity(self) -> None:
        self._run("npu_smi_identity", self._identity)

    def _ask(self, run: SourceRun, parse: Callable[[str], T], *args: str) -> T | None:
        """One optional query of a multi-call source, skipped while known to be unsupported."""
        return self._unsupported.attempt(run, lambda: self._smi.query(parse, *args), *args)

    def _run(self, name: str, body: Callable[[SourceRun], None]) -> None:
        # At most one call of a kind in flight: a run that finds its source busy is skipped.
        lock = self._busy[name]
        if not lock.acquire(blocking=False):
            return
        try:
            self.trackers[name].run(body)
        finally:
            lock.release()

    def poll_all(self) -> None:
        """Every source once, in dependency order (for `collect --once` and start-up)."""
        self.poll_table()
        self.poll_identity()
        self.poll_detail()
        self.poll_health()

    def _table(self, run: SourceRun) -> None:
        try:
            result = self._smi.query(table.parse_info)
        except SourceFailure:
            self._store.set_table(None)
            raise
        self._store.set_table(self._containers.label(result))
        missing = sorted(self._store_mapping_chips() - set(_chips(result)))
        if missing:
            run.record(SourceFailure(
                "chip_missing",
                f"chips (npu, chip) {missing} listed by 'npu-smi info -m' are missing from "
                "'npu-smi info'; check lspci and dmesg for a card that fell off the bus",
            ))
        if not self._identity_npus.issuperset(_npus(result)):
            self.poll_identity()  # a chip appeared: learn who it is now, not in an hour

    def _store_mapping_chips(self) -> set[ChipId]:
        mapping_result = self._store.mapping()
        return {(m.npu, m.chip) for m in mapping_result.chips} if mapping_result else set()

    def _detail(self, run: SourceRun) -> None:
        for npu in _npus(self._store.table()):
            usage = self._ask(run, detail.parse_usages, "-t", "usages", "-i", str(npu))
            common = self._ask(run, detail.parse_common, "-t", "common", "-i", str(npu))
            self._store.set_detail(
                npu, usage.chips if usage else None, common.chips if common else None
            )

    def _health(self, run: SourceRun) -> None:
        current = self._store.table()
        now = self._monotonic()
        last = self._last_full_health
        full = last is None or now - last >= self._health_interval
        due = [
            (c.npu, c.chip) for c in (current.chips if current else ())
            if full or (c.health or "").upper() != "OK"
        ]
        for npu, chip in due:
            report = self._ask(
                run, health.parse_health, "-t", "health", "-i", str(npu), "-c", str(chip)
            )
            self._store.set_health((npu, chip), report)
        if full:
            self._last_full_health = now
            self._ecc_and_memory(run, _chips(current))

    def _ecc_and_memory(self, run: SourceRun, chips: list[ChipId]) -> None:
        for npu in sorted({n for n, _ in chips}):
            ecc = self._ask(run, detail.parse_ecc, "-t", "ecc", "-i", str(npu))
            self._store.set_ecc(npu, ecc.chips if ecc else None)
        for npu, chip in chips:
            parse = functools.partial(detail.parse_memory, npu=npu, chip=chip)
            memory = self._ask(run, parse, "-t", "memory", "-i", str(npu), "-c", str(chip))
            self._store.set_memory((npu, chip), memory)

    def _identity(self, run: SourceRun) -> None:
        chip_map = self._ask(run, mapping.parse_mapping, "-m")
        chips = _chips(self._store.table())
        cards: dict[int, BoardReport] = {}
        per_chip: dict[ChipId, BoardReport] = {}
        for npu in sorted({n for n, _ in chips}):
            card = self._ask(run, board.parse_board, "-t", "board", "-i", str(npu))
            if card is not None:
                cards[npu] = card
        for npu, chip in chips:
            found = self._ask(
                run, board.parse_board, "-t", "board", "-i", str(npu), "-c", str(chip)
            )
            if found is not None:
                per_chip[(npu, chip)] = found
        self._identity_npus = {n for n, _ in chips}
        self._store.set_identity(chip_map, cards, per_chip)
