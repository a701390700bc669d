"""The network, optical and interconnect collectors: NIC ports (hccn_tool) in node_exporter's
shape, optical modules, and the chip's HCCS, PCIe and die-to-die (SIO) links (npu-smi).

Every port series carries `npu`, `chip` and `port` ("0" on single-port chips), so label sets
never vary. The `_total` families are the tools' own counters: they restart at 0 on a driver
reload and on `hccn_tool -stat -c`, which `rate()` and `increase()` treat as a counter reset.

Each collector has a default table and a detail one (collectors `network_detail`,
`optical_detail`, `interconnect_detail`, off by default): the default holds a few series per
port or chip, per-chip sums and the worst link, enough for every bundled alert and dashboard;
the detail adds the per-priority, per-kind, per-lane and per-link families. A sum over links or
kinds drops when any of its parts restarts, which `rate()` treats as a counter reset.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
from npumon.exporters.spec import SAMPLED, Family, Samples

PORT = ("npu", "chip", "port")
CHIP = ("npu", "chip")
INFO_LABELS = ("ip", "peer_switch", "peer_port")
HEALTHY_NET_STATES = frozenset({"success", "init"})  # as npu_network_health_state's HELP says


Items = Sequence[tuple[tuple[str, ...], Any]]  # (identity label values, the series' model)


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


def _family(
    items: Callable[[NodeSnapshot], Items],
    identity: tuple[str, ...],
    name: str,
    kind: str,
    doc: str,
    value: Callable[[Any], Any],
    extra: tuple[str, ...],
) -> Family:
    """A row over ``items``: ``value(item)`` is the item's value (None: no sample), or with
    ``extra`` label names its (extra label values..., value) rows."""
    samples: Samples
    if extra:
        samples = lambda snap: (  # noqa: E731
            ((*ids, *labels), v) for ids, item in items(snap) for *labels, v in value(item)
        )
    else:
        samples = lambda snap: ((ids, value(item)) for ids, item in items(snap))  # noqa: E731
    return Family(name, kind, f"{doc} {SAMPLED}", (*identity, *extra), samples)


def _port(name: str, kind: str, doc: str, value: Callable[[Any], Any], *extra: str) -> Family:
    return _family(_ports, PORT, name, kind, doc, value, extra)


def _optic(name: str, kind: str, doc: str, value: Callable[[Any], Any], *extra: str) -> Family:
    return _family(_optics, PORT, name, kind, doc, value, extra)


def _chip(name: str, kind: str, doc: str, value: Callable[[Any], Any], *extra: str) -> Family:
    return _family(_chips, CHIP, name, kind, doc, value, extra)


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


def _healthy(p: PortReading) -> int | None:
    return None if p.health_state is None else int(p.health_state in HEALTHY_NET_STATES)


def _roce(kind: str) -> Callable[[PortReading], int | None]:
    return lambda p: dict(p.roce_errors).get(kind)


def _lowest(field: str) -> Callable[[OpticalReport], float | None]:
    return lambda o: min((v for _, v in getattr(o, field)), default=None)


def _out_of_range(o: OpticalReport) -> list[tuple[str, int]]:
    """-1, 0 or 1 per quantity with a reading and both of the module's thresholds."""
    rows = []
    for quantity, unit in THRESHOLD_QUANTITIES:
        field = f"{quantity}_{unit}"
        reading = getattr(o, field)
        values = [v for _, v in reading] if isinstance(reading, tuple) else [reading]
        values = [v for v in values if v is not None]
        bounds = {bound: v for q, bound, v in o.thresholds if q == field}
        if not values or "low" not in bounds or "high" not in bounds:
            continue
        below, above = min(values) < bounds["low"], max(values) > bounds["high"]
        rows.append((quantity, -1 if below else 1 if above else 0))
    return rows


def _min_lanes(c: ChipLinks) -> int | None:
    return min((k.lanes for k in c.hccs if k.lanes is not None), default=None)


def _link_sums(parts: tuple[tuple[str, str], ...]) -> Callable[[ChipLinks], list[tuple[str, int]]]:
    """(label, sum over the links that report the field) per (label, HccsLink field)."""

    def sums(c: ChipLinks) -> list[tuple[str, int]]:
        rows = []
        for label, field in parts:
            known = [v for k in c.hccs if (v := getattr(k, field)) is not None]
            if known:
                rows.append((label, sum(known)))
        return rows

    return sums


def _pcie_errors(c: ChipLinks) -> int | None:
    errors = [v for kind, v in c.pcie_errors if kind != "retry"]
    return sum(errors) if errors else None


TRAFFIC_DOC = {
    "receive_bytes": "Bytes received by the NIC port (MAC, else NIC counters).",
    "transmit_bytes": "Bytes sent by the NIC port (MAC, else NIC counters).",
    "receive_packets": "Packets received by the NIC port.",
    "transmit_packets": "Packets sent by the NIC port.",
}
NETWORK = (  # the default: per port, what the bundled alerts and dashboards read
    _port("npu_network_up", "gauge", "1 when the NIC port's link is up.", attrgetter("up")),
    _port(
        "npu_network_speed_bytes",
        "gauge",
        "Negotiated link speed in bytes per second.",
        attrgetter("speed_bytes_per_second"),
    ),
    _port(
        "npu_network_carrier_up_changes",
        "counter",
        "Link up events (one per flap).",
        attrgetter("carrier_up_changes"),
    ),
    *(
        _port(f"npu_network_{key}", "counter", TRAFFIC_DOC[key], _traffic(key))
        for key in ("receive_bytes", "transmit_bytes")
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
        "Pause frames by direction and kind (mac: 802.3x pause, pfc: priority flow control, "
        "all priorities).",
        attrgetter("pause_frames"),
        "direction",
        "kind",
    ),
    _port(
        "npu_network_healthy",
        "gauge",
        "hccn_tool -net_health: 1 in a healthy state (success, init), else 0 "
        "(the state: npu_network_health_state, collector network_detail).",
        _healthy,
    ),
    _port(
        "npu_roce_retransmissions",
        "counter",
        "RoCE retransmissions (every RoCE kind: npu_roce_errors_total, collector network_detail).",
        _roce("retransmissions"),
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
        "npu_network_info",
        "gauge",
        "The port's IP and the switch port it is cabled to (LLDP).",
        _info,
        *INFO_LABELS,  # the switch's LLDP text: any text, escaped
    ),
)
NETWORK_DETAIL = (  # collector network_detail: per priority, per kind, per state
    _port(
        "npu_network_carrier_changes",
        "counter",
        "Link up and down events since the driver loaded (hccn_tool -link_stat).",
        _carrier_changes,
    ),
    _port(
        "npu_network_carrier_down_changes",
        "counter",
        "Link down events (newer drivers).",
        attrgetter("carrier_down_changes"),
    ),
    *(
        _port(f"npu_network_{key}", "counter", TRAFFIC_DOC[key], _traffic(key))
        for key in ("receive_packets", "transmit_packets")
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
        "npu_ub_lane_state",
        "gauge",
        "hccn_tool -speed Status of an Ascend 950 UB port: 1 on the current state"
        " (normal; downgraded: fewer lanes or a lower rate; abnormal).",
        _lane_state,
        "state",
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
        "npu_network_health_state",
        "gauge",
        "hccn_tool -net_health: 1 on the current state (success and init are healthy).",
        _health,
        "state",
    ),
)
THRESHOLD_QUANTITIES = (  # (quantity, unit): the module's alarm thresholds OpticalReport holds
    ("temperature", "celsius"),
    ("supply_voltage", "volts"),
    ("rx_power", "watts"),
    ("tx_power", "watts"),
)
OPTICAL_LANES = (
    ("npu_optical_rx_power_watts", "rx_power_watts", "Received optical power per lane."),
    ("npu_optical_tx_power_watts", "tx_power_watts", "Transmitted optical power per lane."),
    ("npu_optical_tx_bias_amperes", "tx_bias_amperes", "Laser bias current per lane."),
)
OPTICAL = (  # the default, of the port's OpticalReport
    _optic(
        "npu_optical_present",
        "gauge",
        "1 when the port's optical module reports itself present.",
        attrgetter("present"),
    ),
    _optic(
        "npu_optical_temperature_celsius",
        "gauge",
        "Optical module temperature.",
        attrgetter("temperature_celsius"),
    ),
    _optic(
        "npu_optical_rx_power_min_watts",
        "gauge",
        "The lowest lane's received optical power (per lane: npu_optical_rx_power_watts, "
        "collector optical_detail).",
        _lowest("rx_power_watts"),
    ),
    _optic(
        "npu_optical_out_of_range",
        "gauge",
        "The module's readings against its own alarm thresholds, by quantity (temperature, "
        "supply_voltage, rx_power, tx_power): -1 below the low threshold (any lane), 1 above "
        "the high one, 0 inside.",
        _out_of_range,
        "quantity",
    ),
)
OPTICAL_DETAIL = (  # collector optical_detail: per lane, and the thresholds themselves
    _optic(
        "npu_optical_supply_voltage_volts",
        "gauge",
        "Module supply voltage.",
        attrgetter("supply_voltage_volts"),
    ),
    *(_optic(name, "gauge", doc, attrgetter(f), "lane") for name, f, doc in OPTICAL_LANES),
    *(
        _optic(
            f"npu_optical_{quantity}_threshold_{unit}",
            "gauge",
            f"The module's own alarm threshold for {quantity.replace('_', ' ')} "
            "(bound high or low).",
            _thresholds(f"{quantity}_{unit}"),
            "bound",
        )
        for quantity, unit in THRESHOLD_QUANTITIES
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
INTERCONNECT = (  # the default, of the chip's ChipLinks: one series per chip and kind
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
    _chip(
        "npu_hccs_min_link_lanes",
        "gauge",
        "The worst HCCS link: the fewest lanes any link of the chip runs on (0: a link is "
        "down; per link: npu_hccs_lanes, collector interconnect_detail).",
        _min_lanes,
    ),
    _chip(
        "npu_hccs_errors",
        "counter",
        "HCCS errors summed over the chip's links, by kind (crc, retry).",
        _link_sums((("crc", "crc_errors"), ("retry", "retries"))),
        "kind",
    ),
    _chip(
        "npu_hccs_bytes",
        "counter",
        "HCCS traffic summed over the chip's links, by direction.",
        _link_sums((("transmit", "tx_octets"), ("receive", "rx_octets"))),
        "direction",
    ),
    _chip(
        "npu_pcie_link_errors",
        "counter",
        "PCIe errors of every kind but retries, summed (per kind: npu_pcie_errors_total, "
        "collector interconnect_detail).",
        _pcie_errors,
    ),
    _chip(
        "npu_sio_crc_errors",
        "counter",
        "CRC errors on the die-to-die (SIO) link (npu-smi -t sio-info).",
        attrgetter("sio_crc_errors"),
        "direction",
    ),
)
INTERCONNECT_DETAIL = (  # collector interconnect_detail: per HCCS link and PCIe kind
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
)
