"""The DCMI reads of each query kind: which calls on which chips, converted into which report.

``DETAIL``: kind -> the calls per chip, their conversion (``readings``) and how a query of
that kind addresses its chips; ``Reader`` makes them through the helper and returns the
query's report, or None where npu-smi answers it instead; a failure is raised
(``HelperFailure``, ``DcmiRefusal``). It knows no mode and no fallback: whether its answer is
served, checked or filled from npu-smi's is ``serving``'s choice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, NamedTuple

from npumon.daemon.model.chips import ChipDcmi, CommonReport, EccReport, InfoTable, UsagesReport
from npumon.daemon.parsers import plausible
from npumon.daemon.sources.dcmi.client import Call, DcmiChip, DcmiHelper, Hello
from npumon.daemon.sources.dcmi.readings import (
    COMMON_CALLS,
    DCMI_ONLY_CALLS,
    ECC_CALLS,
    HCCS_BW_CALLS,
    HCCS_CALLS,
    HEALTH_CALLS,
    MEMORY_CALLS,
    PCIE_ERROR_CALLS,
    SIO_CALLS,
    TABLE_CALLS,
    USAGES_CALLS,
    DcmiRefusal,
    Values,
    calls_for,
    chip_common,
    chip_dcmi,
    chip_ecc,
    chip_usage,
    collect,
    hccs_bandwidth,
    hccs_report,
    health_report,
    info_table,
    memory_report,
    pcie_errors,
    reads_pcie_errors,
    sio_errors,
)
from npumon.daemon.sources.query import Kind, Query
from npumon.daemon.sources.wrapper import SourceRun

Build = Callable[[int, Sequence[DcmiChip], Mapping[DcmiChip, Values]], object | None]


class Address(Enum):
    """Which chips a query of a kind DCMI answers names."""

    NPU = "npu"  # every chip of an NPU (`-i N`)
    CHIP = "chip"  # one chip (`-i N -c M`); one asked through its NPU (the 950's) is npu-smi's
    EITHER = "either"  # one chip, or a one-chip NPU (`-i N`)


class Reads(NamedTuple):
    """A kind's DCMI read: the calls per chip, their conversion into the query's report (None:
    the value is absent and npu-smi serves the whole query), the chips it addresses, and
    whether one function set fills the report whole (no per-field fill from npu-smi)."""

    calls: tuple[tuple[str, int], ...]
    build: Build
    address: Address
    whole: bool = False


def _usages(npu: int, chips: Sequence[DcmiChip], values: Mapping[DcmiChip, Values]) -> object:
    return UsagesReport(npu, tuple(chip_usage(c, values[c]) for c in chips))


def _common(npu: int, chips: Sequence[DcmiChip], values: Mapping[DcmiChip, Values]) -> object:
    return CommonReport(npu, tuple(chip_common(c, values[c]) for c in chips))


def _ecc(npu: int, chips: Sequence[DcmiChip], values: Mapping[DcmiChip, Values]) -> object:
    return EccReport(npu, tuple(chip_ecc(c, values[c]) for c in chips))


def _chip(convert: Callable[[DcmiChip, Values], object | None]) -> Build:
    """The conversion of a one-chip query's report from its chip's values."""
    return lambda npu, chips, values: convert(chips[0], values[chips[0]])


def _values(convert: Callable[[Values], object | None]) -> Build:
    return lambda npu, chips, values: convert(values[chips[0]])


DETAIL: Mapping[str, Reads] = {
    Kind.USAGES: Reads(USAGES_CALLS, _usages, Address.NPU),
    Kind.COMMON: Reads(COMMON_CALLS, _common, Address.NPU),
    Kind.ECC: Reads(ECC_CALLS, _ecc, Address.NPU),
    Kind.HEALTH: Reads(HEALTH_CALLS, _chip(health_report), Address.CHIP),
    Kind.MEMORY: Reads(MEMORY_CALLS, _chip(memory_report), Address.CHIP),
    # the interconnect queries: None (the value is absent: -8255, missing, -8002) has npu-smi
    # serve the whole query
    Kind.HCCS: Reads(HCCS_CALLS, _values(hccs_report), Address.CHIP, whole=True),
    Kind.HCCS_BW: Reads(HCCS_BW_CALLS, _values(hccs_bandwidth), Address.CHIP, whole=True),
    Kind.PCIE_ERR: Reads(PCIE_ERROR_CALLS, _values(pcie_errors), Address.EITHER, whole=True),
    Kind.SIO: Reads(SIO_CALLS, _values(sio_errors), Address.EITHER, whole=True),
}
INTERCONNECT = frozenset(kind for kind, reads in DETAIL.items() if reads.whole)
# every kind whose answer DCMI fills per function (the table and the detail queries)
FILLED_KINDS = (Kind.INFO, *DETAIL)
Detail = tuple[str, int, int | None]  # (query, NPU, chip), chip None: the NPU's


def addressed(query: Query[Any]) -> Detail | None:
    """(query, NPU, chip) of a query DCMI answers: usages, common and ecc of an NPU; health,
    memory and the HCCS ones of a chip it addresses (not of one asked through its NPU, as on
    the 950); PCIe and SIO errors of a chip or of a one-chip NPU (chip None). None: npu-smi
    answers it."""
    if query.what not in DETAIL or query.npu is None:
        return None
    address = DETAIL[query.what].address
    if address is Address.EITHER:
        return query.what, query.npu, None if query.by_npu else query.chip
    if address is Address.CHIP:
        if query.chip is None or query.by_npu:
            return None
        return query.what, query.npu, query.chip
    return (query.what, query.npu, None) if query.chip is None else None


def process_name(proc_root: Path) -> Callable[[int], str | None]:
    """The Name: of /proc/<pid>/status, as npu-smi shows it; None when it cannot be read."""

    def name_of(pid: int) -> str | None:
        try:
            text = (proc_root / str(pid) / "status").read_text(errors="replace")
        except OSError:
            return None
        line = next((x for x in text.splitlines() if x.startswith("Name:")), "")
        return line.partition(":")[2].strip() or None

    return name_of


@dataclass
class Refused:
    """One read's functions refused for good: ``skipped``, not asked (npu-smi serves what they
    fill for now); ``found``, refused during this read (missing, -8002), for the caller to
    record once the read is over."""

    skipped: frozenset[str] = frozenset()
    found: list[DcmiRefusal] = field(default_factory=list)


class Reader:
    """The DCMI reads through ``helper``; a call the chip answers -8255 (absent) is not made
    again for ``retry_unsupported_after`` seconds."""

    def __init__(
        self,
        helper: DcmiHelper,
        *,
        proc_root: Path = Path("/proc"),
        retry_unsupported_after: float = 3600.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.helper = helper
        self._name_of = process_name(proc_root)
        self._retry_after = retry_unsupported_after
        self._monotonic = monotonic
        self._unsupported: dict[Call, float] = {}

    def values(
        self,
        chips: Sequence[DcmiChip],
        wanted: Sequence[tuple[str, int]],
        refused: Refused,
        query: str = Kind.INFO,
    ) -> dict[DcmiChip, dict[str, object]]:
        """Each chip's values of the calls ``wanted`` that npu-smi makes for ``query``."""
        calls = calls_for(chips, wanted, lambda call: self._skip(call, refused), query)
        answers = self.helper.call(calls)
        return collect(chips, calls, answers, self._mark_unsupported, refused.found.append)

    def table(
        self,
        run: SourceRun,
        hello: Hello,
        refused: Refused,
        versions: tuple[str | None, str | None],
    ) -> InfoTable:
        """The `npu-smi info` table, its impossible values dropped (counted on ``run``)."""
        values = self.values(hello.chips, TABLE_CALLS, refused)
        found = info_table(values, versions=versions, name_of=self._name_of)
        screened, rejected = plausible.screen(found)
        run.reject(rejected, ("dcmi", "info"))
        return screened

    def report(
        self, run: SourceRun, hello: Hello, refused: Refused, detail: Detail
    ) -> object | None:
        """The report of one detail or interconnect query (``addressed``), its impossible
        values dropped (counted on ``run``); None: npu-smi answers it."""
        kind, npu, chip = detail
        chips = [c for c in hello.chips if c.card == npu and chip in (None, c.device)]
        if not chips:
            raise DcmiRefusal(
                "dcmi_chip_gone", f"dcmi_init listed no NPU {npu} chip {chip}", re_enumerate=True
            )
        wanted, build, _, _ = DETAIL[kind]
        if kind == Kind.PCIE_ERR:  # npu-smi answers where it does not read them through DCMI
            board = None
            if chips[0].model == "a3":
                board = self.values(chips, (("mainboard", 0),), refused)[chips[0]]
            mainboard = (board or {}).get("mainboard")
            if not reads_pcie_errors(chips[0], mainboard if isinstance(mainboard, int) else None):
                return None
        report = build(npu, chips, self.values(chips, wanted, refused, kind))
        if report is None:
            return None
        screened, rejected = plausible.screen(report)
        run.reject(rejected, ("dcmi", "-t", str(kind), "-i", str(npu)))
        return screened

    def dcmi_only(self, hello: Hello, refused: Refused, npu: int, chip: int) -> ChipDcmi | None:
        """Voltage, PCIe bandwidth and vNPUs of one chip; None: dcmi_init listed no such chip."""
        found = [c for c in hello.chips if (c.card, c.device) == (npu, chip)]
        if not found:
            return None
        return chip_dcmi(self.values(found, DCMI_ONLY_CALLS, refused)[found[0]])

    def _skip(self, call: Call, refused: Refused) -> bool:
        return self._unsupported.get(call, 0.0) > self._monotonic() or call[0] in refused.skipped

    def _mark_unsupported(self, call: Call) -> None:
        self._unsupported[call] = self._monotonic() + self._retry_after
