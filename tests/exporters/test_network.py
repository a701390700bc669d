"""The network, optical and interconnect collectors: node_exporter's shape, fixed label sets,
no sample for what no tool said (never 0), and a failing tool leaves the other families alone."""

from __future__ import annotations

from dataclasses import replace

from prometheus_client import CollectorRegistry, generate_latest

from npumon.daemon.model.network import HccsLink, OpticalReport
from npumon.daemon.model.network_view import ChipLinks, NetworkView, PortReading
from npumon.daemon.model.snapshot import EMPTY_SNAPSHOT
from npumon.exporters.collector import NpuCollector
from tests.helpers.exposition import promtool_problems, samples, value

PORT = {"npu": "0", "chip": "0", "port": "0"}


def exposition(view: NetworkView) -> str:
    snap = replace(EMPTY_SNAPSHOT, network=view)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(NpuCollector(lambda: snap, "test"))
    return generate_latest(registry).decode()


def test_a_port_with_only_its_link_known_has_only_that_sample() -> None:
    text = exposition(NetworkView(ports=(PortReading(0, 0, 0, up=False),)))
    found = samples(text)
    assert value(found, "npu_network_up", **PORT) == 0
    assert not [n for n, _ in found if n.startswith(("npu_network_speed", "npu_roce", "npu_opt"))]
    assert value(found, "npu_network_carrier_changes_total", **PORT) is None


def test_every_family_with_its_labels_and_a_clean_promtool_lint() -> None:
    port = PortReading(
        0,
        0,
        0,
        up=True,
        speed_bytes_per_second=25e9,
        carrier_up_changes=3,
        carrier_down_changes=2,
        traffic=(("receive_bytes", 10), ("transmit_packets", 4)),
        receive_errors=(("fcs", 7),),
        pause_frames=(("receive", "pfc", 9),),
        pfc_frames=(("receive", "3", 9),),
        roce_errors=(("retransmissions", 5),),
        health_state="fault",
        optical=OpticalReport(
            present=True,
            temperature_celsius=47.0,
            rx_power_watts=((1, 1e-3),),
            thresholds=(("rx_power_watts", "low", 1.445e-4),),
        ),
        info=(("ip", "10.0.0.1"), ("peer_port", "400GE1/1/1:1")),
    )
    chip = ChipLinks(
        0,
        0,
        hccs=(HccsLink(6, crc_errors=42),),
        hccs_healthy=False,
        hccs_first_error_link=6,
        hccs_bandwidth=((6, 1e9, 2e9),),
        pcie_errors=(("rx", 991),),
        sio_crc_errors=(("receive", 1),),
    )
    healthy = ChipLinks(0, 1, hccs_healthy=True)  # first error lane NA
    text = exposition(NetworkView(ports=(port,), chips=(chip, healthy)))
    assert promtool_problems(text) == ""
    found = samples(text)
    assert value(found, "npu_network_carrier_changes_total", **PORT) == 5
    assert value(found, "npu_network_receive_bytes_total", **PORT) == 10
    assert value(found, "npu_network_receive_errors_total", **PORT, kind="fcs") == 7
    assert (
        value(found, "npu_network_pause_frames_total", **PORT, direction="receive", kind="pfc") == 9
    )
    assert (
        value(found, "npu_network_pfc_frames_total", **PORT, direction="receive", priority="3") == 9
    )
    assert value(found, "npu_roce_errors_total", **PORT, kind="retransmissions") == 5
    assert value(found, "npu_network_health_state", **PORT, state="fault") == 1
    assert value(found, "npu_network_health_state", **PORT, state="success") == 0
    assert (
        value(
            found,
            "npu_network_info",
            **PORT,
            ip="10.0.0.1",
            peer_switch="",
            peer_port="400GE1/1/1:1",
        )
        == 1
    )
    assert value(found, "npu_optical_rx_power_watts", **PORT, lane="1") == 1e-3
    assert value(found, "npu_optical_rx_power_threshold_watts", **PORT, bound="low") == 1.445e-4
    assert value(found, "npu_optical_present", **PORT) == 1
    assert value(found, "npu_hccs_up", npu="0", chip="0") == 0  # one health for the chip
    assert value(found, "npu_hccs_first_error_link", npu="0", chip="0") == 6
    assert value(found, "npu_hccs_up", npu="0", chip="1") == 1
    assert value(found, "npu_hccs_first_error_link", npu="0", chip="1") is None
    assert value(found, "npu_hccs_crc_errors_total", npu="0", chip="0", link="6") == 42
    assert value(found, "npu_hccs_lanes", npu="0", chip="0", link="6") is None  # not printed
    assert (
        value(found, "npu_hccs_receive_bandwidth_bytes_per_second", npu="0", chip="0", link="6")
        == 2e9
    )
    assert value(found, "npu_pcie_errors_total", npu="0", chip="0", kind="rx") == 991
    assert value(found, "npu_sio_crc_errors_total", npu="0", chip="0", direction="receive") == 1


def test_the_collectors_can_be_switched_off() -> None:
    snap = replace(EMPTY_SNAPSHOT, network=NetworkView(ports=(PortReading(0, 0, 0, up=True),)))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(NpuCollector(lambda: snap, "test", disabled=("network",)))
    found = samples(generate_latest(registry))
    assert value(found, "npu_network_up", **PORT) is None
    assert value(found, "npumon_scrape_collector_success", collector="optical") == 1


def test_950_ub_port_counters_from_the_source_keys() -> None:
    """`-stat` on a 950 UBoE port (the keys `tool_display_stat_info` prints): UB traffic by
    packet type, flits, retries, drops, and the UBoE pause/PFC frames."""
    from npumon.daemon.model.network import HccnResults
    from npumon.daemon.model.network_view import read_port
    from npumon.daemon.parsers.hccn_tool import parse_stat
    from tests.support import FIXTURES

    stat = FIXTURES / "hccn_tool" / "stat-g-u-p__driver-950-source-uboe-FROM_SOURCE.txt"
    key = (0, 0, 8)
    port = read_port(key, HccnResults(counters={key: parse_stat(stat.read_text())}))
    text = exposition(NetworkView(ports=(port,)))
    assert promtool_problems(text) == ""
    found = samples(text)
    at = {"npu": "0", "chip": "0", "port": "8"}
    assert value(found, "npu_ub_packets_total", **at, direction="receive", type="ub_compact") == (
        88000000
    )
    assert value(found, "npu_ub_flits_total", **at, direction="transmit") == 905000000
    assert value(found, "npu_ub_retries_total", **at, kind="request") == 42
    assert value(found, "npu_network_receive_errors_total", **at, kind="drop") == 17
    assert value(found, "npu_network_receive_errors_total", **at, kind="bad") == 2
    assert (
        value(found, "npu_network_pause_frames_total", **at, direction="transmit", kind="pfc") == 80
    )


def test_950_ub_lanes_state_and_bandwidth() -> None:
    port = PortReading(
        0,
        0,
        5,
        up=True,
        lanes=2,
        max_lanes=4,
        lane_state="downgraded",
        bandwidth=(("transmit", 1e9), ("receive", 2.5e8)),
    )
    text = exposition(NetworkView(ports=(port,)))
    assert promtool_problems(text) == ""
    found = samples(text)
    at = {"npu": "0", "chip": "0", "port": "5"}
    assert (value(found, "npu_ub_lanes", **at), value(found, "npu_ub_max_lanes", **at)) == (2, 4)
    assert value(found, "npu_ub_lane_state", **at, state="downgraded") == 1
    assert value(found, "npu_ub_lane_state", **at, state="normal") == 0
    assert value(found, "npu_ub_bandwidth_bytes_per_second", **at, direction="receive") == 2.5e8
    bare = samples(exposition(NetworkView(ports=(PortReading(0, 0, 0, up=True),))))
    assert not [n for n, _ in bare if n.startswith("npu_ub_")]
