"""The network, optical and interconnect collectors: NIC ports (hccn_tool) in node_exporter's
shape, optical modules, and the chip's HCCS, PCIe and die-to-die (SIO) links (npu-smi).

Every port series carries `npu`, `chip` and `port` ("0" on single-port chips), so label sets
never vary. The `_total` families are the tools' own counters: they restart at 0 on a driver
reload and on `hccn_tool -stat -c`, which `rate()` and `increase()` treat as a counter reset.
Each family is a LineFamily (exporters/lines.py): a scrape writes its lines straight from the
model.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

from npumon.daemon.model.network import (
    LANE_STATES,
    NET_HEALTH_STATES,
    UB_LINK_STATES,
    UB_PORT_STATES,
    OpticalReport,
)
from npumon.daemon.model.network_view import ChipLinks, PortReading
from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.lines import Items, LineFamily, LineRenderer

PORT = ("npu", "chip", "port")
CHIP = ("npu", "chip")
INFO_LABELS = ("ip", "peer_switch", "peer_port")


def _port(
    name: str, kind: str, doc: str, value: Callable[[Any], Any], *extra: str, text: bool = False
) -> LineFamily:
    return LineFamily(name, kind, doc, PORT, value, extra, text=text)


def _chip(name: str, kind: str, doc: str, value: Callable[[Any], Any], *extra: str) -> LineFamily:
    return LineFamily(name, kind, doc, CHIP, value, extra)


def _carrier_changes(p: PortReading) -> int | None:
    up, down = p.carrier_up_changes, p.carrier_down_changes
    return None if up is None or down is None else up + down


def _health(p: PortReading) -> list[tuple[str, int]]:
    states = () if p.health_state is None else NET_HEALTH_STATES
    return [(s, 1 if s == p.health_state else 0) for s in states]


def _one_hot(current: str | None, states: tuple[str, ...]) -> list[tuple[str, int]]:
    return [(s, 1 if s == current else 0) for s in (() if current is None else states)]


def _lane_state(p: PortReading) -> list[tuple[str, int]]:
    return _one_hot(p.lane_state, LANE_STATES)


def _info(p: PortReading) -> list[tuple[Any, ...]]:
    """Always the three labels ("" when unknown), so label sets never vary."""
    labels = dict(p.info)
    return [(*(labels.get(k, "") for k in INFO_LABELS), 1)] if p.info else []


def _traffic(key: str) -> Callable[[PortReading], int | None]:
    return lambda p: dict(p.traffic).get(key)


def _thresholds(quantity: str) -> Callable[[OpticalReport], list[tuple[str, float]]]:
    return lambda o: [(bound, v) for q, bound, v in o.thresholds if q == quantity]


def _per_link(field: str) -> Callable[[ChipLinks], list[tuple[int, Any]]]:
    return lambda c: [(k.link, v) for k in c.hccs if (v := getattr(k, field)) is not None]


def _bandwidth(index: int) -> Callable[[ChipLinks], list[tuple[int, float]]]:
    """(link, tx, rx) rows: index 1 for transmit, 2 for receive."""
    return lambda c: [(row[0], row[index]) for row in c.hccs_bandwidth]


TRAFFIC_DOC = {
    "receive_bytes": "Bytes received by the NIC port (MAC, else NIC counters).",
    "transmit_bytes": "Bytes sent by the NIC port (MAC, else NIC counters).",
    "receive_packets": "Packets received by the NIC port.",
    "transmit_packets": "Packets sent by the NIC port.",
}
NETWORK = (
    _port("npu_network_up", "gauge", "1 when the NIC port's link is up.", attrgetter("up")),
    _port(
        "npu_network_speed_bytes",
        "gauge",
        "Negotiated link speed in bytes per second.",
        attrgetter("speed_bytes_per_second"),
    ),
    _port(
        "npu_network_carrier_changes",
        "counter",
        "Link up and down events since the driver loaded (hccn_tool -link_stat).",
        _carrier_changes,
    ),
    _port(
        "npu_network_carrier_up_changes",
        "counter",
        "Link up events.",
        attrgetter("carrier_up_changes"),
    ),
    _port(
        "npu_network_carrier_down_changes",
        "counter",
        "Link down events (newer drivers).",
        attrgetter("carrier_down_changes"),
    ),
    *(
        _port(f"npu_network_{key}", "counter", doc, _traffic(key))
        for key, doc in TRAFFIC_DOC.items()
    ),
    *(
        _port(
            f"npu_network_{direction}_errors",
            "counter",
            f"Errored packets {direction}d, by kind (bad: MAC bad packets, fcs; crc, length, out,"
            " drop, err_ind, route: 950 UB counters).",
            attrgetter(f"{direction}_errors"),
            "kind",
        )
        for direction in ("receive", "transmit")
    ),
    _port(
        "npu_network_pause_frames",
        "counter",
        "Pause frames by direction and kind (mac: 802.3x pause, pfc: priority flow control).",
        attrgetter("pause_frames"),
        "direction",
        "kind",
    ),
    _port(
        "npu_network_pfc_frames",
        "counter",
        "PFC frames by direction and priority.",
        attrgetter("pfc_frames"),
        "direction",
        "priority",
    ),
    _port(
        "npu_roce_errors",
        "counter",
        "RoCE error and congestion events by kind "
        "(retransmissions, cnp_received, out_of_order, qp_status, ...).",
        attrgetter("roce_errors"),
        "kind",
    ),
    _port(
        "npu_ub_lanes",
        "gauge",
        "Lanes up on an Ascend 950 UB port (hccn_tool -speed Width; no sample while none is).",
        attrgetter("lanes"),
    ),
    _port(
        "npu_ub_max_lanes",
        "gauge",
        "Lanes an Ascend 950 UB port has (hccn_tool -speed Cap).",
        attrgetter("max_lanes"),
    ),
    _port(
        "npu_ub_lane_state",
        "gauge",
        "hccn_tool -speed Status of an Ascend 950 UB port: 1 on the current state"
        " (normal; downgraded: fewer lanes or a lower rate; abnormal).",
        _lane_state,
        "state",
    ),
    _port(
        "npu_ub_port_state",
        "gauge",
        "hccn_tool -ub_connect state of an Ascend 950 UB port: 1 on the current state (up: all"
        " lanes; partial: fewer lanes; initial: not linked yet; down: no port).",
        lambda p: _one_hot(p.ub_port_state, UB_PORT_STATES),
        "state",
    ),
    _port(
        "npu_ub_bandwidth_bytes_per_second",
        "gauge",
        "Traffic through an Ascend 950 UB port over a 200 ms window (hccn_tool -bandwidth).",
        attrgetter("bandwidth"),
        "direction",
    ),
    _port(
        "npu_ub_packets",
        "counter",
        "Packets through an Ascend 950 UB port by direction and UB packet type (hccn_tool -stat).",
        attrgetter("ub_packets"),
        "direction",
        "type",
    ),
    _port(
        "npu_ub_flits",
        "counter",
        "Business flits through an Ascend 950 UB port (rx/tx_busi_flit_num; the unit the driver"
        " names, the manual says bytes).",
        attrgetter("ub_flits"),
        "direction",
    ),
    _port(
        "npu_ub_retries",
        "counter",
        "Link-layer retries on an Ascend 950 UB port: retry requests and retry acks.",
        attrgetter("ub_retries"),
        "kind",
    ),
    _port(
        "npu_network_health_state",
        "gauge",
        "hccn_tool -net_health: 1 on the current state (success and init are healthy).",
        _health,
        "state",
    ),
    _port(
        "npu_network_info",
        "gauge",
        "The port's IP and the switch port it is cabled to (LLDP).",
        _info,
        *INFO_LABELS,
        text=True,  # the switch's LLDP text
    ),
)
OPTICAL_LANES = (
    ("npu_optical_rx_power_watts", "rx_power_watts", "Received optical power per lane."),
    ("npu_optical_tx_power_watts", "tx_power_watts", "Transmitted optical power per lane."),
    ("npu_optical_tx_bias_amperes", "tx_bias_amperes", "Laser bias current per lane."),
)
OPTICAL = (  # of the port's OpticalReport
    _port(
        "npu_optical_present",
        "gauge",
        "1 when the port's optical module reports itself present.",
        attrgetter("present"),
    ),
    _port(
        "npu_optical_temperature_celsius",
        "gauge",
        "Optical module temperature.",
        attrgetter("temperature_celsius"),
    ),
    _port(
        "npu_optical_supply_voltage_volts",
        "gauge",
        "Module supply voltage.",
        attrgetter("supply_voltage_volts"),
    ),
    *(_port(name, "gauge", doc, attrgetter(f), "lane") for name, f, doc in OPTICAL_LANES),
    *(
        _port(
            f"npu_optical_{quantity}_threshold_{unit}",
            "gauge",
            f"The module's own alarm threshold for {quantity.replace('_', ' ')} "
            "(bound high or low).",
            _thresholds(f"{quantity}_{unit}"),
            "bound",
        )
        for quantity, unit in (
            ("temperature", "celsius"),
            ("supply_voltage", "volts"),
            ("rx_power", "watts"),
            ("tx_power", "watts"),
        )
    ),
)
HCCS = (
    ("npu_hccs_lanes", "gauge", "lanes", "Lanes the HCCS link runs on (0, 1, 2 or 4)."),
    ("npu_hccs_speed_bytes", "gauge", "speed_bytes_per_second", "HCCS link speed, bytes/s."),
    ("npu_hccs_transmit_packets", "counter", "tx_packets", "Packets sent on the HCCS link."),
    ("npu_hccs_transmit_bytes", "counter", "tx_octets", "Bytes sent on the HCCS link."),
    ("npu_hccs_receive_packets", "counter", "rx_packets", "Packets received on the HCCS link."),
    ("npu_hccs_receive_bytes", "counter", "rx_octets", "Bytes received on the HCCS link."),
    ("npu_hccs_retries", "counter", "retries", "Link-level retries on the HCCS link."),
    ("npu_hccs_crc_errors", "counter", "crc_errors", "CRC errors on the HCCS link."),
)
INTERCONNECT = (  # of the chip's ChipLinks
    _chip(
        "npu_ub_link_state",
        "gauge",
        "hccn_tool -ub_connect state of an Ascend 950's UB links: 1 on the current state (up:"
        " every port linked; partial: some; down: none; na: no link needed).",
        lambda c: _one_hot(c.ub_link_state, UB_LINK_STATES),
        "state",
    ),
    _chip(
        "npu_hccs_up",
        "gauge",
        "1 when npu-smi says the chip's HCCS is OK.",
        attrgetter("hccs_healthy"),
    ),
    _chip(
        "npu_hccs_first_error_link",
        "gauge",
        "The first HCCS port (link) with a problem; absent while there is none.",
        attrgetter("hccs_first_error_link"),
    ),
    *(
        _chip(
            name,
            kind,
            doc,
            _per_link(field),
            "link",
        )
        for name, kind, field, doc in HCCS
    ),
    *(
        _chip(
            f"npu_hccs_{direction}_bandwidth_bytes_per_second",
            "gauge",
            f"HCCS {direction} bandwidth over npu-smi's sampling window.",
            _bandwidth(index),
            "link",
        )
        for index, direction in ((1, "transmit"), (2, "receive"))
    ),
    _chip(
        "npu_pcie_errors",
        "counter",
        "PCIe error counters (npu-smi -t pcie-err).",
        attrgetter("pcie_errors"),
        "kind",
    ),
    _chip(
        "npu_sio_crc_errors",
        "counter",
        "CRC errors on the die-to-die (SIO) link (npu-smi -t sio-info).",
        attrgetter("sio_crc_errors"),
        "direction",
    ),
)


def _ports(snap: NodeSnapshot) -> Items:
    """npu_network_receive_errors_total{chip="0",kind="fcs",npu="0",port="0"} 0.0"""
    return [((str(p.npu), str(p.chip), str(p.port)), p) for p in snap.network.ports]


def _optics(snap: NodeSnapshot) -> Items:
    """npu_optical_rx_power_watts{chip="0",lane="0",npu="0",port="0"} 0.00089"""
    ports = snap.network.ports
    return [((str(p.npu), str(p.chip), str(p.port)), p.optical) for p in ports if p.optical]


def _chips(snap: NodeSnapshot) -> Items:
    """The chip's HCCS health and its ports by the driver's port index, PCIe and SIO errors:

    npu_hccs_up{chip="0",npu="0"} 0.0
    npu_hccs_first_error_link{chip="0",npu="0"} 7.0
    npu_hccs_crc_errors_total{chip="0",link="7",npu="0"} 42.0
    """
    return [((str(c.npu), str(c.chip)), c) for c in snap.network.chips]


render_network = LineRenderer(_ports, NETWORK)
render_optical = LineRenderer(_optics, OPTICAL)
render_interconnect = LineRenderer(_chips, INTERCONNECT)
