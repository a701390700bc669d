"""The chip queries as values, and npu-smi's answer to each.

A ``Query`` says what to read of which NPU and chip and which model report that gives; a
``ChipBackend`` answers it. ``NpuSmi`` (the CLI backend) holds, per query, the `npu-smi info`
arguments and the parser of their output; the DCMI backend (``sources/dcmi``) holds the library
calls and their conversion, and asks the ``NpuSmi`` it owns for what it does not serve. The
tiers (``sources/chips.py``) only ever build queries. ``Unsupported`` remembers which queries a
chip does not offer.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from npumon.daemon.model.chips import (
    BoardReport,
    ChipDcmi,
    ChipMapping,
    CommonReport,
    EccReport,
    HealthReport,
    InfoTable,
    MemoryReport,
    UsagesReport,
)
from npumon.daemon.model.network import ErrorCounts, HccsBandwidth, HccsReport
from npumon.daemon.parsers import board, detail, health, interconnect, mapping, plausible, table
from npumon.daemon.runner import CommandResult, resolve_command, run_command
from npumon.daemon.sources.wrapper import SourceFailure, SourceRun, check_result, parse_or_fail

R = TypeVar("R")
T = TypeVar("T")
# The largest real `npu-smi info` (16 chips, a process row per chip) is about 20 kB; past this
# the output is a driver looping, and keeping it would cost the daemon many times its size.
MAX_OUTPUT_BYTES = 1024 * 1024
# A per-NPU pass stops at the first of these: the next NPU would wait the same timeout.
ABORTS_A_PASS = frozenset({"timeout", "cancelled"})
HCCS_WINDOW_MS = 200  # the HCCS bandwidth's sampling window (npu-exporter's default)


@dataclass(frozen=True, slots=True)
class Query(Generic[R]):
    """One read: ``what`` (npu-smi's name for it, "dcmi" for what only DCMI gives) of NPU
    ``npu`` and chip ``chip`` (both None: the node's; chip None: every chip of the NPU), and
    the model report it gives. ``by_npu``: the chip is addressed through its NPU alone (a
    one-chip NPU, or the 950's npu-smi, which refuses `-c`)."""

    what: str
    report: type[R]
    npu: int | None = None
    chip: int | None = None
    by_npu: bool = False

    def of(self, found: object) -> R:
        """``found`` as this query's report: each backend's table maps a query to the parser
        or conversion of its report type, and this checks it did."""
        if not isinstance(found, self.report):
            raise TypeError(f"{self.what} gave {type(found).__name__}, not {self.report.__name__}")
        return found


def info() -> Query[InfoTable]:
    return Query("info", InfoTable)


def chip_map() -> Query[ChipMapping]:
    return Query("mapping", ChipMapping)


def usages(npu: int) -> Query[UsagesReport]:
    return Query("usages", UsagesReport, npu)


def common(npu: int) -> Query[CommonReport]:
    return Query("common", CommonReport, npu)


def ecc(npu: int) -> Query[EccReport]:
    return Query("ecc", EccReport, npu)


def board_of(npu: int, chip: int | None = None) -> Query[BoardReport]:
    return Query("board", BoardReport, npu, chip)


def health_of(npu: int, chip: int, *, by_npu: bool = False) -> Query[HealthReport]:
    return Query("health", HealthReport, npu, chip, by_npu)


def memory_of(npu: int, chip: int, *, by_npu: bool = False) -> Query[MemoryReport]:
    return Query("memory", MemoryReport, npu, chip, by_npu)


def hccs(npu: int, chip: int, *, by_npu: bool = False) -> Query[HccsReport]:
    return Query("hccs", HccsReport, npu, chip, by_npu)


def hccs_bandwidth(npu: int, chip: int, *, by_npu: bool = False) -> Query[HccsBandwidth]:
    return Query("hccs-bw", HccsBandwidth, npu, chip, by_npu)


def pcie_errors(npu: int, chip: int, *, by_npu: bool = False) -> Query[ErrorCounts]:
    return Query("pcie-err", ErrorCounts, npu, chip, by_npu)


def sio_errors(npu: int, chip: int, *, by_npu: bool = False) -> Query[ErrorCounts]:
    return Query("sio-info", ErrorCounts, npu, chip, by_npu)


def dcmi_only(npu: int, chip: int) -> Query[ChipDcmi]:
    """What only DCMI gives of a chip (voltage, PCIe bandwidth, vNPUs): no npu-smi query."""
    return Query("dcmi", ChipDcmi, npu, chip)


class ChipBackend(Protocol):
    """Who answers the chip queries."""

    def ask(self, run: SourceRun, query: Query[R]) -> R:
        """The report for ``query``, its impossible values dropped (and counted on ``run``);
        or SourceFailure."""
        ...

    def offers(self, what: str) -> bool:
        """Whether this backend has an answer to queries of kind ``what`` at all."""
        ...


class Runner(Protocol):
    """run_command as npu-smi calls it."""

    def __call__(
        self, argv: Sequence[str], timeout: float, *, max_output_bytes: int = ...
    ) -> CommandResult: ...


Args = Callable[[Query[Any]], tuple[str, ...]]
Parse = Callable[[str, Query[Any]], object]


def _npu(query: Query[Any]) -> tuple[str, ...]:
    return ("-i", str(query.npu))


def _chip(query: Query[Any]) -> tuple[str, ...]:
    """`-i N -c M`; `-i N` alone for the NPU's every chip, or a chip asked through its NPU."""
    if query.chip is None or query.by_npu:
        return _npu(query)
    return ("-i", str(query.npu), "-c", str(query.chip))


# query -> (npu-smi info's arguments, the parser of its output)
CLI: Mapping[str, tuple[Args, Parse]] = {
    "info": (lambda q: (), lambda text, q: table.parse_info(text)),
    "mapping": (lambda q: ("-m",), lambda text, q: mapping.parse_mapping(text)),
    "usages": (lambda q: ("-t", "usages", *_npu(q)), lambda text, q: detail.parse_usages(text)),
    "common": (lambda q: ("-t", "common", *_npu(q)), lambda text, q: detail.parse_common(text)),
    "ecc": (lambda q: ("-t", "ecc", *_npu(q)), lambda text, q: detail.parse_ecc(text)),
    "board": (lambda q: ("-t", "board", *_chip(q)), lambda text, q: board.parse_board(text)),
    "health": (lambda q: ("-t", "health", *_chip(q)), lambda text, q: health.parse_health(text)),
    "memory": (
        lambda q: ("-t", "memory", *_chip(q)),
        lambda text, q: detail.parse_memory(text, npu=q.npu, chip=q.chip),
    ),
    "hccs": (lambda q: ("-t", "hccs", *_chip(q)), lambda text, q: interconnect.parse_hccs(text)),
    # npu-smi refuses -t hccs-bw without a sampling window (-time, 1-1000 ms); the call blocks
    # for it
    "hccs-bw": (
        lambda q: ("-t", "hccs-bw", *_chip(q), "-time", str(HCCS_WINDOW_MS)),
        lambda text, q: interconnect.parse_hccs_bw(text),
    ),
    "pcie-err": (
        lambda q: ("-t", "pcie-err", *_chip(q)),
        lambda text, q: interconnect.parse_pcie_err(text),
    ),
    "sio-info": (
        lambda q: ("-t", "sio-info", *_chip(q)),
        lambda text, q: interconnect.parse_sio(text),
    ),
}


class NpuSmi:
    """The CLI backend: argv prefix + timeout; each query one `npu-smi info` call, parsed."""

    def __init__(self, command: Sequence[str], timeout: float, runner: Runner = run_command):
        self.command = resolve_command(command)
        self.timeout = timeout
        self._runner = runner

    def offers(self, what: str) -> bool:
        return what in CLI

    def ask(self, run: SourceRun, query: Query[R]) -> R:
        if query.what not in CLI:
            raise SourceFailure("not_supported", f"npu-smi has no query for {query.what}")
        args, parse = CLI[query.what]
        return query.of(self._call(run, lambda text: parse(text, query), args(query)))

    def _call(self, run: SourceRun, parse: Callable[[str], T], args: tuple[str, ...]) -> T:
        """`npu-smi info *args` parsed, its impossible values dropped (and counted on
        ``run``); or SourceFailure."""
        result = self._runner(
            (*self.command, "info", *args), self.timeout, max_output_bytes=MAX_OUTPUT_BYTES
        )
        parsed, rejected = plausible.screen(parse_or_fail(parse, check_result(result), result.argv))
        run.reject(rejected, result.argv)
        return parsed


class Unsupported:
    """Queries a chip or driver said it does not support, not asked again until `retry_after`.

    Without this a 310P (no ECC query) would keep its health source down forever; with it the
    refusal is counted once per retry period (reason="not_supported") and the source stays up:
    a query the hardware does not offer is a fact about the chip, not a failure.
    """

    def __init__(self, retry_after: float, monotonic: Callable[[], float]) -> None:
        self._retry_after = retry_after
        self._monotonic = monotonic
        self._until: dict[Hashable, float] = {}

    def attempt(self, run: SourceRun, call: Callable[[], T], key: Hashable) -> T | None:
        """``call()``, the query ``key`` names; None when it failed (recorded) or is known to
        be unsupported. A timeout is raised: the pass stops there rather than wait it out once
        per NPU."""
        if self._until.get(key, 0.0) > self._monotonic():
            return None
        try:
            return call()
        except SourceFailure as failure:
            if failure.reason in ABORTS_A_PASS:
                raise
            if failure.reason != "not_supported":
                run.record(failure)
                return None
            self._until[key] = self._monotonic() + self._retry_after
            run.refused(failure)
            return None
