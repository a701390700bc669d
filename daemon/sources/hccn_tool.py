"""The hccn_tool source: every chip's RoCE NIC port(s), one call at a time, through the same
runner, deadline, output cap, failure reasons and hourly "not supported" memory as npu-smi.

Two jobs: `poll_hccn_tool` (link, speed, link_stat, stat, optical, net_health; every
`hccn_tool.interval`) and `poll_hccn_tool_identity` (ip, lldp, the 950 port list; every
`hccn_tool.identity_interval`). A node without hccn_tool (a 310P inference box) has the source
off: nothing published, one log line, asked again hourly in case a driver is installed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from npumon.daemon.model.chips import ChipResults
from npumon.daemon.model.network import DevInfo, HccnResults, NetAddress, PortKey, UbConnect
from npumon.daemon.model.physical import physical_ids
from npumon.daemon.model.snapshot import SourceStatus
from npumon.daemon.parsers import hccn_950, hccn_tool, optical, plausible
from npumon.daemon.parsers.hccn_failure import classify_hccn_failure
from npumon.daemon.runner import CommandResult, resolve_command, run_command
from npumon.daemon.sources.query import MAX_OUTPUT_BYTES, Runner, Unsupported
from npumon.daemon.sources.wrapper import (
    SourceFailure,
    SourceRun,
    SourceTracker,
    check_result,
    parse_or_fail,
)

log = logging.getLogger(__name__)
T = TypeVar("T")
SOURCES = ("hccn_tool", "hccn_tool_identity")
Publish = Callable[[HccnResults, SourceStatus], None]
IDENTITY_WAIT = 600.0  # seconds an identity run waits for a port poll in progress
UB_WINDOW = ("-time", "200")  # the 950 `-bandwidth` sampling window, ms


@dataclass(frozen=True, slots=True)
class NicChip:
    """A chip to ask: hccn_tool's `-i` value, and whether it takes the 950 per-port forms."""

    npu: int
    chip: int
    device: int  # the physical ID (910/910B/A3); the NPU ID on the 950
    per_port: bool


def nic_chips(results: ChipResults) -> list[NicChip]:
    """The chips of the latest table whose hccn_tool device ID can be told (model/physical.py);
    a 950 is asked per port by its NPU ID (the logic ID), as its hccn_tool takes it. The 950 is
    told by the table's layout, not its chip name: npu-smi prints the NPU-ID-only header exactly
    when the chip type is NPU_CHIP_950 (`print_total_info_with_HBM`, hicann driver
    `npu_info_print.c`), while the name is the firmware's string."""
    table = results.table
    ids = physical_ids(results)
    chips = []
    for c in table.chips if table else ():
        if table is not None and table.one_chip_npus:
            chips.append(NicChip(c.npu, c.chip, c.npu, per_port=True))
        elif (c.npu, c.chip) in ids:
            chips.append(NicChip(c.npu, c.chip, ids[(c.npu, c.chip)].value, per_port=False))
    return chips


class _ToolMissing(Exception):
    """hccn_tool is not installed: the run stops and the source switches off."""


class HccnTool:
    """argv prefix + timeout; `query` returns parsed output or raises SourceFailure."""

    def __init__(self, command: Sequence[str], timeout: float, runner: Runner = run_command):
        self.command = resolve_command(command)
        self.timeout = timeout
        self._runner = runner

    def query(self, run: SourceRun, parse: Callable[[str], T], *args: str) -> T:
        result = self._runner(
            (*self.command, *args), self.timeout, max_output_bytes=MAX_OUTPUT_BYTES
        )
        parsed, rejected = plausible.screen(parse_or_fail(parse, _check(result), result.argv))
        run.reject(rejected, result.argv)
        return parsed


def _check(result: CommandResult) -> str:
    if result.not_found:
        raise SourceFailure("not_found", f"cannot run {result.argv[0]!r} ({result.stderr})")
    if not (result.timed_out or result.cancelled or result.output_too_large):
        known = classify_hccn_failure(
            result.stdout + "\n" + result.stderr, whole=result.exit_code == 0
        )
        if known is not None:
            raise SourceFailure(
                known.reason,
                f"{known.message} ({' '.join(result.argv)}): {known.advice}",
                result.exit_code,
            )
    return check_result(result)


class HccnSources:
    """The two hccn_tool jobs; each keeps its own last results and publishes all once per run."""

    def __init__(
        self,
        tool: HccnTool,
        publish: Publish,
        chips: Callable[[], list[NicChip]],
        *,
        retry_unsupported_after: float = 3600.0,
        identity_due: Callable[[], None] = lambda: None,
        busy: threading.Lock | None = None,
        withdraw: Callable[[tuple[str, ...]], None] = lambda sources: None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """``withdraw(SOURCES)``: the tool is off; what an earlier run (or the agent a reload
        replaced) published must leave the exposition."""
        self._tool = tool
        self._publish_results = publish
        self._withdraw = withdraw
        self._chips = chips
        self._monotonic = monotonic
        self._retry_after = retry_unsupported_after
        self._unsupported = Unsupported(retry_unsupported_after, monotonic)
        self._off_until: float | None = None
        # one hccn_tool call in flight, whichever job, also across a reload (``busy``)
        self.busy = busy if busy is not None else threading.Lock()
        self.trackers = {name: SourceTracker(name, clock, monotonic) for name in SOURCES}
        self._results = HccnResults()
        self._ports: dict[tuple[int, int], DevInfo] = {}  # 950 port lists, from -dev_info
        # a chip the identity job has not read yet (npu-smi learned its physical ID after the
        # identity job's first run) asks for an identity run now, not in an hour
        self.identity_due = identity_due
        self._identified: set[tuple[int, int]] = set()

    def poll_hccn_tool(self) -> None:
        self._run("hccn_tool", self._poll)

    def poll_hccn_tool_identity(self) -> None:
        self._run("hccn_tool_identity", self._poll_identity)

    def poll_all(self) -> None:
        self.poll_hccn_tool_identity()
        self.poll_hccn_tool()

    def results(self) -> HccnResults:
        return self._results

    def is_off(self) -> bool:
        return self._off_until is not None and self._monotonic() < self._off_until

    def _run(self, name: str, body: Callable[[SourceRun], None]) -> None:
        """One job run; nothing is published when there is no chip to ask or no hccn_tool."""
        if self.is_off() or not self._chips():
            return
        # One call in flight: a port poll that finds the tool busy is skipped (the next comes
        # soon); an identity run, often asked for by a poll in progress, waits for it.
        if not self.busy.acquire(timeout=IDENTITY_WAIT if name == SOURCES[1] else 0):
            return
        try:
            missing: list[bool] = []

            def guarded(run: SourceRun) -> None:
                try:
                    body(run)
                except _ToolMissing:
                    missing.append(True)

            status = self.trackers[name].run(guarded)
            if missing:
                self._switch_off()
            else:
                self._off_until = None
                self._publish_results(self._results, status)
        finally:
            self.busy.release()

    def _switch_off(self) -> None:
        if self._off_until is None:
            log.info(
                "source=hccn_tool event=off reason=not_found command=%r retry_seconds=%d",
                self._tool.command[0],
                self._retry_after,
            )
            self._results = HccnResults()
            self._withdraw(SOURCES)
        self._off_until = self._monotonic() + self._retry_after

    def _query(self, run: SourceRun, parse: Callable[[str], T], *args: str) -> T:
        try:
            return self._tool.query(run, parse, *args)
        except SourceFailure as failure:
            if failure.reason == "not_found":
                raise _ToolMissing from None
            raise

    def _ask(self, run: SourceRun, parse: Callable[[str], T], *args: str) -> T | None:
        return self._unsupported.attempt(run, lambda: self._query(run, parse, *args), args)

    def _targets(self) -> list[tuple[PortKey, tuple[str, ...], bool]]:
        """(port key, the argv after the query name, per-port form?) for every port to ask."""
        found: list[tuple[PortKey, tuple[str, ...], bool]] = []
        for c in self._chips():
            if not c.per_port:
                found.append(((c.npu, c.chip, 0), ("-i", str(c.device)), False))
                continue
            for p in self._ports.get((c.npu, c.chip), DevInfo(())).ports:
                where = ("-i", str(c.device), "-u", str(p.udie), "-p", str(p.port))
                found.append(((c.npu, c.chip, p.port), where, True))
        return found

    def _poll(self, run: SourceRun) -> None:
        if not self._identified.issuperset((c.npu, c.chip) for c in self._chips()):
            self.identity_due()
        fresh: dict[str, dict[PortKey, Any]] = {
            name: {}
            for name in (
                "link",
                "speed",
                "link_stats",
                "counters",
                "optical",
                "health",
                "bandwidth",
            )
        }
        ub_connect: dict[tuple[int, int], UbConnect] = {}
        try:
            for c in self._chips():  # the 950's chip-wide UB link state (PCIe cards only)
                if c.per_port:
                    found = self._ask(
                        run, hccn_950.parse_ub_connect, "-g", "-ub_connect", "-i", str(c.device)
                    )
                    ub_connect.update({(c.npu, c.chip): found} if found is not None else {})
            for key, where, per_port in self._targets():
                for name, parse, args in _queries(where, per_port):
                    value = self._ask(run, parse, *args)
                    if value is not None:
                        fresh[name][key] = value
        finally:  # an aborted pass keeps what it read, and nothing older
            self._results = replace(self._results, **fresh, ub_connect=ub_connect)

    def _poll_identity(self, run: SourceRun) -> None:
        """Slow-changing: the last known values are kept for what is not re-read."""
        address, lldp = dict(self._results.address), dict(self._results.lldp)
        chips = self._chips()
        try:
            for c in chips:
                if c.per_port:
                    ports = self._ask(
                        run, hccn_950.parse_dev_info, "-g", "-dev_info", "-i", str(c.device)
                    )
                    self._ports[(c.npu, c.chip)] = ports or self._ports.get(
                        (c.npu, c.chip), DevInfo(())
                    )
                    continue
                key, where = (c.npu, c.chip, 0), ("-i", str(c.device))
                found = self._ip(run, where)
                address.update({key: found} if found is not None else {})
                neighbour = self._ask(run, hccn_tool.parse_lldp, *where, "-lldp", "-g")
                lldp.update({key: neighbour} if neighbour is not None else {})
            self._identified = {(c.npu, c.chip) for c in chips}
        finally:
            self._results = replace(self._results, address=address, lldp=lldp)

    def _ip(self, run: SourceRun, where: tuple[str, ...]) -> NetAddress | None:
        """`-ip -g`; a port with no IP configured is an empty address list, not a failure."""
        args = (*where, "-ip", "-g")

        def call() -> NetAddress:
            try:
                return self._query(run, hccn_tool.parse_ip, *args)
            except SourceFailure as failure:
                if failure.reason == "no_ip":
                    return NetAddress(())
                raise

        return self._unsupported.attempt(run, call, args)


def _queries(
    where: tuple[str, ...], per_port: bool
) -> list[tuple[str, Callable[[str], Any], tuple[str, ...]]]:
    """(results field, parser, argv after the tool) of the queries each port gets per poll."""
    if per_port:  # 950: `hccn_tool -g -<query> -i N -u U -p P`
        return [
            ("link", hccn_tool.parse_link, ("-g", "-link", *where)),
            ("speed", hccn_950.parse_speed_table, ("-g", "-speed", *where)),
            ("link_stats", hccn_950.parse_link_stat_table, ("-g", "-link_stat", *where)),
            ("counters", hccn_tool.parse_stat, ("-g", "-stat", *where)),
            # blocks for its window; 200 ms is inside both the source's range (100-10000) and
            # the manual's (1-226)
            ("bandwidth", hccn_950.parse_bandwidth, ("-g", "-bandwidth", *where, *UB_WINDOW)),
        ]
    return [
        ("link", hccn_tool.parse_link, (*where, "-link", "-g")),
        ("speed", hccn_tool.parse_speed, (*where, "-speed", "-g")),
        ("link_stats", hccn_tool.parse_link_stat, (*where, "-link_stat", "-g")),
        ("counters", hccn_tool.parse_stat, (*where, "-stat", "-g")),
        ("optical", optical.parse_optical, (*where, "-optical", "-g")),
        ("health", hccn_tool.parse_net_health, (*where, "-net_health", "-g")),
    ]
