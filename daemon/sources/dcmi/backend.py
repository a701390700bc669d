"""The DCMI backend: the chip queries answered through the helper, npu-smi as the fallback and
the cross-check.

``DcmiBackend`` answers a query value (``sources/query.py``) from ``DETAIL``: query -> (the
library calls per chip, their conversion into the query's model report); the table (`info`)
from ``TABLE_CALLS`` and, once a cross-check has passed, usages, common, ecc, health, memory and
the interconnect queries; what it does not serve, the ``NpuSmi`` it owns answers. The first
HCCS query of a chip after each cross-check is compared with npu-smi's. At start and every hour
one npu-smi table is read beside the DCMI one of the same moment; in `auto` a disagreement in
the chips turns DCMI off until the next check, one beyond tolerance in a value has npu-smi
serve until then (in `dcmi` it is logged and counted only). A function the library lacks or
refuses (-8002) is refused per field: for an hour npu-smi's answer to the query fills only the
fields that function gives (`fields.py`), the rest stays DCMI's. Every fallback is counted on
the run as a refusal (`npumon_source_failures_total{reason="dcmi_..."}`), which does not mark
the source down.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from npumon.daemon.model.chips import (
    ChipDcmi,
    CommonReport,
    EccReport,
    HealthReport,
    InfoTable,
    UsagesReport,
    code_value,
)
from npumon.daemon.model.network import ErrorCounts, HccsBandwidth, HccsReport
from npumon.daemon.model.snapshot import BackendInfo
from npumon.daemon.parsers import plausible
from npumon.daemon.sources.dcmi.client import Call, DcmiChip, DcmiHelper, Hello, HelperFailure
from npumon.daemon.sources.dcmi.fields import fields_of, merge
from npumon.daemon.sources.dcmi.library import ROOT_ONLY, LibraryRefused, TrustPolicy, find_library
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
from npumon.daemon.sources.query import ABORTS_A_PASS, NpuSmi, Query, info
from npumon.daemon.sources.wrapper import SourceFailure, SourceRun

__all__ = ["ROOT_ONLY", "DcmiBackend", "Mode", "TrustPolicy", "open_dcmi"]
log = logging.getLogger(__name__)
R = TypeVar("R")
Mode = Literal["auto", "dcmi", "cli"]
# the cross-check's tolerances: readings taken milliseconds apart, power and temperature move
POWER_TOLERANCE_WATTS = 10.0
POWER_TOLERANCE_RATIO = 0.10
TEMPERATURE_TOLERANCE_CELSIUS = 3.0


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


def disagreements(dcmi: InfoTable, cli: InfoTable) -> list[tuple[str, str]]:
    """(field, what differs) for each disagreement beyond tolerance; field "ids" for the chips."""
    ours = {(c.npu, c.chip): c for c in dcmi.chips}
    theirs = {(c.npu, c.chip): c for c in cli.chips}
    if set(ours) != set(theirs):
        return [("ids", f"dcmi lists {sorted(ours)}, npu-smi {sorted(theirs)}")]
    found = []
    for key, a in ours.items():
        b = theirs[key]
        for field, close in _CHECKS:
            x, y = getattr(a, field), getattr(b, field)
            if x is not None and y is not None and not close(x, y):
                found.append((field, f"NPU {key[0]} chip {key[1]}: dcmi {x}, npu-smi {y}"))
    return found


_CHECKS: tuple[tuple[str, Callable[[float, float], bool]], ...] = (
    ("hbm_total_bytes", lambda x, y: x == y),
    (
        "power_watts",
        lambda x, y: abs(x - y) <= max(POWER_TOLERANCE_WATTS, POWER_TOLERANCE_RATIO * abs(y)),
    ),
    ("temperature_celsius", lambda x, y: abs(x - y) <= TEMPERATURE_TOLERANCE_CELSIUS),
)


def _per_npu(
    npu: int, chips: Sequence[DcmiChip], values: Mapping[DcmiChip, Values], kind: str
) -> object:
    if kind == "usages":
        return UsagesReport(npu, tuple(chip_usage(c, values[c]) for c in chips))
    if kind == "common":
        return CommonReport(npu, tuple(chip_common(c, values[c]) for c in chips))
    return EccReport(npu, tuple(chip_ecc(c, values[c]) for c in chips))


# query -> (the calls per chip, the parser's model from the chips' values)
DETAIL: dict[str, tuple[tuple[tuple[str, int], ...], Callable[..., object]]] = {
    "usages": (USAGES_CALLS, lambda npu, chips, v: _per_npu(npu, chips, v, "usages")),
    "common": (COMMON_CALLS, lambda npu, chips, v: _per_npu(npu, chips, v, "common")),
    "ecc": (ECC_CALLS, lambda npu, chips, v: _per_npu(npu, chips, v, "ecc")),
    "health": (HEALTH_CALLS, lambda npu, chips, v: health_report(chips[0], v[chips[0]])),
    "memory": (MEMORY_CALLS, lambda npu, chips, v: memory_report(chips[0], v[chips[0]])),
    # the interconnect queries: None (the value is absent: -8255, missing, -8002) has npu-smi
    # serve the whole query
    "hccs": (HCCS_CALLS, lambda npu, chips, v: hccs_report(v[chips[0]])),
    "hccs-bw": (HCCS_BW_CALLS, lambda npu, chips, v: hccs_bandwidth(v[chips[0]])),
    "pcie-err": (PCIE_ERROR_CALLS, lambda npu, chips, v: pcie_errors(v[chips[0]])),
    "sio-info": (SIO_CALLS, lambda npu, chips, v: sio_errors(v[chips[0]])),
}
INTERCONNECT = frozenset({"hccs", "hccs-bw", "pcie-err", "sio-info"})  # served whole or not
_PER_CHIP = frozenset({"health", "memory", "hccs", "hccs-bw"})  # `-i N -c M`
_EITHER = frozenset({"pcie-err", "sio-info"})  # `-i N` on a one-chip NPU, else `-i N -c M`
# a counter read by npu-smi just after DCMI may have grown by this much
LINK_COUNTER_SLACK = 10_000_000
LINK_COUNTER_RATIO = 0.01
# the detail values' check: two reads milliseconds apart, where utilization and the current
# AI Core clock move with the load
RATIO_TOLERANCE = 0.25
CURRENT_CLOCK_TOLERANCE_RATIO = 0.5
DETAIL_KINDS = ("info", *DETAIL)


def _served(function: str, fields: Sequence[str]) -> str:
    """What npu-smi serves for a refused function, for the refusal's message."""
    if fields:
        return ", ".join(fields)
    return "the process list" if function == "processes" else "nothing: it has no such query"


Detail = tuple[str, int, int | None]  # (query, NPU, chip), chip None: the NPU's


def _detail(query: Query[Any]) -> Detail | None:
    """(query, NPU, chip) of a query DCMI answers: usages, common and ecc of an NPU; health,
    memory and the HCCS ones of a chip it addresses (not of one asked through its NPU, as on
    the 950); PCIe and SIO errors of a chip or of a one-chip NPU (chip None). None: npu-smi
    answers it."""
    if query.what not in DETAIL or query.npu is None:
        return None
    if query.what in _EITHER:
        return query.what, query.npu, None if query.by_npu else query.chip
    if query.what in _PER_CHIP:
        if query.chip is None or query.by_npu:
            return None
        return query.what, query.npu, query.chip
    return (query.what, query.npu, None) if query.chip is None else None


def _counters_close(x: int | None, y: int | None) -> bool:
    if x is None or y is None:
        return x == y
    return abs(x - y) <= max(LINK_COUNTER_SLACK, LINK_COUNTER_RATIO * max(x, y))


def link_disagreement(dcmi: object, cli: object) -> str | None:
    """What differs between DCMI's and npu-smi's `-t hccs` or `-t hccs-bw` of one chip: the
    chip's health or first error port, link numbers, lanes or speed; counters beyond the
    slack (bandwidths are samples of different moments: only their link numbers are
    compared). None: they agree."""
    if isinstance(dcmi, HccsBandwidth) and isinstance(cli, HccsBandwidth):
        ours, theirs = [link for link, _, _ in dcmi.links], [link for link, _, _ in cli.links]
        return None if ours == theirs else f"links dcmi {ours}, npu-smi {theirs}"
    assert isinstance(dcmi, HccsReport) and isinstance(cli, HccsReport)
    chip = (dcmi.healthy, dcmi.first_error_link), (cli.healthy, cli.first_error_link)
    if chip[0] != chip[1]:
        return f"health and first error port: dcmi {chip[0]}, npu-smi {chip[1]}"
    if len(dcmi.links) != len(cli.links):
        return f"{len(dcmi.links)} links through dcmi, {len(cli.links)} through npu-smi"
    for a, b in zip(dcmi.links, cli.links, strict=True):
        same = (a.link, a.lanes, a.speed_bytes_per_second) == (
            b.link,
            b.lanes,
            b.speed_bytes_per_second,
        )
        counters = ("tx_packets", "rx_packets", "retries", "crc_errors")
        if not same or not all(_counters_close(getattr(a, f), getattr(b, f)) for f in counters):
            return f"link {a.link}: dcmi {a}, npu-smi {b}"
    return None


def _close(field: str, x: float, y: float) -> bool:
    if field.endswith("_ratio"):
        return abs(x - y) <= RATIO_TOLERANCE
    if field == "aicore_current_hertz":
        return abs(x - y) <= CURRENT_CLOCK_TOLERANCE_RATIO * max(abs(x), abs(y))
    if field == "power_watts":
        return abs(x - y) <= max(POWER_TOLERANCE_WATTS, POWER_TOLERANCE_RATIO * abs(y))
    if field.endswith("_celsius"):
        return abs(x - y) <= TEMPERATURE_TOLERANCE_CELSIUS
    return x == y


def _rows(report: object) -> dict[int | None, object]:
    chips = getattr(report, "chips", None)
    return {None: report} if chips is None else {row.chip: row for row in chips}


def detail_disagreement(dcmi: object, cli: object) -> str | None:
    """What differs between DCMI's and npu-smi's answer to one detail or interconnect query,
    among the values both give: totals, counts and rated clocks equal; utilization within 25
    points, the current clock within 50 %, power and temperature as in the table's check;
    error counters within the links' slack; the health word and the set of error codes equal.
    None: they agree."""
    if isinstance(dcmi, HccsReport | HccsBandwidth):
        return link_disagreement(dcmi, cli)
    if isinstance(dcmi, ErrorCounts) and isinstance(cli, ErrorCounts):
        theirs = dict(cli.counts)
        for kind, count in dcmi.counts:
            if kind in theirs and not _counters_close(count, theirs[kind]):
                return f"{kind}: dcmi {count}, npu-smi {theirs[kind]}"
        return None
    if isinstance(dcmi, HealthReport) and isinstance(cli, HealthReport):
        codes = [{code_value(c) for c in r.error_codes} for r in (dcmi, cli)]
        if None not in (dcmi.status, cli.status) and dcmi.status != cli.status:
            return f"health: dcmi {dcmi.status}, npu-smi {cli.status}"
        if codes[0] != codes[1]:
            return f"error codes: dcmi {dcmi.error_codes}, npu-smi {cli.error_codes}"
        return None
    theirs_rows = _rows(cli)
    for chip, row in _rows(dcmi).items():
        other = theirs_rows.get(chip)
        if other is None:
            continue
        for f in dataclasses.fields(row):  # type: ignore[arg-type]
            x, y = getattr(row, f.name), getattr(other, f.name, None)
            if f.name in ("npu", "chip") or x is None or y is None:
                continue
            if not _close(f.name, x, y):
                return f"chip {chip} {f.name}: dcmi {x}, npu-smi {y}"
    return None


def open_dcmi(
    cli: NpuSmi,
    *,
    mode: Mode,
    library: Path | None,
    trust: TrustPolicy = ROOT_ONLY,
    on_backend: Callable[[BackendInfo], None] = lambda info: None,
    proc_root: Path = Path("/proc"),
) -> DcmiBackend:
    """The DCMI backend over ``cli``, its helper started on first use unless the mode is cli or
    the library is refused (why is logged once and becomes npumon_backend_info's reason)."""
    helper, refusal = None, None
    if mode != "cli":
        try:
            helper = DcmiHelper(find_library(library, trust), cli.timeout)
        except LibraryRefused as refused:
            refusal = refused
    return DcmiBackend(
        cli,
        mode=mode,
        helper=helper,
        no_helper=refusal,
        on_backend=on_backend,
        proc_root=proc_root,
    )


class DcmiBackend:
    """The chip queries answered through the DCMI helper where the mode allows it, else by the
    npu-smi backend it owns (``cli``), query by query."""

    def __init__(
        self,
        cli: NpuSmi,
        *,
        mode: Mode,
        helper: DcmiHelper | None,
        no_helper: SourceFailure | None = None,
        on_backend: Callable[[BackendInfo], None] = lambda info: None,
        proc_root: Path = Path("/proc"),
        cross_check_interval: float = 3600.0,
        retry_unsupported_after: float = 3600.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cli = cli
        self.mode: Mode = mode
        self.helper = helper if mode != "cli" else None
        self._on_backend = on_backend
        self._name_of = process_name(proc_root)
        self._interval = cross_check_interval
        self._retry_after = retry_unsupported_after
        self._monotonic = monotonic
        self._next_check = 0.0
        self._off_until = 0.0  # a failed cross-check has npu-smi serve until then
        self._checked = False  # the detail tier waits for the first cross-check
        self._checked_at = 0.0  # when the last table cross-check passed
        # (query, NPU, chip) -> (the table check after which its answers were compared, whether
        # they agreed): npu-smi serves the ones that did not until the next check
        self._compared: dict[Detail, tuple[float | None, bool]] = {}
        self._unsupported: dict[Call, float] = {}
        # function (request name) -> until when npu-smi serves the fields it fills (missing, -8002)
        self._refused: dict[str, float] = {}
        self._versions: tuple[str | None, str | None] = (None, None)
        self._dcmi_reason = "configured" if mode == "dcmi" else "cross_check_passed"
        # the run whose DCMI-only read failed: the rest of its chips are not asked
        self._dcmi_only_failed: SourceRun | None = None
        self.backend: BackendInfo | None = None  # the one serving now, once it is known
        if self.helper is None:
            self._announce_no_helper(no_helper)

    def close(self) -> None:
        """Stop the helper, if there is one."""
        if self.helper is not None:
            self.helper.close()

    def offers(self, what: str) -> bool:
        return what in DETAIL or what in ("info", "dcmi") or self.cli.offers(what)

    def ask(self, run: SourceRun, query: Query[R]) -> R:
        helper = self.helper
        if query.what == "dcmi":
            return query.of(self._dcmi_only(run, query.npu, query.chip))
        if helper is None:
            return self.cli.ask(run, query)
        if query.what == "info":
            served = self._answer(run, helper, self._table)
            return self.cli.ask(run, query) if served is None else query.of(served)
        detail = _detail(query)
        if not self._checked or detail is None:
            return self.cli.ask(run, query)

        def read() -> object | None:
            return self._answer(run, helper, lambda r, h, hello: self._report(r, h, hello, *detail))

        asked: list[R] = []

        def cli() -> R:
            """npu-smi's answer, run at most once for the merge and the check together."""
            if not asked:
                asked.append(self.cli.ask(run, query))
            return asked[0]

        def filled() -> object | None:
            found = read()
            if found is None or detail[0] in INTERCONNECT:
                return found
            return self._filled(detail[0], found, DETAIL[detail[0]][0], cli)

        return query.of(self._detail_checked(run, detail, filled, cli))

    def _dcmi_only(self, run: SourceRun, npu: int | None, chip: int | None) -> ChipDcmi:
        """Voltage, PCIe bandwidth and vNPUs of one chip, once a cross-check has passed; after
        a failure, nothing for the rest of the run's chips (the PCIe call samples for its
        window: the health tier waits at most one chip's)."""
        helper = self.helper
        if helper is None or not self._checked or self._monotonic() < self._off_until:
            return ChipDcmi()
        if self._dcmi_only_failed is run:
            return ChipDcmi()
        try:
            found = [c for c in helper.hello().chips if (c.card, c.device) == (npu, chip)]
            if not found:
                return ChipDcmi()
            return chip_dcmi(self._values(run, helper, found, DCMI_ONLY_CALLS)[found[0]])
        except (HelperFailure, DcmiRefusal) as failure:
            self._dcmi_only_failed = run
            run.refused(
                SourceFailure(
                    failure.reason,
                    f"DCMI: {failure.message}; no voltage or PCIe "
                    "bandwidth for the chips after it this pass",
                )
            )
            if isinstance(failure, DcmiRefusal) and failure.re_enumerate:
                helper.restart(failure.message)
        return ChipDcmi()

    def _detail_checked(
        self,
        run: SourceRun,
        detail: Detail,
        read: Callable[[], object | None],
        cli: Callable[[], object],
    ) -> object:
        """DCMI's answer to a detail or interconnect query; the first after each table
        cross-check is compared with npu-smi's (every value both give), and on a disagreement
        npu-smi serves that query until the next (an npu-smi that cannot answer leaves DCMI's
        unchecked, counted)."""
        at, agreed = self._compared.get(detail, (None, True))
        if at == self._checked_at and not agreed:
            return cli()
        found = read()
        if found is None:
            return cli()
        if at == self._checked_at:
            return found
        try:
            theirs = cli()
        except SourceFailure as failure:  # a timeout ends the pass, as under cli
            if failure.reason in ABORTS_A_PASS:
                raise
            run.refused(
                SourceFailure(
                    failure.reason,
                    f"the check of DCMI's -t {detail[0]} of NPU {detail[1]} against npu-smi's "
                    f"could not read npu-smi ({failure.message}); DCMI serves it unchecked "
                    "until the next check",
                )
            )
            self._compared[detail] = (self._checked_at, True)
            return found
        problem = detail_disagreement(found, theirs)
        self._compared[detail] = (self._checked_at, problem is None)
        if problem is None:
            return found
        log.warning("event=dcmi_cross_check_failed query=%s detail=%r", detail[0], problem)
        run.refused(
            SourceFailure(
                "cross_check",
                f"DCMI and npu-smi disagree on -t {detail[0]} of NPU {detail[1]} chip "
                f"{detail[2]}: {problem}; npu-smi serves it until the next check",
            )
        )
        return theirs

    def _filled(
        self, kind: str, found: object, wanted: Sequence[tuple[str, int]], cli: Callable[[], object]
    ) -> object:
        """``found`` with the fields of the functions refused now taken from npu-smi's answer
        to the same query (``cli``, run only then; its failure is the poll's, as under cli)."""
        now = self._monotonic()
        names = sorted({n for n, _ in wanted if self._refused.get(n, 0.0) > now})
        return merge(kind, found, cli(), names) if names else found

    def _answer(
        self,
        run: SourceRun,
        helper: DcmiHelper,
        read: Callable[[SourceRun, DcmiHelper, Hello], object],
    ) -> object | None:
        """DCMI's answer, or None for npu-smi to serve (the reason counted on ``run``)."""
        if self._monotonic() < self._off_until:
            return None
        try:
            return read(run, helper, helper.hello())
        except (HelperFailure, DcmiRefusal) as failure:
            self._fall_back(run, helper, failure)
            return None

    def _table(self, run: SourceRun, helper: DcmiHelper, hello: Hello) -> InfoTable:
        if self._monotonic() >= self._next_check:
            return self._cross_checked(run, helper, hello)
        found = self._filled(
            "info",
            self._read(run, helper, hello),
            TABLE_CALLS,
            lambda: self.cli.ask(run, info()),
        )
        self._announce(BackendInfo("dcmi", self._dcmi_reason))
        return info().of(found)

    def _values(
        self,
        run: SourceRun,
        helper: DcmiHelper,
        chips: Sequence[DcmiChip],
        wanted: Sequence[tuple[str, int]],
        query: str = "info",
    ) -> dict[DcmiChip, dict[str, object]]:
        calls = calls_for(chips, wanted, self._skip, query)
        answers = helper.call(calls)
        return collect(
            chips, calls, answers, self._mark_unsupported, lambda r: self._refuse(run, r)
        )

    def _read(self, run: SourceRun, helper: DcmiHelper, hello: Hello) -> InfoTable:
        values = self._values(run, helper, hello.chips, TABLE_CALLS)
        found = info_table(values, versions=self._versions, name_of=self._name_of)
        screened, rejected = plausible.screen(found)
        run.reject(rejected, ("dcmi", "info"))
        return screened

    def _report(
        self,
        run: SourceRun,
        helper: DcmiHelper,
        hello: Hello,
        kind: str,
        npu: int,
        chip: int | None,
    ) -> object | None:
        chips = [c for c in hello.chips if c.card == npu and chip in (None, c.device)]
        if not chips:
            raise DcmiRefusal(
                "dcmi_chip_gone", f"dcmi_init listed no NPU {npu} chip {chip}", re_enumerate=True
            )
        wanted, build = DETAIL[kind]
        if kind == "pcie-err":  # npu-smi answers where it does not read them through DCMI
            board = None
            if chips[0].model == "a3":
                board = self._values(run, helper, chips, (("mainboard", 0),))[chips[0]]
            mainboard = (board or {}).get("mainboard")
            if not reads_pcie_errors(chips[0], mainboard if isinstance(mainboard, int) else None):
                return None
        report = build(npu, chips, self._values(run, helper, chips, wanted, kind))
        if report is None:
            return None
        screened, rejected = plausible.screen(report)
        run.reject(rejected, ("dcmi", "-t", kind, "-i", str(npu)))
        return screened

    def _cross_checked(self, run: SourceRun, helper: DcmiHelper, hello: Hello) -> InfoTable:
        """One npu-smi table beside the DCMI one; the table served is the one the result allows."""
        cli = self.cli.ask(run, info())  # a failure here fails the poll as under cli
        self._versions = (cli.npu_smi_version, cli.version or hello.driver_version)
        try:
            found = self._read(run, helper, hello)
        except (HelperFailure, DcmiRefusal) as failure:
            self._fall_back(run, helper, failure)
            return cli
        found = info().of(self._filled("info", found, TABLE_CALLS, lambda: cli))
        self._checked_at = self._monotonic()
        self._next_check = self._checked_at + self._interval
        self._checked = True
        problems = disagreements(found, cli)
        for field, detail in problems:
            log.warning("event=dcmi_cross_check_failed field=%s detail=%r", field, detail)
            run.refused(
                SourceFailure(
                    "cross_check",
                    f"DCMI and npu-smi disagree on {field}: "
                    f"{detail}; npu-smi serves it until the next check",
                )
            )
        if any(field == "ids" for field, _ in problems) and len(found.chips) > len(cli.chips):
            helper.restart("a chip dcmi_init listed is gone")
        if problems and self.mode == "auto":
            self._off_until = self._next_check
            self._announce(BackendInfo("cli", f"cross_check_{problems[0][0]}"))
            return cli
        self._announce(BackendInfo("dcmi", self._dcmi_reason))
        return found

    def _fall_back(
        self, run: SourceRun, helper: DcmiHelper, failure: HelperFailure | DcmiRefusal
    ) -> None:
        run.refused(SourceFailure(failure.reason, f"DCMI: {failure.message}; npu-smi serves"))
        if isinstance(failure, DcmiRefusal) and failure.re_enumerate:
            helper.restart(failure.message)
            self._next_check = 0.0  # the chips may have changed: check again
        self._announce(BackendInfo("cli", failure.reason))

    def _refuse(self, run: SourceRun, refusal: DcmiRefusal) -> None:
        """A function refused for good: npu-smi serves what it fills for ``retry_after``,
        counted once each time (the rest of every query stays DCMI's)."""
        name = refusal.function
        assert name is not None
        if self._refused.get(name, 0.0) > self._monotonic():
            return  # another chip of the same poll
        self._refused[name] = self._monotonic() + self._retry_after
        fields = sorted({f for kind in DETAIL_KINDS for f in fields_of(kind, [name])})
        log.warning(
            "event=dcmi_function_refused function=%s reason=%s fields=%s message=%r",
            name,
            refusal.reason,
            ",".join(fields),
            refusal.message,
        )
        run.refused(
            SourceFailure(
                refusal.reason,
                f"DCMI: {refusal.message}; npu-smi serves what {name} gives "
                f"({_served(name, fields)}) for {self._retry_after:.0f} s",
            )
        )

    def _skip(self, call: Call) -> bool:
        now = self._monotonic()
        return self._unsupported.get(call, 0.0) > now or self._refused.get(call[0], 0.0) > now

    def _mark_unsupported(self, call: Call) -> None:
        self._unsupported[call] = self._monotonic() + self._retry_after

    def _announce_no_helper(self, refusal: SourceFailure | None) -> None:
        """One line on why npu-smi serves; quiet (debug) where nothing is amiss: backend cli,
        or auto on a machine without libdcmi.so."""
        info = BackendInfo("cli", "configured" if refusal is None else refusal.reason)
        quiet = refusal is None or (self.mode == "auto" and refusal.reason == "library_not_found")
        log.log(
            logging.DEBUG if quiet else logging.WARNING,
            "event=backend backend=cli reason=%s message=%r",
            info.reason,
            refusal.message if refusal else "chips.backend is cli",
        )
        self.backend = info
        self._on_backend(info)

    def _announce(self, info: BackendInfo) -> None:
        """Log and publish the serving backend when it changes."""
        if info == self.backend:
            return
        level = logging.INFO if self.backend is None or info.backend == "dcmi" else logging.WARNING
        log.log(level, "event=backend backend=%s reason=%s", info.backend, info.reason)
        self.backend = info
        self._on_backend(info)
