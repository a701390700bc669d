"""The line writer of the network, optical and interconnect collectors against its reference:
prometheus_client's own encoders over the Metric families the same renderer gives collect(),
byte for byte, in both formats, on a hand-built view with every family (label values holding
quotes, backslashes and line feeds) and on every golden fixture node."""

from __future__ import annotations

from dataclasses import replace

import pytest
from prometheus_client import generate_latest
from prometheus_client.core import Metric
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from npumon.daemon.model.network import HccsLink, OpticalReport
from npumon.daemon.model.network_view import ChipLinks, NetworkView, PortReading
from npumon.daemon.model.snapshot import EMPTY_SNAPSHOT, NodeSnapshot
from npumon.exporters.lines import LineFamily, LineRenderer
from npumon.exporters.network import (
    render_interconnect,
    render_interconnect_detail,
    render_network,
    render_network_detail,
    render_optical,
    render_optical_detail,
)
from tests.support import NODES, fixture_agent

RENDERERS = {
    "network": render_network,
    "optical": render_optical,
    "interconnect": render_interconnect,
    "network_detail": render_network_detail,
    "optical_detail": render_optical_detail,
    "interconnect_detail": render_interconnect_detail,
}
FORMATS = pytest.mark.parametrize("openmetrics", [False, True], ids=["text", "openmetrics"])

PORT = PortReading(
    3,
    1,
    0,
    up=True,
    speed_bytes_per_second=4e11,
    carrier_up_changes=3,
    carrier_down_changes=2,
    traffic=(
        ("receive_bytes", 45965377536),
        ("transmit_bytes", 0),
        ("receive_packets", 7),
        ("transmit_packets", 999999),
    ),
    receive_errors=(("fcs", 7), ("crc", 1234567)),
    transmit_errors=(("bad", 0),),
    pause_frames=(("receive", "pfc", 9), ("transmit", "mac", 0)),
    pfc_frames=(("receive", "3", 9), ("transmit", "7", 10**20)),
    roce_errors=(("retransmissions", 5),),
    lanes=2,
    max_lanes=4,
    lane_state="downgraded",
    bandwidth=(("transmit", 266.84e6), ("receive", 0.0)),
    ub_packets=(("receive", "ub_compact", 88000000), ("transmit", "unknown", 0)),
    ub_flits=(("receive", 10**19),),
    ub_retries=(("request", 42), ("ack", 40)),
    ub_port_state="initial",
    health_state="fault",
    optical=OpticalReport(
        present=True,
        temperature_celsius=47.5,
        supply_voltage_volts=3.3,
        rx_power_watts=((0, 1e-3), (1, 0.1 + 0.2)),
        tx_power_watts=((0, 8.9e-4),),
        tx_bias_amperes=((0, 0.0065),),
        thresholds=(
            ("temperature_celsius", "high", 70.0),
            ("temperature_celsius", "low", -5.0),
            ("supply_voltage_volts", "low", 2.97),
            ("rx_power_watts", "low", 1.445e-4),
            ("tx_power_watts", "high", 3.16e-3),
        ),
    ),
    info=(("ip", "10.0.0.1"), ("peer_switch", 'sw "a"\\b\nc'), ("peer_port", "400GE1/1/1:1")),
)
LINKS = ChipLinks(
    3,
    1,
    hccs=(
        HccsLink(6, 4, 5.6e10, 1, 2, 3, 4, 5, 42),
        HccsLink(7, 0, None, 123456789012, 98765432109, 0, 0, None, None),
    ),
    hccs_healthy=False,
    hccs_first_error_link=6,
    hccs_bandwidth=((6, 1e9, 2.5e9), (7, 0.0, 123.456)),
    pcie_errors=(("rx", 991), ("retry", 0)),
    sio_crc_errors=(("receive", 1), ("transmit", 0)),
    ub_link_state="partial",
)
EVERYTHING = replace(
    EMPTY_SNAPSHOT,
    network=NetworkView(ports=(PORT, PortReading(3, 1, 1)), chips=(LINKS, ChipLinks(3, 0))),
)


class _Families:
    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> list[Metric]:
        return self._families


def _reference(renderer: LineRenderer, snap: NodeSnapshot, openmetrics: bool) -> bytes:
    """prometheus_client's encoding of the families collect() gets from ``renderer``."""
    families = _Families([f for f in renderer(snap) if f.samples])
    if openmetrics:
        return bytes(generate_openmetrics(families)).removesuffix(b"# EOF\n")  # type: ignore[arg-type]
    return generate_latest(families)  # type: ignore[arg-type]


@FORMATS
@pytest.mark.parametrize("collector", RENDERERS)
def test_every_family_writes_as_prometheus_client_encodes_it(
    collector: str, openmetrics: bool
) -> None:
    renderer = RENDERERS[collector]
    ours = renderer.write(EVERYTHING, openmetrics)
    assert ours == _reference(renderer, EVERYTHING, openmetrics)
    heads = renderer.write(EVERYTHING, True).splitlines()
    written = {line.split(b" ")[2].decode() for line in heads if line.startswith(b"# TYPE")}
    assert written == {f.name for f in renderer.table}  # the view has a sample of each


def test_lldp_text_is_escaped_as_the_format_says() -> None:
    text = render_network.write(EVERYTHING, False).decode()
    assert 'peer_switch="sw \\"a\\"\\\\b\\nc"' in text


def test_a_family_without_samples_is_left_out_in_both_paths() -> None:
    bare = replace(EMPTY_SNAPSHOT, network=NetworkView(ports=(PortReading(0, 0, 0, up=False),)))
    assert render_network.write(bare, False) == (
        b"# HELP npu_network_up 1 when the NIC port's link is up. Sampled in the background by "
        b"npumon; see npumon_source_last_success_timestamp_seconds.\n"
        b"# TYPE npu_network_up gauge\n"
        b'npu_network_up{chip="0",npu="0",port="0"} 0.0\n'
    )
    assert [f.name for f in render_network(bare) if f.samples] == ["npu_network_up"]
    assert render_optical.write(bare, True) == b""


@pytest.mark.parametrize(
    ("name", "labels"), [("npu-bad", ()), ("npu_ok", ("bad-label",)), ("npu_ok", ("__x",))]
)
def test_a_bad_name_fails_when_the_family_is_declared(name: str, labels: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="invalid"):
        LineFamily(name, "gauge", "doc", ("npu",), lambda item: 1, labels)


@pytest.mark.parametrize("node", sorted(p.name for p in NODES.iterdir() if p.is_dir()))
def test_every_golden_node_writes_as_prometheus_client_encodes_it(node: str) -> None:
    agent = fixture_agent(node)
    agent.collect_once()
    snap = agent.store.latest()
    for renderer in RENDERERS.values():
        for openmetrics in (False, True):
            assert renderer.write(snap, openmetrics) == _reference(renderer, snap, openmetrics)
