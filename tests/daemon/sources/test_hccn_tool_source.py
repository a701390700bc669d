"""The hccn_tool source over an injected runner and clock: argv, per-port results, not supported
hourly, the tool missing (off, not failing), a timeout that stops the pass, the 950 forms."""

from __future__ import annotations

from collections.abc import Sequence

from npumon.daemon.config import Config
from npumon.daemon.model.chips import ChipResults
from npumon.daemon.model.network import HccnResults, NetAddress
from npumon.daemon.model.snapshot import SourceStatus
from npumon.daemon.parsers.mapping import parse_mapping
from npumon.daemon.parsers.table import parse_info
from npumon.daemon.runner import CommandResult
from npumon.daemon.sources.hccn_tool import HccnSources, HccnTool, NicChip, nic_chips
from npumon.daemon.store import SnapshotStore
from tests.daemon.sources.fake_runner import TABLE, Clock, status
from tests.support import FIXTURES

HCCN = FIXTURES / "hccn_tool"
NOT_SUPPORTED = "The command is not supported on this product.\n"


def fixture(name: str) -> str:
    return (HCCN / name).read_text()


PORT_ANSWERS: dict[str, str] = {
    "-link -g": fixture("link-g__mind-cluster-faultdiag-doc.txt"),
    "-speed -g": "Speed: 200000 Mb/s\n",  # the print format: no public capture
    "-link_stat -g": fixture("link_stat-g__mind-cluster-faultdiag-kg-after.txt"),
    "-stat -g": fixture("stat-g__mind-cluster-faultdiag-modelarts-dev6.txt"),
    "-optical -g": fixture("optical-g__mind-cluster-faultdiag-kg-before.txt"),
    "-net_health -g": fixture("net_health-g__mind-cluster-resumable-doc-fault.txt"),
    "-ip -g": fixture("ip-g__arthurchiao-blog.txt"),
    "-lldp -g": fixture("lldp-g__arthurchiao-blog.txt"),
}


class HccnRunner:
    """Answers `-i <device> <query>` by the query; records every call's argv (after the tool)."""

    def __init__(self, devices: Sequence[int], answers: dict[str, str | CommandResult]) -> None:
        self.answers = {f"-i {d} {q}": a for d in devices for q, a in answers.items()}
        self.calls: list[str] = []

    def __call__(
        self, argv: Sequence[str], timeout: float, *, max_output_bytes: int = 0
    ) -> CommandResult:
        key = " ".join(argv[1:])
        self.calls.append(key)
        answer = self.answers.get(key, CommandResult(tuple(argv), "", NOT_SUPPORTED, 255, 0.01))
        if isinstance(answer, CommandResult):
            return answer
        return CommandResult(tuple(argv), answer, "", 0, 0.01)


def hccn_sources(
    runner: HccnRunner, clock: Clock, chips: list[NicChip]
) -> tuple[HccnSources, SnapshotStore, list[HccnResults]]:
    store = SnapshotStore(Config().throttle, clock=clock)
    store.publish_chips(
        ChipResults(table=parse_info(TABLE)), SourceStatus("npu_smi_table", True, 0.1, 1.0, 0)
    )
    published: list[HccnResults] = []

    def publish(results: HccnResults, state: SourceStatus) -> None:
        published.append(results)
        store.publish_hccn_tool(results, state)

    tool = HccnTool(["hccn_tool"], 5.0, runner)
    return HccnSources(tool, publish, lambda: chips, clock=clock, monotonic=clock), store, published


TWO = [NicChip(0, 0, 4, per_port=False), NicChip(1, 0, 5, per_port=False)]


def test_every_query_of_every_chip_by_its_physical_id_and_merged_per_port() -> None:
    clock = Clock()
    runner = HccnRunner([4, 5], PORT_ANSWERS)
    polls, store, _ = hccn_sources(runner, clock, TWO)
    polls.poll_all()
    assert runner.calls[:2] == ["-i 4 -ip -g", "-i 4 -lldp -g"]  # identity first
    assert runner.calls[4:10] == [
        f"-i 4 {q}"
        for q in (
            "-link -g",
            "-speed -g",
            "-link_stat -g",
            "-stat -g",
            "-optical -g",
            "-net_health -g",
        )
    ]
    assert len(runner.calls) == 2 * 2 + 2 * 6
    ports = {(p.npu, p.chip, p.port): p for p in store.latest().network.ports}
    assert set(ports) == {(0, 0, 0), (1, 0, 0)}
    p = ports[(1, 0, 0)]
    assert (p.up, p.speed_bytes_per_second) == (True, 200000 * 1e6 / 8)
    assert (p.carrier_up_changes, p.carrier_down_changes) == (2, None)
    assert dict(p.roce_errors) == {"rx_error_packets": 13, "tx_error_packets": 77}
    assert p.health_state == "fault"
    assert p.optical is not None and p.optical.temperature_celsius == 47.0
    assert dict(p.info) == {"ip": "29.1.112.213", "peer_port": "400GE1/1/20:2"}
    assert status(store, "hccn_tool") == (True, {})
    assert status(store, "hccn_tool_identity") == (True, {})


def test_a_chip_without_a_nic_is_counted_once_and_asked_again_an_hour_later() -> None:
    clock = Clock()
    runner = HccnRunner([4], PORT_ANSWERS)  # device 5 answers "not supported" to everything
    polls, store, _ = hccn_sources(runner, clock, TWO)
    polls.poll_hccn_tool()
    polls.poll_hccn_tool()
    assert sum(c.startswith("-i 5 ") for c in runner.calls) == 6  # not in the second run
    assert status(store, "hccn_tool") == (True, {"not_supported": 6})
    clock.now += 3601
    polls.poll_hccn_tool()
    assert sum(c.startswith("-i 5 ") for c in runner.calls) == 12


def test_no_hccn_tool_is_off_not_failing_and_checked_again_hourly() -> None:
    clock = Clock()
    missing = CommandResult(("hccn_tool",), "", "No such file", None, 0.0, not_found=True)

    class Missing(HccnRunner):
        def __call__(
            self, argv: Sequence[str], timeout: float, *, max_output_bytes: int = 0
        ) -> CommandResult:
            self.calls.append(" ".join(argv[1:]))
            return missing

    runner = Missing([], {})
    polls, store, published = hccn_sources(runner, clock, TWO)
    polls.poll_all()
    polls.poll_hccn_tool()
    assert runner.calls == ["-i 4 -ip -g"]  # one call told: no more this hour
    assert polls.is_off() and published == []
    assert [s.source for s in store.latest().sources] == ["npu_smi_table"]  # no hccn status
    clock.now += 3601
    polls.poll_hccn_tool()
    assert len(runner.calls) == 2


def test_a_timeout_stops_the_pass_and_keeps_what_was_read() -> None:
    clock = Clock()
    hang = CommandResult(("hccn_tool",), "", "", None, 5.0, timed_out=True)
    runner = HccnRunner([4, 5], PORT_ANSWERS)
    runner.answers["-i 4 -optical -g"] = hang
    polls, store, published = hccn_sources(runner, clock, TWO)
    polls.poll_hccn_tool()
    assert runner.calls[-1] == "-i 4 -optical -g" and len(runner.calls) == 5  # not device 5
    assert set(published[-1].link) == {(0, 0, 0)}
    assert status(store, "hccn_tool") == (False, {"timeout": 1})


def test_a_port_without_an_ip_is_an_empty_address_not_a_failure() -> None:
    clock = Clock()
    runner = HccnRunner(
        [4],
        {
            **PORT_ANSWERS,
            "-ip -g": CommandResult(
                ("hccn_tool",), "", "Get ipconf failed, because no ip was preset there!\n", 1, 0.01
            ),
        },
    )
    polls, store, published = hccn_sources(runner, clock, TWO[:1])
    polls.poll_hccn_tool_identity()
    assert published[-1].address == {(0, 0, 0): NetAddress(())}
    assert status(store, "hccn_tool_identity") == (True, {})
    assert dict(store.latest().network.ports[0].info) == {"peer_port": "400GE1/1/20:2"}


def test_950_ports_come_from_dev_info_and_are_asked_in_the_per_port_form() -> None:
    clock = Clock()
    runner = HccnRunner([], {})
    runner.answers = {
        "-g -dev_info -i 0": fixture("dev_info-g__driver-950-doc.txt"),
        **{
            f"-g -link -i 0 -u 0 -p {p}": fixture("link-g-u-p__driver-950-doc.txt")
            for p in (4, 5, 6)
        },
        "-g -speed -i 0 -u 0 -p 4": fixture("speed-g-u-p__driver-950-doc.txt"),
        "-g -link_stat -i 0 -u 0 -p 4": fixture("link_stat-g-u-p__driver-950-doc.txt"),
        "-g -stat -i 0 -u 0 -p 4": fixture("stat-g-u-p__driver-950-doc.txt"),
        "-g -bandwidth -i 0 -u 0 -p 4 -time 200": fixture("bandwidth-g-u-p__driver-950-doc.txt"),
        "-g -ub_connect -i 0": fixture("ub_connect-g__driver-950-doc.txt"),
    }
    polls, store, _ = hccn_sources(runner, clock, [NicChip(0, 0, 0, per_port=True)])
    polls.poll_all()
    ports = {p.port: p for p in store.latest().network.ports}
    assert sorted(ports) == [4, 5, 6]
    assert ports[4].up is False and ports[4].speed_bytes_per_second == 400e9 / 8
    assert (ports[4].carrier_up_changes, ports[4].carrier_down_changes) == (2, 2)
    assert dict(ports[4].receive_errors)["crc"] == 0
    assert (ports[4].lanes, ports[4].max_lanes, ports[4].lane_state) == (4, 4, "normal")
    assert dict(ports[4].bandwidth) == {"transmit": 0.0, "receive": 266.84e6}
    assert [p.ub_port_state for p in ports.values()] == ["up", "down", "partial"]
    (chip,) = store.latest().network.chips
    assert (chip.npu, chip.chip, chip.ub_link_state) == (0, 0, "partial")
    assert ports[5].speed_bytes_per_second is None  # refused: no sample, never 0


def test_nic_chips_use_the_physical_id_module() -> None:
    mapping = parse_mapping((FIXTURES / "npu-smi" / "info_m_910b_8npu_with_mcu.txt").read_text())
    results = ChipResults(table=parse_info(TABLE), mapping=mapping)
    assert nic_chips(results) == [NicChip(0, 0, 0, False), NicChip(1, 0, 1, False)]
    assert nic_chips(ChipResults()) == []


def test_a_chip_the_identity_job_has_not_read_asks_for_an_identity_run() -> None:
    clock = Clock()
    runner = HccnRunner([4, 5], PORT_ANSWERS)
    chips = TWO[:1]
    polls, _, _ = hccn_sources(runner, clock, chips)
    due: list[bool] = []
    polls.identity_due = lambda: due.append(True)
    polls.poll_hccn_tool()  # identity has not run at all yet
    assert due == [True]
    polls.poll_hccn_tool_identity()
    polls.poll_hccn_tool()
    assert due == [True]  # every chip read: not due
    chips.append(TWO[1])  # npu-smi learned another chip's physical ID
    polls.poll_hccn_tool()
    assert due == [True, True]


def test_nic_chips_tell_the_950_by_the_table_layout_not_the_chip_name() -> None:
    """The manual's 950 table names its chip `xxx`; the NPU-ID-only layout says 950, and a
    chip name containing "950" in an older layout does not."""
    table = parse_info((FIXTURES / "npu-smi" / "info_950_1npu_doc.txt").read_text())
    assert nic_chips(ChipResults(table=table)) == [NicChip(0, 0, 0, per_port=True)]
    renamed = parse_info(TABLE.replace("910B4-1", "950B4-1"))
    assert all(not c.per_port for c in nic_chips(ChipResults(table=renamed)))


def test_a_tool_gone_after_a_reload_withdraws_what_the_old_agent_published() -> None:
    """A reload that points hccn_tool at a path with no tool: the new source finds it missing
    and the ports and npumon_source_* of hccn_tool leave, rather than freezing at up 1 (which
    kept NpumonDataStale firing for ever)."""
    clock = Clock()
    old, store, _ = hccn_sources(HccnRunner([4, 5], PORT_ANSWERS), clock, TWO)
    old.poll_all()
    before = {s.source: s.up for s in store.latest().sources}
    assert before["hccn_tool"] is True and store.latest().network.ports  # served before reload
    missing = CommandResult(("hccn_tool",), "", "No such file", None, 0.0, not_found=True)

    class Missing(HccnRunner):
        def __call__(
            self, argv: Sequence[str], timeout: float, *, max_output_bytes: int = 0
        ) -> CommandResult:
            return missing

    adopted = SnapshotStore(Config().throttle, clock=clock)
    adopted.adopt(store)  # what the reloaded agent starts from
    new = HccnSources(
        HccnTool(["/nonexistent/hccn_tool"], 5.0, Missing([], {})),
        adopted.publish_hccn_tool,
        lambda: TWO,
        withdraw=adopted.withdraw_hccn_tool,
        clock=clock,
        monotonic=clock,
    )
    assert "hccn_tool" in {s.source for s in adopted.latest().sources}  # frozen until it runs
    new.poll_hccn_tool()
    assert new.is_off()
    assert [s.source for s in adopted.latest().sources] == ["npu_smi_table"]
    assert adopted.latest().network.ports == ()
