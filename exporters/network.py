"""The network, optical and interconnect collectors: NIC ports (hccn_tool) in node_exporter's
shape, optical modules, and the chip's HCCS, PCIe and die-to-die (SIO) links (npu-smi).

Every port series carries `npu`, `chip` and `port` ("0" on single-port chips), so label sets
never vary. The `_total` families are the tools' own counters: they restart at 0 on a driver
reload and on `hccn_tool -stat -c`, which `rate()` and `increase()` treat as a counter reset.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from npumon.daemon.model.network import NET_HEALTH_STATES, OpticalReport
from npumon.daemon.model.network_view import ChipLinks, PortReading
from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.spec import SAMPLED

PORT = ("npu", "chip", "port")
LINK = ("npu", "chip", "link")
CHIP = ("npu", "chip")


def _ids(p: PortReading) -> list[str]:
    return [str(p.npu), str(p.chip), str(p.port)]


def _gauge(name: str, doc: str, labels: Iterable[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, f"{doc} {SAMPLED}", labels=tuple(labels))


def _counter(name: str, doc: str, labels: Iterable[str]) -> CounterMetricFamily:
    return CounterMetricFamily(name, f"{doc} {SAMPLED}", labels=tuple(labels))


def _per_port(
    family: Metric,
    ports: Iterable[PortReading],
    value: Callable[[PortReading], float | int | bool | None],
) -> Metric:
    for p in ports:
        v = value(p)
        if v is not None:
            family.add_metric(_ids(p), float(v))  # type: ignore[attr-defined]
    return family


def _carrier_changes(p: PortReading) -> int | None:
    up, down = p.carrier_up_changes, p.carrier_down_changes
    return None if up is None or down is None else up + down


def _labelled(
    family: Metric,
    ports: Iterable[PortReading],
    items: Callable[[PortReading], Iterable[tuple[Any, ...]]],
) -> Metric:
    """One sample per (extra label values..., value) item of each port."""
    for p in ports:
        for *extra, v in items(p):
            family.add_metric([*_ids(p), *map(str, extra)], float(v))  # type: ignore[attr-defined]
    return family


TRAFFIC_DOC = {
    "receive_bytes": "Bytes received by the NIC port (MAC, else NIC counters).",
    "transmit_bytes": "Bytes sent by the NIC port (MAC, else NIC counters).",
    "receive_packets": "Packets received by the NIC port.",
    "transmit_packets": "Packets sent by the NIC port.",
}


def render_network(snap: NodeSnapshot) -> Iterator[Metric]:
    ports = snap.network.ports
    yield _per_port(
        _gauge("npu_network_up", "1 when the NIC port's link is up.", PORT), ports, lambda p: p.up
    )
    yield _per_port(
        _gauge("npu_network_speed_bytes", "Negotiated link speed in bytes per second.", PORT),
        ports,
        lambda p: p.speed_bytes_per_second,
    )
    yield _per_port(
        _counter(
            "npu_network_carrier_changes",
            "Link up and down events since the driver loaded (hccn_tool -link_stat).",
            PORT,
        ),
        ports,
        _carrier_changes,
    )
    yield _per_port(
        _counter("npu_network_carrier_up_changes", "Link up events.", PORT),
        ports,
        lambda p: p.carrier_up_changes,
    )
    yield _per_port(
        _counter("npu_network_carrier_down_changes", "Link down events (newer drivers).", PORT),
        ports,
        lambda p: p.carrier_down_changes,
    )
    for key, doc in TRAFFIC_DOC.items():
        yield _per_port(
            _counter(f"npu_network_{key}", doc, PORT),
            ports,
            lambda p, k=key: dict(p.traffic).get(k),  # type: ignore[misc]
        )
    for direction in ("receive", "transmit"):
        yield _labelled(
            _counter(
                f"npu_network_{direction}_errors",
                f"Errored packets {direction}d, by kind "
                "(bad: MAC bad packets, fcs, crc: 950 UB CRC).",
                (*PORT, "kind"),
            ),
            ports,
            lambda p, d=direction: getattr(p, f"{d}_errors"),  # type: ignore[misc]
        )
    yield _labelled(
        _counter(
            "npu_network_pause_frames",
            "Pause frames by direction and kind (mac: 802.3x pause, pfc: priority flow control).",
            (*PORT, "direction", "kind"),
        ),
        ports,
        lambda p: p.pause_frames,
    )
    yield _labelled(
        _counter(
            "npu_network_pfc_frames",
            "PFC frames by direction and priority.",
            (*PORT, "direction", "priority"),
        ),
        ports,
        lambda p: p.pfc_frames,
    )
    yield _labelled(
        _counter(
            "npu_roce_errors",
            "RoCE error and congestion events by kind "
            "(retransmissions, cnp_received, out_of_order, qp_status, ...).",
            (*PORT, "kind"),
        ),
        ports,
        lambda p: p.roce_errors,
    )
    yield _labelled(
        _gauge(
            "npu_network_health_state",
            "hccn_tool -net_health: 1 on the current state (success and init are healthy).",
            (*PORT, "state"),
        ),
        ports,
        lambda p: (
            []
            if p.health_state is None
            else [(s, 1 if s == p.health_state else 0) for s in NET_HEALTH_STATES]
        ),
    )
    yield _network_info(ports)


def _network_info(ports: Iterable[PortReading]) -> Metric:
    """npu_network_info: always the three labels ("" when unknown), so label sets never vary."""
    info = _gauge(
        "npu_network_info",
        "The port's IP and the switch port it is cabled to (LLDP).",
        (*PORT, "ip", "peer_switch", "peer_port"),
    )
    for p in ports:
        if p.info:
            labels = dict(p.info)
            info.add_metric(
                [*_ids(p), *(labels.get(k, "") for k in ("ip", "peer_switch", "peer_port"))], 1.0
            )
    return info


def render_optical(snap: NodeSnapshot) -> Iterator[Metric]:
    ports = [p for p in snap.network.ports if p.optical is not None]

    def optic(p: PortReading) -> OpticalReport:
        return p.optical or OpticalReport(present=None)  # never empty: filtered above

    yield _per_port(
        _gauge(
            "npu_optical_present", "1 when the port's optical module reports itself present.", PORT
        ),
        ports,
        lambda p: optic(p).present,
    )
    for name, field, doc in (
        ("npu_optical_temperature_celsius", "temperature_celsius", "Optical module temperature."),
        ("npu_optical_supply_voltage_volts", "supply_voltage_volts", "Module supply voltage."),
    ):
        yield _per_port(_gauge(name, doc, PORT), ports, lambda p, f=field: getattr(optic(p), f))  # type: ignore[misc]
    for name, field, doc in (
        ("npu_optical_rx_power_watts", "rx_power_watts", "Received optical power per lane."),
        ("npu_optical_tx_power_watts", "tx_power_watts", "Transmitted optical power per lane."),
        ("npu_optical_tx_bias_amperes", "tx_bias_amperes", "Laser bias current per lane."),
    ):
        yield _labelled(
            _gauge(name, doc, (*PORT, "lane")),
            ports,
            lambda p, f=field: getattr(optic(p), f),  # type: ignore[misc]
        )
    for quantity, unit_name in (
        ("temperature", "celsius"),
        ("supply_voltage", "volts"),
        ("rx_power", "watts"),
        ("tx_power", "watts"),
    ):
        wanted = f"{quantity}_{unit_name}"
        yield _labelled(
            _gauge(
                f"npu_optical_{quantity}_threshold_{unit_name}",
                "The module's own alarm "
                f"threshold for {quantity.replace('_', ' ')} (bound high or low).",
                (*PORT, "bound"),
            ),
            ports,
            lambda p, w=wanted: [
                (b, v)
                for q, b, v in optic(p).thresholds  # type: ignore[misc]
                if q == w
            ],
        )


def _per_link(family: Metric, chips: Iterable[ChipLinks], field: str, scale: float = 1.0) -> Metric:
    for c in chips:
        for link in c.hccs:
            v = getattr(link, field)
            if v is not None:
                family.add_metric(  # type: ignore[attr-defined]
                    [str(c.npu), str(c.chip), str(link.link)],
                    float(v) * scale,
                )
    return family


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


def render_interconnect(snap: NodeSnapshot) -> Iterator[Metric]:
    """The chip's HCCS health and its ports by the driver's port index, PCIe and SIO errors:

    npu_hccs_up{npu="0",chip="0"} 0
    npu_hccs_first_error_link{npu="0",chip="0"} 7
    npu_hccs_crc_errors_total{npu="0",chip="0",link="7"} 42
    """
    chips = snap.network.chips
    for name, field, doc in (
        ("npu_hccs_up", "hccs_healthy", "1 when npu-smi says the chip's HCCS is OK."),
        (
            "npu_hccs_first_error_link",
            "hccs_first_error_link",
            "The first HCCS port (link) with a problem; absent while there is none.",
        ),
    ):
        family = _gauge(name, doc, CHIP)
        for c in chips:
            v = getattr(c, field)
            if v is not None:
                family.add_metric([str(c.npu), str(c.chip)], float(v))
        yield family
    for name, kind, field, doc in HCCS:
        make = _gauge if kind == "gauge" else _counter
        yield _per_link(make(name, doc, LINK), chips, field)
    for index, direction in ((1, "transmit"), (2, "receive")):
        family = _gauge(
            f"npu_hccs_{direction}_bandwidth_bytes_per_second",
            f"HCCS {direction} bandwidth over npu-smi's sampling window.",
            LINK,
        )
        for c in chips:
            for row in c.hccs_bandwidth:
                family.add_metric([str(c.npu), str(c.chip), str(row[0])], row[index])
        yield family
    for name, attr, label, doc in (
        ("npu_pcie_errors", "pcie_errors", "kind", "PCIe error counters (npu-smi -t pcie-err)."),
        (
            "npu_sio_crc_errors",
            "sio_crc_errors",
            "direction",
            "CRC errors on the die-to-die (SIO) link (npu-smi -t sio-info).",
        ),
    ):
        counter = _counter(name, doc, (*CHIP, label))
        for c in chips:
            for value_label, value in getattr(c, attr):
                counter.add_metric([str(c.npu), str(c.chip), value_label], float(value))
        yield counter
