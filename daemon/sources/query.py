"""The chip queries as values: what to read, of which chip, and who may answer.

``Kind`` is the one spelling of each query kind; a ``Query`` says what to read of which NPU
and chip and which model report that gives; a ``ChipBackend`` answers it: ``NpuSmi``
(``sources/npu_smi.py``, the CLI backend) or the DCMI backend (``sources/dcmi``, which asks an
``NpuSmi`` for what it does not serve). The tiers (``sources/chips.py``) only ever build
queries. ``Unsupported`` remembers which queries a chip does not offer.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, Protocol, TypeVar

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
from npumon.daemon.runner import CommandResult
from npumon.daemon.sources.wrapper import SourceFailure, SourceRun

R = TypeVar("R")
T = TypeVar("T")
# The largest real `npu-smi info` (16 chips, a process row per chip) is about 20 kB; past this
# the output is a driver looping, and keeping it would cost the daemon many times its size.
MAX_OUTPUT_BYTES = 1024 * 1024
# A per-NPU pass stops at the first of these: the next NPU would wait the same timeout.
ABORTS_A_PASS = frozenset({"timeout", "cancelled"})
HCCS_WINDOW_MS = 200  # the HCCS bandwidth's sampling window (npu-exporter's default)


class Kind(StrEnum):
    """The kinds of chip query, each spelled here once: npu-smi's name for it (`-m` for the
    mapping, `-t NAME` for the rest), "dcmi" for what only DCMI gives."""

    INFO = "info"
    MAPPING = "mapping"
    USAGES = "usages"
    COMMON = "common"
    ECC = "ecc"
    BOARD = "board"
    HEALTH = "health"
    MEMORY = "memory"
    HCCS = "hccs"
    HCCS_BW = "hccs-bw"
    PCIE_ERR = "pcie-err"
    SIO = "sio-info"
    DCMI = "dcmi"


@dataclass(frozen=True, slots=True)
class Query(Generic[R]):
    """One read: ``what`` (a ``Kind``) of NPU
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
    return Query(Kind.INFO, InfoTable)


def chip_map() -> Query[ChipMapping]:
    return Query(Kind.MAPPING, ChipMapping)


def usages(npu: int) -> Query[UsagesReport]:
    return Query(Kind.USAGES, UsagesReport, npu)


def common(npu: int) -> Query[CommonReport]:
    return Query(Kind.COMMON, CommonReport, npu)


def ecc(npu: int) -> Query[EccReport]:
    return Query(Kind.ECC, EccReport, npu)


def board_of(npu: int, chip: int | None = None) -> Query[BoardReport]:
    return Query(Kind.BOARD, BoardReport, npu, chip)


def health_of(npu: int, chip: int, *, by_npu: bool = False) -> Query[HealthReport]:
    return Query(Kind.HEALTH, HealthReport, npu, chip, by_npu)


def memory_of(npu: int, chip: int, *, by_npu: bool = False) -> Query[MemoryReport]:
    return Query(Kind.MEMORY, MemoryReport, npu, chip, by_npu)


def hccs(npu: int, chip: int, *, by_npu: bool = False) -> Query[HccsReport]:
    return Query(Kind.HCCS, HccsReport, npu, chip, by_npu)


def hccs_bandwidth(npu: int, chip: int, *, by_npu: bool = False) -> Query[HccsBandwidth]:
    return Query(Kind.HCCS_BW, HccsBandwidth, npu, chip, by_npu)


def pcie_errors(npu: int, chip: int, *, by_npu: bool = False) -> Query[ErrorCounts]:
    return Query(Kind.PCIE_ERR, ErrorCounts, npu, chip, by_npu)


def sio_errors(npu: int, chip: int, *, by_npu: bool = False) -> Query[ErrorCounts]:
    return Query(Kind.SIO, ErrorCounts, npu, chip, by_npu)


def dcmi_only(npu: int, chip: int) -> Query[ChipDcmi]:
    """What only DCMI gives of a chip (voltage, PCIe bandwidth, vNPUs): no npu-smi query."""
    return Query(Kind.DCMI, ChipDcmi, npu, chip)


class ChipBackend(Protocol):
    """Who answers the chip queries."""

    def ask(self, run: SourceRun, query: Query[R]) -> R:
        """The report for ``query``, its impossible values dropped (and counted on ``run``);
        or SourceFailure."""
        ...

    def offers(self, what: str) -> bool:
        """Whether this backend has an answer to queries of kind ``what`` at all."""
        ...

    def close(self) -> None:
        """Stop what the backend started (the DCMI helper), if anything."""
        ...


class Runner(Protocol):
    """run_command as npu-smi calls it."""

    def __call__(
        self, argv: Sequence[str], timeout: float, *, max_output_bytes: int = ...
    ) -> CommandResult: ...


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
