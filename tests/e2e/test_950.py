"""An Ascend 950 node end to end: the simulator's 950-4 scenario (npu-smi built with
NPU_SMI_V2: no Chip Count / Chip ID lines, `-c` refused) through every npu-smi source."""

from __future__ import annotations

import pytest

from npumon.daemon.app import Agent
from npumon.daemon.config import parse_config
from tests.helpers.exposition import Samples, samples, value

pytestmark = pytest.mark.integration  # the agent runs the simulator's npu-smi

SOURCES = ("npu_smi_table", "npu_smi_detail", "npu_smi_health", "npu_smi_identity")


def collect(monkeypatch: pytest.MonkeyPatch, at: float, *, hccn: bool = False) -> Samples:
    monkeypatch.setenv("NPUMON_SIM_TIME", str(at))
    command = ["npumon-sim-npu-smi", "--scenario", "950-4"]
    settings: dict[str, object] = {
        "npu_smi": {"command": command},
        "chips": {"timeout": "20s"},
    }
    if hccn:
        tool = ["npumon-sim-hccn-tool", "--scenario", "950-4"]
        settings["hccn_tool"] = {"command": tool, "timeout": "20s"}
        settings["collectors"] = {"enabled": ["network_detail"]}  # lane state, packets by type
    return samples(Agent(parse_config(settings)).collect_once().decode())


def test_950_detail_tier_is_up_and_serves_its_families(monkeypatch: pytest.MonkeyPatch) -> None:
    found = collect(monkeypatch, 200.0)  # NPU 1 overheating at 900 MHz under load
    for source in SOURCES:
        assert value(found, "npumon_source_up", source=source) == 1, source
    failures = [dict(labels) for name, labels in found if name == "npumon_source_failures_total"]
    assert {f["reason"] for f in failures} == {"not_supported"}  # -t hccs / hccs-bw: not on 950
    chip = {"npu": "0", "chip": "0"}
    for family in (
        "npu_aicpu_utilization_ratio",
        "npu_aivector_utilization_ratio",
        "npu_aicube_utilization_ratio",
        "npu_ctrlcpu_utilization_ratio",
        "npu_utilization_ratio",
        "npu_hbm_bandwidth_utilization_ratio",
        "npu_memory_bandwidth_utilization_ratio",
        "npu_aicore_frequency_hertz",
        "npu_hbm_temperature_celsius",
    ):
        assert value(found, family, **chip) is not None, family
    assert value(found, "npu_aicore_rated_frequency_hertz", **chip) == 1.65e9
    assert value(found, "npu_aicore_cores", **chip) == 32
    assert value(found, "npu_hbm_ecc_errors_total", **chip, bits="double") == 0
    assert value(found, "npu_throttled", npu="1", chip="0", reason="thermal") == 1
    assert value(found, "npu_aicore_frequency_hertz", npu="1", chip="0") == 9e8
    assert value(found, "npu_throttled", **chip, reason="thermal") == 0


def test_950_chip_with_heartbeat_loss_is_lost_not_zeros(monkeypatch: pytest.MonkeyPatch) -> None:
    found = collect(monkeypatch, 350.0)  # NPU 3's heartbeat lost
    assert value(found, "npumon_chips") == 4  # npu-smi still lists it: still a chip
    lost = {"npu": "3", "chip": "0"}
    assert value(found, "npu_health_state", **lost, state="heartbeat_lost") == 1
    assert value(found, "npu_health_state", **lost, state="ok") == 0
    assert value(found, "npu_health_state", npu="0", chip="0", state="heartbeat_lost") == 0
    assert value(found, "npu_power_watts", npu="3", chip="0") is None
    assert value(found, "npu_temperature_celsius", npu="3", chip="0") is None
    missing = {"source": "npu_smi_table", "reason": "chip_missing"}
    assert value(found, "npumon_source_failures_total", **missing) == 1
    assert value(found, "npu_power_watts", npu="0", chip="0") is not None


def test_950_ub_ports_through_its_hccn_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    """NPU 1's UB link is down at 150 s: its ports have no speed and lane state abnormal; NPU 0
    counts CRC errors and retries; every port serves lanes, packets and bandwidth."""
    found = collect(monkeypatch, 150.0, hccn=True)
    for source in ("hccn_tool", "hccn_tool_identity"):
        assert value(found, "npumon_source_up", source=source) == 1, source
    down = {"npu": "1", "chip": "0", "port": "5"}
    assert value(found, "npu_network_up", **down) == 0
    assert value(found, "npu_network_speed_bytes", **down) is None
    assert value(found, "npu_ub_lane_state", **down, state="abnormal") == 1
    assert value(found, "npu_ub_port_state", **down, state="initial") == 1
    assert value(found, "npu_ub_link_state", npu="1", chip="0", state="down") == 1
    assert value(found, "npu_ub_link_state", npu="0", chip="0", state="up") == 1
    assert value(found, "npu_ub_bandwidth_bytes_per_second", **down, direction="receive") == 0
    up = {"npu": "0", "chip": "0", "port": "6"}
    assert value(found, "npu_ub_lanes", **up) == 4
    assert value(found, "npu_network_receive_errors_total", **up, kind="crc") == 300
    assert value(found, "npu_ub_retries_total", **up, kind="request") == 600
    assert value(found, "npu_ub_packets_total", **up, direction="receive", type="ub_compact")
    assert value(found, "npu_ub_bandwidth_bytes_per_second", **up, direction="transmit")
