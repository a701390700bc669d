"""The DCMI backend through the daemon: one simulated node read through npu-smi and through the
gcc-built fake libdcmi.so gives the same exposition; a hang, a missing symbol, -8255 and -8002
each leave npu-smi serving what DCMI cannot (a refused function: only the fields it fills).
The helper and the fake library are real processes; npu-smi is the simulator answering in this
process (these tests are about choosing and merging the two; its process boundary is tested in
tests/simulator and the fleet tests)."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from npumon.daemon.app import Agent
from npumon.daemon.config import parse_config
from npumon.daemon.model.snapshot import BackendInfo
from npumon.daemon.runner import CommandResult
from npumon.daemon.sources.dcmi.library import TrustPolicy
from npumon.simulator.dcmi import state_text
from npumon.simulator.loader import load_scenario
from npumon.simulator.state import node_state
from tests.helpers.exposition import Samples, names, samples, value
from tests.helpers.fake_dcmi import STATE_ENV, build_fake_dcmi
from tests.helpers.simulator_runner import NPU_SMI, SimulatorRunner
from tests.support import FROZEN_TIME

pytestmark = pytest.mark.integration

AT = 1000.0  # simulated seconds: NPU 5 of 910b-8 in Alarm with two codes, nothing hangs
_VOLATILE = re.compile(
    r"^(npumon_source_duration_seconds|npumon_scrape_collector_duration_seconds"
    r"|npumon_backend_info)\{.*\n",
    re.MULTILINE,
)
DCMI_ONLY = (  # no npu-smi query gives these
    "npu_voltage_volts",
    "npu_pcie_bandwidth_bytes_per_second",
    "npu_vnpu_aicore_utilization_ratio",
    "npu_vnpu_memory_total_bytes",
    "npu_vnpu_memory_used_bytes",
)
_DCMI_ONLY = re.compile(rf"^(# [A-Z]+ )?({'|'.join(DCMI_ONLY)})\b.*\n", re.MULTILINE)


def _node(tmp_path: Path, scenario: str, extra: str = "", at: float = AT) -> Path:
    """The fake's state and a /proc with the simulated processes' names."""
    loaded = load_scenario(scenario)
    node = node_state(loaded, at)
    state = tmp_path / f"{scenario}.state"
    state.write_text(state_text(node, loaded.vnpus, loaded, at) + extra)
    for card in node.cards:
        for chip in card.chips:
            for process in chip.processes:
                folder = tmp_path / "proc" / str(process.pid)
                folder.mkdir(parents=True, exist_ok=True)
                (folder / "status").write_text(f"Name:\t{process.name}\nUmask:\t0022\n")
    return state


def _agent(
    tmp_path: Path,
    scenario: str,
    backend: str,
    *omit: str,
    timeout: str = "20s",
    calls: list[tuple[str, ...]] | None = None,
    at: float = AT,
) -> Agent:
    library = build_fake_dcmi(tmp_path / ("lib-" + "-".join(omit)), *omit)
    config = parse_config(
        {
            "npu_smi": {
                "command": [NPU_SMI, "--scenario", scenario],
            },
            "chips": {"timeout": timeout, "backend": backend},
            "dcmi": {"library": str(library)},
            "kubernetes": {"pod_resources_socket": "/nonexistent/kubelet.sock"},
            "hccn_tool": {"command": ["/nonexistent/hccn_tool"]},
            # per link: both backends' HCCS answers compared link by link
            "collectors": {"enabled": ["interconnect_detail"]},
        }
    )
    seen = calls if calls is not None else []
    simulator = SimulatorRunner(at)

    def runner(argv: Sequence[str], timeout: float, **options: Any) -> CommandResult:
        if "info" in argv:  # npu-smi's (hccn_tool's are not counted)
            seen.append(tuple(argv[argv.index("info") :]))
        return simulator(argv, timeout, **options)

    return Agent(
        config,
        runner=runner,
        clock=lambda: FROZEN_TIME,
        proc_root=tmp_path / "proc",
        dcmi_trust=TrustPolicy(owner_uid=os.getuid(), checked_below=tmp_path),
    )


def _polled(agent: Agent) -> str:
    """The exposition of what the polls so far published (no further npu-smi call)."""
    return agent.collector.exposition().decode()


def _two_table_polls(agent: Agent) -> Samples:
    """The samples after a start-up table poll (the cross-check) and one more; agent stopped."""
    try:
        agent.sources.poll_table()
        agent.sources.poll_table()
        return samples(_polled(agent))
    finally:
        agent.stop()


def _table_exposition(agent: Agent, again: list[tuple[str, ...]] | None = None) -> str:
    """The exposition after a start (table, identity, table, every source once); given the
    agent's call list (``again``), then a mark ("again",) in it and the table, detail and health
    polls once more."""
    agent.sources.poll_table()
    agent.sources.poll_identity()
    agent.sources.poll_table()
    try:
        text = agent.collect_once().decode()
        if again is not None:
            again.append(("again",))
            agent.sources.poll_table()
            agent.sources.poll_detail()
            agent.sources.poll_health()
    finally:
        agent.stop()
    return text


@pytest.mark.parametrize("scenario", ["910b-8", "a3-8x2", "310p-duo"])
def test_one_node_through_both_backends_is_one_exposition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: str
) -> None:
    monkeypatch.setenv(STATE_ENV, str(_node(tmp_path, scenario)))
    cli = _table_exposition(_agent(tmp_path, scenario, "cli"))
    calls: list[tuple[str, ...]] = []
    dcmi_agent = _agent(tmp_path, scenario, "auto", calls=calls)
    dcmi = _table_exposition(dcmi_agent, again=calls)
    between = calls[calls.index(("again",)) + 1 :]
    calls = calls[: calls.index(("again",))]
    # npu-smi ran once for the table (the cross-check) and once for each detail query of each
    # NPU or chip (the check of DCMI's first answer after it, or the answer where DCMI has
    # none), and not at all in the polls after
    assert calls.count(("info",)) == 1
    served = {"usages", "common", "ecc", "health", "memory"}
    details = Counter(c for c in calls if c[1:2] == ("-t",) and c[2] in served)
    assert set(details.values()) == {1} and {c[2] for c in details} == served
    assert between == []
    # the interconnect likewise: hccs, hccs-bw, pcie-err and sio-info once per chip (the check,
    # or the answer where DCMI has none: 310P's own PCIe counters, SIO off A3)
    node = node_state(load_scenario(scenario), AT)
    chips = sum(len(card.chips) for card in node.cards)
    asked = Counter(c[2] for c in calls if c[1:2] == ("-t",))
    p310, a3 = node.family.p310, node.family.a3
    assert (asked["hccs"], asked["hccs-bw"]) == (chips, chips)
    assert (asked["pcie-err"], asked["sio-info"]) == (chips, chips)
    found = samples(dcmi)
    if not p310:
        links = {
            "npu_hccs_transmit_packets_total",
            "npu_hccs_up",
            "npu_hccs_transmit_bandwidth_bytes_per_second",
            "npu_pcie_errors_total",
        }
        assert links <= names(found)
        assert ("npu_sio_crc_errors_total" in names(found)) == a3
        # the fake refuses utilization type 14 here, as the driver does: AI Cube came from
        # the multi-utilization call
        assert "npu_aicube_utilization_ratio" in names(found)
    assert value(found, "npumon_backend_info", backend="dcmi", reason="cross_check_passed") == 1
    assert dcmi_agent.chip_backend.helper is not None and dcmi_agent.chip_backend.helper.starts == 1
    if scenario == "910b-8":  # the alarm's codes came through dcmi_get_device_errorcode_v2
        codes = {
            dict(labels).get("code")
            for name, labels in found
            if name == "npu_error_code_info" and dict(labels).get("npu") == "5"
        }
        assert codes == {"A4025021", "8C03A000"}
    assert _VOLATILE.sub("", _DCMI_ONLY.sub("", dcmi)) == _VOLATILE.sub("", cli)


@pytest.mark.parametrize(
    "at",
    [
        200.0,  # NPU 1 overheating and throttled, NPU 2 idle
        350.0,  # NPU 3's heartbeat lost (a Critical chip npu-smi prints with zeros)
    ],
)
def test_the_950_through_dcmi_v2_is_the_cli_exposition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: float
) -> None:
    """`950-4` under `backend: cli` (the V2 npu-smi) and under `backend: dcmi` (the fake's
    dcmiv2_* on a 950 board): every family the cli serves, equal; npu-smi not run by the table,
    detail and health polls after the first cross-check."""
    monkeypatch.setenv(STATE_ENV, str(_node(tmp_path, "950-4", at=at)))
    cli = _table_exposition(_agent(tmp_path, "950-4", "cli", at=at))
    calls: list[tuple[str, ...]] = []
    dcmi_agent = _agent(tmp_path, "950-4", "auto", calls=calls, at=at)
    dcmi = _table_exposition(dcmi_agent, again=calls)
    between = calls[calls.index(("again",)) + 1 :]
    calls = calls[: calls.index(("again",))]
    assert calls.count(("info",)) == 1
    assert between == []
    found = samples(dcmi)
    assert value(found, "npumon_backend_info", backend="dcmi", reason="cross_check_passed") == 1
    assert dcmi_agent.chip_backend.helper is not None and dcmi_agent.chip_backend.helper.starts == 1
    assert "npu_aicube_utilization_ratio" in names(found)
    assert _VOLATILE.sub("", _DCMI_ONLY.sub("", dcmi)) == _VOLATILE.sub("", cli)


def test_a_hung_call_is_killed_and_npu_smi_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = _node(tmp_path, "910b-8", "hang dcmi_get_device_hbm_info\n")
    monkeypatch.setenv(STATE_ENV, str(state))
    agent = _agent(tmp_path, "910b-8", "dcmi", timeout="3s")
    try:
        agent.sources.poll_table()  # the call hangs: the helper's deadline, then npu-smi
        assert agent.store.latest().backend == BackendInfo("cli", "dcmi_timeout")
        agent.sources.poll_table()  # within the backoff: npu-smi, no new helper
        found = samples(_polled(agent))
        assert agent.chip_backend.helper is not None and agent.chip_backend.helper.starts == 1
    finally:
        agent.stop()
    assert value(found, "npumon_backend_info", backend="cli", reason="dcmi_backoff") == 1
    assert value(found, "npumon_source_up", source="npu_smi_table") == 1
    assert (
        value(found, "npumon_source_failures_total", source="npu_smi_table", reason="dcmi_timeout")
        == 1
    )
    assert value(found, "npu_hbm_total_bytes", npu="0", chip="0") == 65536 * 1024 * 1024


_REFUSALS = re.compile(r'^npumon_source_failures_total\{reason="dcmi_[a-z_]+".*\n', re.MULTILINE)
_FAILURES_HEADER = re.compile(r"^# (HELP|TYPE) npumon_source_failures_total .*\n", re.MULTILINE)


def _without_refusals(text: str) -> str:
    """The exposition without DCMI's refusals (and the failures family's header when they were
    its only samples, as npu-smi alone then has none)."""
    text = _REFUSALS.sub("", text)
    return text if "npumon_source_failures_total{" in text else _FAILURES_HEADER.sub("", text)


@pytest.mark.parametrize(
    ("omit", "extra", "reason", "source", "table_runs"),
    [
        # the table and -t common both mix power with other functions
        (("dcmi_get_device_power_info",), "", "dcmi_missing_symbol", "npu_smi_table", 3),
        ((), "fail dcmi_get_device_temperature -8002\n", "dcmi_permission", "npu_smi_table", 3),
        # -t common alone has the frequencies: the table stays DCMI's
        (("dcmi_get_device_aicore_info",), "", "dcmi_missing_symbol", "npu_smi_detail", 1),
    ],
)
def test_a_function_dcmi_cannot_give_is_served_per_field_by_npu_smi(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    omit: tuple[str, ...],
    extra: str,
    reason: str,
    source: str,
    table_runs: int,
) -> None:
    monkeypatch.setenv(STATE_ENV, str(_node(tmp_path, "910b-8", extra)))
    cli = _table_exposition(_agent(tmp_path, "910b-8", "cli"))
    calls: list[tuple[str, ...]] = []
    dcmi = _table_exposition(_agent(tmp_path, "910b-8", "auto", *omit, calls=calls))
    found = samples(dcmi)
    # DCMI still serves; the refusal is counted once (not asked again this hour)
    assert value(found, "npumon_backend_info", backend="dcmi", reason="cross_check_passed") == 1
    assert value(found, "npumon_source_failures_total", source=source, reason=reason) == 1
    assert value(found, "npumon_source_up", source="npu_smi_table") == 1
    # npu-smi ran the queries that give the refused function's fields, and each detail query
    # once for the check of DCMI's first answer (one run serving both)
    assert calls.count(("info",)) == table_runs
    details = Counter(c for c in calls if c[1:3] in (("-t", "usages"), ("-t", "memory")))
    assert calls.count(("info", "-t", "common", "-i", "0")) == 1 and set(details.values()) == {1}
    # and what it filled is what backend cli shows
    assert _without_refusals(_VOLATILE.sub("", _DCMI_ONLY.sub("", dcmi))) == _VOLATILE.sub("", cli)


def test_minus_8255_is_absent_and_not_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """310P power: NA through npu-smi, -8255 through DCMI; both leave the series out."""
    monkeypatch.setenv(STATE_ENV, str(_node(tmp_path, "310p-duo")))
    agent = _agent(tmp_path, "310p-duo", "dcmi")
    found = _two_table_polls(agent)
    assert value(found, "npumon_backend_info", backend="dcmi", reason="configured") == 1
    assert "npu_power_watts" not in names(found)
    assert value(found, "npu_temperature_celsius", npu="0", chip="0") is not None


def test_a_cross_check_disagreement_turns_dcmi_off_in_auto(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = _node(tmp_path, "910b-8")
    state.write_text(re.sub(r" temp=(\d+)", lambda m: f" temp={int(m[1]) + 20}", state.read_text()))
    monkeypatch.setenv(STATE_ENV, str(state))
    agent = _agent(tmp_path, "910b-8", "auto")
    found = _two_table_polls(agent)
    assert (
        value(found, "npumon_backend_info", backend="cli", reason="cross_check_temperature_celsius")
        == 1
    )
    assert (
        value(found, "npumon_source_failures_total", source="npu_smi_table", reason="cross_check")
        == 8
    )


@pytest.mark.parametrize("scenario", ["910b-8", "310p-duo"])
def test_voltage_pcie_bandwidth_and_vnpus_come_only_through_dcmi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: str
) -> None:
    """The simulator's values, in volts, bytes per second and ratios; no PCIe series where the
    fake answers -8255 (310P), no vNPU series where the chip has none; none through npu-smi."""
    monkeypatch.setenv(STATE_ENV, str(_node(tmp_path, scenario)))
    node = node_state(load_scenario(scenario), AT)
    chip = node.cards[0].chips[0]
    where = {"npu": str(chip.npu), "chip": str(chip.chip)}
    found = samples(_table_exposition(_agent(tmp_path, scenario, "dcmi")))
    volts = value(found, "npu_voltage_volts", **where)
    assert volts == pytest.approx((80 + chip.aicore_percent // 10) * 0.01)
    pcie = [dict(labels) for name, labels in found if name == DCMI_ONLY[1]]
    if scenario == "910b-8":
        assert len(pcie) == 8 * 2 * 3 * 3  # chips x directions x kinds x stats
        avg = 1 + chip.aicore_percent // 10  # MB/ms, receive posted at twice the rate
        assert value(
            found, DCMI_ONLY[1], **where, direction="receive", kind="posted", stat="avg"
        ) == pytest.approx(2 * avg * 1e9)
        assert "npu_vnpu_memory_total_bytes" not in names(found)  # no vNPUs: -8255
    else:
        assert pcie == []
        vnpu = {"npu": "96", "chip": "1", "vnpu_id": "101"}
        busy = next(c for c in node.cards if c.npu == 96).chips[1].aicore_percent / 100
        assert value(found, "npu_vnpu_aicore_utilization_ratio", **vnpu) == pytest.approx(busy)
        total = 24576 * 1024 * 1024
        assert value(found, "npu_vnpu_memory_total_bytes", **vnpu) == total
        used = value(found, "npu_vnpu_memory_used_bytes", **vnpu)
        assert used == pytest.approx(busy * total, rel=0.01)
        assert {dict(labels)["vnpu_id"] for n, labels in found if n == DCMI_ONLY[2]} == {
            "100",
            "101",
        }
    cli = samples(_table_exposition(_agent(tmp_path, scenario, "cli")))
    assert not set(DCMI_ONLY) & names(cli)


_LINK_CHECK = re.compile(
    r'^npumon_source_failures_total\{reason="cross_check",source="npu_smi_health"\}.*\n',
    re.MULTILINE,
)


@pytest.mark.parametrize(
    ("omit", "extra", "refused"),
    [
        # npu-smi serves -t hccs-bw; DCMI the rest
        (("dcmi_get_hccs_link_bandwidth_info",), "", {"dcmi_missing_symbol": 1}),
        # the board's id gives the port range of -t hccs and -t hccs-bw, and whether an A3
        # reads -t pcie-err through DCMI
        (("dcmi_get_mainboard_id",), "", {"dcmi_missing_symbol": 1}),
        # HCCS, PCIe errors, SIO (and the vNPUs, DCMI's alone) are all dcmi_get_device_info
        ((), "fail dcmi_get_device_info -8002\n", {"dcmi_permission": 4}),
    ],
)
def test_an_interconnect_function_dcmi_cannot_give_is_npu_smis(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    omit: tuple[str, ...],
    extra: str,
    refused: dict[str, int],
) -> None:
    monkeypatch.setenv(STATE_ENV, str(_node(tmp_path, "a3-8x2", extra)))
    cli = _table_exposition(_agent(tmp_path, "a3-8x2", "cli"))
    calls: list[tuple[str, ...]] = []
    dcmi = _table_exposition(_agent(tmp_path, "a3-8x2", "auto", *omit, calls=calls))
    found = samples(dcmi)
    for reason, count in refused.items():  # once per function, not per chip
        assert (
            value(found, "npumon_source_failures_total", source="npu_smi_health", reason=reason)
            == count
        )
    # once per die: npu-smi's answer where DCMI has none, else the check of DCMI's
    queried = Counter(c[2] for c in calls if c[1:2] == ("-t",))
    for query in ("hccs", "hccs-bw", "pcie-err", "sio-info"):
        assert queried[query] == 16, query
    assert _without_refusals(_VOLATILE.sub("", _DCMI_ONLY.sub("", dcmi))) == _VOLATILE.sub("", cli)


def test_links_that_disagree_with_npu_smi_are_npu_smis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A board id of an Atlas 9000 SuperPoD moves DCMI's ports to 2-7; npu-smi's stand-in still
    prints 1-7: the check sees 6 links against 7 and npu-smi serves both link queries."""
    state = _node(tmp_path, "910b-8")
    state.write_text(state.read_text().replace(" mainboard=20 ", " mainboard=28 "))
    monkeypatch.setenv(STATE_ENV, str(state))
    cli = _table_exposition(_agent(tmp_path, "910b-8", "cli"))
    dcmi = _table_exposition(_agent(tmp_path, "910b-8", "auto"))
    found = samples(dcmi)
    assert (
        value(found, "npumon_source_failures_total", source="npu_smi_health", reason="cross_check")
        == 16  # hccs and hccs-bw of 8 chips
    )
    assert _LINK_CHECK.sub("", _VOLATILE.sub("", _DCMI_ONLY.sub("", dcmi))) == _VOLATILE.sub(
        "", cli
    )
