"""Who answers each chip query: DCMI through the helper, or npu-smi behind it.

``serving`` is the one module the rest of npumon imports (``open_chips``, ``DcmiBackend``).
``DcmiBackend`` answers a query value (``sources/query.py``) from what ``Reader`` reads
(``reader.py``): the table (`info`) and, once a cross-check has passed, usages, common, ecc,
health, memory and the interconnect queries; what it does not serve, the ``NpuSmi`` it owns
answers. At start and every hour one npu-smi table is read beside the DCMI one of the same
moment (``crosscheck.py`` compares them); in `auto` a disagreement in the chips turns DCMI off
until the next check, one beyond tolerance in a value has npu-smi serve until then (in `dcmi`
it is logged and counted only). The first answer to each detail or interconnect query after
each check is compared with npu-smi's (``Checked``). A function the library lacks or refuses
(-8002) is refused per field (``Refusals``): for an hour npu-smi's answer to the query fills
only the fields that function gives (``fields.py``), the rest stays DCMI's. Every fallback is
counted on the run as a refusal (`npumon_source_failures_total{reason="dcmi_..."}`), which
does not mark the source down; the backend serving is announced (``Announcer``) as
npumon_backend_info.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, TypeVar

from npumon.daemon.model.chips import ChipDcmi, InfoTable
from npumon.daemon.model.snapshot import BackendInfo
from npumon.daemon.sources.dcmi.client import DcmiHelper, Hello, HelperFailure
from npumon.daemon.sources.dcmi.crosscheck import detail_disagreement, disagreements
from npumon.daemon.sources.dcmi.fields import fields_of, merge
from npumon.daemon.sources.dcmi.library import ROOT_ONLY, LibraryRefused, TrustPolicy, find_library
from npumon.daemon.sources.dcmi.reader import (
    DETAIL,
    FILLED_KINDS,
    INTERCONNECT,
    Detail,
    Reader,
    Refused,
    addressed,
)
from npumon.daemon.sources.dcmi.readings import TABLE_CALLS, DcmiRefusal
from npumon.daemon.sources.npu_smi import NpuSmi
from npumon.daemon.sources.query import ABORTS_A_PASS, ChipBackend, Kind, Query, info
from npumon.daemon.sources.wrapper import SourceFailure, SourceRun

__all__ = ["ROOT_ONLY", "DcmiBackend", "Mode", "TrustPolicy", "open_chips"]
log = logging.getLogger(__name__)
R = TypeVar("R")
Mode = Literal["auto", "dcmi", "cli"]


def open_chips(
    cli: NpuSmi,
    *,
    mode: Mode,
    library: Path | None,
    trust: TrustPolicy = ROOT_ONLY,
    on_backend: Callable[[BackendInfo], None] = lambda info: None,
    proc_root: Path = Path("/proc"),
) -> ChipBackend:
    """The chip backend: ``cli`` alone under mode cli; else the DCMI backend over it, its
    helper started on first use unless the library is refused (why is logged once and becomes
    npumon_backend_info's reason)."""
    if mode == "cli":
        Announcer(mode, on_backend).no_helper(None)
        return cli
    helper, refusal = None, None
    try:
        helper = DcmiHelper(find_library(library, trust), cli.timeout)
    except LibraryRefused as refused:
        refusal = refused
    return DcmiBackend(
        cli, mode=mode, helper=helper, no_helper=refusal, on_backend=on_backend, proc_root=proc_root
    )


class Announcer:
    """The backend serving now (npumon_backend_info), logged and published when it changes."""

    def __init__(self, mode: Mode, on_backend: Callable[[BackendInfo], None]) -> None:
        self._mode = mode
        self._on_backend = on_backend
        self.backend: BackendInfo | None = None  # the one serving now, once it is known

    def no_helper(self, refusal: SourceFailure | None) -> None:
        """One line on why npu-smi serves; quiet (debug) where nothing is amiss: backend cli,
        or auto on a machine without libdcmi.so."""
        info = BackendInfo("cli", "configured" if refusal is None else refusal.reason)
        quiet = refusal is None or (self._mode == "auto" and refusal.reason == "library_not_found")
        log.log(
            logging.DEBUG if quiet else logging.WARNING,
            "event=backend backend=cli reason=%s message=%r",
            info.reason,
            refusal.message if refusal else "chips.backend is cli",
        )
        self.backend = info
        self._on_backend(info)

    def announce(self, info: BackendInfo) -> None:
        if info == self.backend:
            return
        level = logging.INFO if self.backend is None or info.backend == "dcmi" else logging.WARNING
        log.log(level, "event=backend backend=%s reason=%s", info.backend, info.reason)
        self.backend = info
        self._on_backend(info)


def _served(function: str, fields: Sequence[str]) -> str:
    """What npu-smi serves for a refused function, for the refusal's message."""
    if fields:
        return ", ".join(fields)
    return "the process list" if function == "processes" else "nothing: it has no such query"


class Refusals:
    """Functions refused for good (missing, -8002): npu-smi serves the fields each fills for
    ``retry_after`` seconds, counted once each time (the rest of every query stays DCMI's)."""

    def __init__(self, retry_after: float, monotonic: Callable[[], float]) -> None:
        self._retry_after = retry_after
        self._monotonic = monotonic
        self._until: dict[str, float] = {}  # function (request name) -> until when

    def read(self, run: SourceRun, read: Callable[[Refused], R]) -> R:
        """``read`` with the functions refused now skipped; those it finds refused recorded."""
        now = self._monotonic()
        refused = Refused(frozenset(n for n, until in self._until.items() if until > now))
        try:
            return read(refused)
        finally:
            for refusal in refused.found:
                self._refuse(run, refusal)

    def filled(
        self, kind: str, found: object, wanted: Sequence[tuple[str, int]], cli: Callable[[], object]
    ) -> object:
        """``found`` with the fields of the functions refused now taken from npu-smi's answer
        to the same query (``cli``, run only then; its failure is the poll's, as under cli)."""
        now = self._monotonic()
        names = sorted({n for n, _ in wanted if self._until.get(n, 0.0) > now})
        return merge(kind, found, cli(), names) if names else found

    def _refuse(self, run: SourceRun, refusal: DcmiRefusal) -> None:
        name = refusal.function
        assert name is not None
        if self._until.get(name, 0.0) > self._monotonic():
            return  # another chip of the same poll
        self._until[name] = self._monotonic() + self._retry_after
        fields = sorted({f for kind in FILLED_KINDS for f in fields_of(kind, [name])})
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


class Checked:
    """The detail and interconnect answers compared with npu-smi's since the last table check:
    (query, NPU, chip) -> (the check after which it was compared, whether they agreed)."""

    def __init__(self) -> None:
        self._compared: dict[Detail, tuple[float | None, bool]] = {}

    def answer(
        self,
        run: SourceRun,
        detail: Detail,
        checked_at: float,
        read: Callable[[], object | None],
        cli: Callable[[], object],
    ) -> object:
        """DCMI's answer to a detail or interconnect query; the first after each table
        cross-check (``checked_at``) is compared with npu-smi's (every value both give), and on
        a disagreement npu-smi serves that query until the next (an npu-smi that cannot
        answer leaves DCMI's unchecked, counted)."""
        at, agreed = self._compared.get(detail, (None, True))
        if at == checked_at and not agreed:
            return cli()
        found = read()
        if found is None:
            return cli()
        if at == checked_at:
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
            self._compared[detail] = (checked_at, True)
            return found
        problem = detail_disagreement(found, theirs)
        self._compared[detail] = (checked_at, problem is None)
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
        self._reader = (
            None
            if self.helper is None
            else Reader(
                self.helper,
                proc_root=proc_root,
                retry_unsupported_after=retry_unsupported_after,
                monotonic=monotonic,
            )
        )
        self._announcer = Announcer(mode, on_backend)
        self._refusals = Refusals(retry_unsupported_after, monotonic)
        self._compared = Checked()
        self._interval = cross_check_interval
        self._monotonic = monotonic
        self._next_check = 0.0
        self._off_until = 0.0  # a failed cross-check has npu-smi serve until then
        self._checked = False  # the detail tier waits for the first cross-check
        self._checked_at = 0.0  # when the last table cross-check passed
        self._versions: tuple[str | None, str | None] = (None, None)
        self._dcmi_reason = "configured" if mode == "dcmi" else "cross_check_passed"
        # the run whose DCMI-only read failed: the rest of its chips are not asked
        self._dcmi_only_failed: SourceRun | None = None
        if self.helper is None:
            self._announcer.no_helper(no_helper)

    @property
    def backend(self) -> BackendInfo | None:
        """The backend serving now, once it is known."""
        return self._announcer.backend

    def close(self) -> None:
        """Stop the helper, if there is one."""
        if self.helper is not None:
            self.helper.close()

    def offers(self, what: str) -> bool:
        return what in DETAIL or what in (Kind.INFO, Kind.DCMI) or self.cli.offers(what)

    def ask(self, run: SourceRun, query: Query[R]) -> R:
        reader = self._reader
        if query.what == Kind.DCMI:
            return query.of(self._dcmi_only(run, query.npu, query.chip))
        if reader is None:
            return self.cli.ask(run, query)
        if query.what == Kind.INFO:
            served = self._answer(run, reader, lambda hello: self._table(run, hello))
            return self.cli.ask(run, query) if served is None else query.of(served)
        detail = addressed(query)
        if not self._checked or detail is None:
            return self.cli.ask(run, query)
        asked: list[R] = []

        def cli() -> R:
            """npu-smi's answer, run at most once for the merge and the check together."""
            if not asked:
                asked.append(self.cli.ask(run, query))
            return asked[0]

        def report(hello: Hello) -> object | None:
            return self._refusals.read(run, lambda r: reader.report(run, hello, r, detail))

        def filled() -> object | None:
            found = self._answer(run, reader, report)
            if found is None or detail[0] in INTERCONNECT:
                return found
            return self._refusals.filled(detail[0], found, DETAIL[detail[0]].calls, cli)

        return query.of(self._compared.answer(run, detail, self._checked_at, filled, cli))

    def _dcmi_only(self, run: SourceRun, npu: int | None, chip: int | None) -> ChipDcmi:
        """Voltage, PCIe bandwidth and vNPUs of one chip, once a cross-check has passed; after
        a failure, nothing for the rest of the run's chips (the PCIe call samples for its
        window: the health tier waits at most one chip's)."""
        reader = self._reader
        if reader is None or not self._checked or self._monotonic() < self._off_until:
            return ChipDcmi()
        if self._dcmi_only_failed is run or npu is None or chip is None:
            return ChipDcmi()
        try:
            hello = reader.helper.hello()
            found = self._refusals.read(run, lambda r: reader.dcmi_only(hello, r, npu, chip))
            return ChipDcmi() if found is None else found
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
                reader.helper.restart(failure.message)
        return ChipDcmi()

    def _answer(
        self, run: SourceRun, reader: Reader, read: Callable[[Hello], object | None]
    ) -> object | None:
        """DCMI's answer, or None for npu-smi to serve (the reason counted on ``run``)."""
        if self._monotonic() < self._off_until:
            return None
        try:
            return read(reader.helper.hello())
        except (HelperFailure, DcmiRefusal) as failure:
            self._fall_back(run, reader.helper, failure)
            return None

    def _read(self, run: SourceRun, hello: Hello) -> InfoTable:
        reader = self._reader
        assert reader is not None
        return self._refusals.read(run, lambda r: reader.table(run, hello, r, self._versions))

    def _table(self, run: SourceRun, hello: Hello) -> InfoTable:
        if self._monotonic() >= self._next_check:
            return self._cross_checked(run, hello)
        found = self._refusals.filled(
            Kind.INFO, self._read(run, hello), TABLE_CALLS, lambda: self.cli.ask(run, info())
        )
        self._announcer.announce(BackendInfo("dcmi", self._dcmi_reason))
        return info().of(found)

    def _cross_checked(self, run: SourceRun, hello: Hello) -> InfoTable:
        """One npu-smi table beside the DCMI one; the table served is the one the result allows."""
        assert self.helper is not None
        cli = self.cli.ask(run, info())  # a failure here fails the poll as under cli
        self._versions = (cli.npu_smi_version, cli.version or hello.driver_version)
        try:
            found = self._read(run, hello)
        except (HelperFailure, DcmiRefusal) as failure:
            self._fall_back(run, self.helper, failure)
            return cli
        found = info().of(self._refusals.filled(Kind.INFO, found, TABLE_CALLS, lambda: cli))
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
            self.helper.restart("a chip dcmi_init listed is gone")
        if problems and self.mode == "auto":
            self._off_until = self._next_check
            self._announcer.announce(BackendInfo("cli", f"cross_check_{problems[0][0]}"))
            return cli
        self._announcer.announce(BackendInfo("dcmi", self._dcmi_reason))
        return found

    def _fall_back(
        self, run: SourceRun, helper: DcmiHelper, failure: HelperFailure | DcmiRefusal
    ) -> None:
        run.refused(SourceFailure(failure.reason, f"DCMI: {failure.message}; npu-smi serves"))
        if isinstance(failure, DcmiRefusal) and failure.re_enumerate:
            helper.restart(failure.message)
            self._next_check = 0.0  # the chips may have changed: check again
        self._announcer.announce(BackendInfo("cli", failure.reason))
