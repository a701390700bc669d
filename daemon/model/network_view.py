"""Per-port and per-chip link readings, merged once from hccn_tool and npu-smi's interconnect
queries: which `-stat` key feeds which metric lives here, next to the field it fills.

Only chips of the latest npu-smi table are kept (a chip that vanished has no stale ports).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from npumon.daemon.model.chips import ChipId
from npumon.daemon.model.network import (
    ChipInterconnect,
    HccnResults,
    HccsLink,
    OpticalReport,
    PortCounters,
    PortKey,
    UbConnect,
)

Counts = tuple[tuple[str, int], ...]
NO_INTERCONNECT = ChipInterconnect()

# (label value, -stat keys in precedence order): the MAC counters see all traffic (RoCE too);
# the nic_* ones, all a trimmed output may show, only the host network path.
TRAFFIC = {
    "receive_bytes": ("mac_rx_total_oct_num", "nic_rx_all_oct_num"),
    "transmit_bytes": ("mac_tx_total_oct_num", "nic_tx_all_oct_num"),
    "receive_packets": ("mac_rx_total_pkt_num", "nic_rx_all_pkg_num"),
    "transmit_packets": ("mac_tx_total_pkt_num", "nic_tx_all_pkg_num"),
}
# The 950's UB ports print other keys (`tool_display_stat_info`, hicann driver hccn_tool
# `tool_shell_ops.c`): crc, length, out, drop (`drop_ind_cnt_*`), err_ind and route are UB
# counters; a UBoE port adds `core_mib_*` bad packets and pause/PFC frames. One key per label
# on a port (a RoCE port prints mac_*, a UBoE port core_mib_*); the first printed wins.
RECEIVE_ERRORS = (
    ("bad", "mac_rx_bad_pkt_num"),
    ("bad", "core_mib_rxbadpkts"),
    ("fcs", "mac_rx_fcs_err_pkt_num"),
    ("crc", "crc_error_sum"),
    ("length", "length_err_cnt_rx"),
    ("out", "out_err_cnt_rx"),
    ("drop", "drop_ind_cnt_rx"),
    ("err_ind", "err_ind_cnt_rx"),
    ("route", "route_err_cnt_rx"),
)
TRANSMIT_ERRORS = (
    ("bad", "mac_tx_bad_pkt_num"),
    ("bad", "core_mib_txbadpkts"),
    ("length", "length_err_cnt_tx"),
    ("out", "out_err_cnt_tx"),
    ("drop", "drop_ind_cnt_tx"),
    ("err_ind", "err_ind_cnt_tx"),
)
PAUSE = (
    ("receive", "mac", "mac_rx_mac_pause_num"),
    ("transmit", "mac", "mac_tx_mac_pause_num"),
    ("receive", "pfc", "mac_rx_pfc_pkt_num"),
    ("transmit", "pfc", "mac_tx_pfc_pkt_num"),
    ("receive", "mac", "core_mib_rxpausepkts"),
    ("transmit", "mac", "core_mib_txpausepkts"),
    ("receive", "pfc", "core_mib_rxpfcpkts"),
    ("transmit", "pfc", "core_mib_txpfcpkts"),
)
# UB packets by type: (type label, key stem); the stem + `_rx` / `_tx` is the source's key. The
# 950 manual's example prints `ub_glb_ipv4/ipv6_pkt_cnt_*` and `ub_clan_pkt_cnt_*` where the
# source prints `ub_ipv4/ipv6_pkt_cnt_*` and `ub_compact_pkt_cnt_*` (same place in the list):
# read as the same counters.
UB_PACKETS = (
    ("ub_ipv4", ("ub_ipv4_pkt_cnt", "ub_glb_ipv4_pkt_cnt")),
    ("ub_ipv6", ("ub_ipv6_pkt_cnt", "ub_glb_ipv6_pkt_cnt")),
    ("unic_ipv4", ("unic_ipv4_pkt_cnt",)),
    ("unic_ipv6", ("unic_ipv6_pkt_cnt",)),
    ("ub_compact", ("ub_compact_pkt_cnt", "ub_clan_pkt_cnt")),
    ("ub_umoc_ctph", ("ub_umoc_ctph_cnt",)),
    ("ub_umoc_ntph", ("ub_umoc_ntph_cnt",)),
    ("ub_mem", ("ub_mem_pkt_cnt",)),
    ("unknown", ("unknown_pkt_cnt",)),
)
UB_FLITS = (("receive", "rx_busi_flit_num"), ("transmit", "tx_busi_flit_num"))
UB_RETRIES = (("request", "retry_req_sum"), ("ack", "retry_ack_sum"))
ROCE_ERRORS = (
    ("rx_error_packets", "roce_rx_err_pkt_num"),
    ("tx_error_packets", "roce_tx_err_pkt_num"),
    ("retransmissions", "roce_new_pkt_rty_num"),
    ("cnp_received", "roce_rx_cnp_pkt_num"),
    ("cnp_sent", "roce_tx_cnp_pkt_num"),
    ("out_of_order", "roce_out_of_order_num"),
    ("unexpected_ack", "roce_unexpected_ack_num"),
    ("verification", "roce_verification_err_num"),
    ("qp_status", "roce_qp_status_err_num"),
    ("ecn_marked", "roce_ecn_db_num"),
)


@dataclass(frozen=True, slots=True)
class PortReading:
    """Everything known about one NIC port; a field per family, None/() when unknown."""

    npu: int
    chip: int
    port: int
    up: bool | None = None
    speed_bytes_per_second: float | None = None
    lanes: int | None = None  # 950 UB: active lanes (the -speed table's Width)
    max_lanes: int | None = None  # its Cap
    lane_state: str | None = None  # a LANE_STATES value
    bandwidth: tuple[tuple[str, float], ...] = ()  # 950 -bandwidth: (direction, bytes/s)
    ub_port_state: str | None = None  # 950 -ub_connect: a UB_PORT_STATES value
    carrier_up_changes: int | None = None
    carrier_down_changes: int | None = None
    traffic: Counts = ()  # (TRAFFIC key, value)
    receive_errors: Counts = ()  # (kind, value)
    transmit_errors: Counts = ()
    pause_frames: tuple[tuple[str, str, int], ...] = ()  # (direction, kind, value)
    pfc_frames: tuple[tuple[str, str, int], ...] = ()  # (direction, priority, value)
    roce_errors: Counts = ()
    ub_packets: tuple[tuple[str, str, int], ...] = ()  # (direction, UB_PACKETS type, value)
    ub_flits: Counts = ()  # (direction, business flits)
    ub_retries: Counts = ()  # (request | ack, link-layer retries)
    health_state: str | None = None  # a NET_HEALTH_STATES value
    optical: OpticalReport | None = None
    info: tuple[tuple[str, str], ...] = ()  # npu_network_info labels: ip, peer_switch, peer_port


@dataclass(frozen=True, slots=True)
class ChipLinks:
    """One chip's HCCS links, PCIe and SIO error counters (npu-smi's health tier)."""

    npu: int
    chip: int
    hccs: tuple[HccsLink, ...] = ()
    hccs_healthy: bool | None = None  # one health for the chip's HCCS, as the driver keeps it
    hccs_first_error_link: int | None = None  # the first port with a problem; None: none
    hccs_bandwidth: tuple[tuple[int, float, float], ...] = ()  # (link, tx, rx) bytes/s
    pcie_errors: Counts = ()  # (kind, count)
    sio_crc_errors: Counts = ()  # (direction, count)
    ub_link_state: str | None = None  # 950 -ub_connect: a UB_LINK_STATES value


@dataclass(frozen=True, slots=True)
class NetworkView:
    ports: tuple[PortReading, ...] = ()
    chips: tuple[ChipLinks, ...] = ()


EMPTY_NETWORK = NetworkView()


def _known(counters: PortCounters, pairs: Iterable[tuple[str, str]]) -> Counts:
    """(label, value) of the keys printed; the first printed key of a label wins."""
    found: dict[str, int] = {}
    for label, key in pairs:
        if label not in found and (v := counters.get(key)) is not None:
            found[label] = v
    return tuple(found.items())


def _first(counters: PortCounters, keys: Iterable[str]) -> int | None:
    return next((v for key in keys if (v := counters.get(key)) is not None), None)


def _pause(c: PortCounters) -> tuple[tuple[str, str, int], ...]:
    found: dict[tuple[str, str], int] = {}
    for direction, kind, key in PAUSE:
        if (direction, kind) not in found and (v := c.get(key)) is not None:
            found[(direction, kind)] = v
    return tuple((d, k, v) for (d, k), v in found.items())


def _from_counters(c: PortCounters) -> dict[str, object]:
    pfc = tuple(
        (direction, str(priority), v)
        for direction, short in (("receive", "rx"), ("transmit", "tx"))
        for priority in range(8)
        if (v := c.get(f"mac_{short}_pfc_pri{priority}_pkt_num")) is not None
    )
    return {
        "traffic": tuple(
            (k, v) for k, keys in TRAFFIC.items() if (v := _first(c, keys)) is not None
        ),
        "receive_errors": _known(c, RECEIVE_ERRORS),
        "transmit_errors": _known(c, TRANSMIT_ERRORS),
        "pause_frames": _pause(c),
        "pfc_frames": pfc,
        "roce_errors": _known(c, ROCE_ERRORS),
        "ub_packets": tuple(
            (direction, kind, v)
            for direction, short in (("receive", "rx"), ("transmit", "tx"))
            for kind, stems in UB_PACKETS
            if (v := _first(c, (f"{stem}_{short}" for stem in stems))) is not None
        ),
        "ub_flits": _known(c, UB_FLITS),
        "ub_retries": _known(c, UB_RETRIES),
    }


def read_port(key: PortKey, r: HccnResults) -> PortReading:
    link, speed, stats = r.link.get(key), r.speed.get(key), r.link_stats.get(key)
    health, address, lldp = r.health.get(key), r.address.get(key), r.lldp.get(key)
    counters, bandwidth = r.counters.get(key), r.bandwidth.get(key)
    ub = r.ub_connect.get((key[0], key[1]))
    info = {
        "ip": address.addresses[0][0] if address and address.addresses else None,
        "peer_switch": lldp.peer_switch if lldp else None,
        "peer_port": lldp.peer_port if lldp else None,
    }
    return PortReading(
        npu=key[0],
        chip=key[1],
        port=key[2],
        up=link.up if link else None,
        speed_bytes_per_second=speed.bytes_per_second if speed else None,
        lanes=speed.lanes if speed else None,
        max_lanes=speed.max_lanes if speed else None,
        lane_state=speed.lane_state if speed else None,
        ub_port_state=dict(ub.ports).get(key[2]) if ub else None,
        bandwidth=tuple(
            (direction, v)
            for direction, v in (
                ("transmit", bandwidth.transmit if bandwidth else None),
                ("receive", bandwidth.receive if bandwidth else None),
            )
            if v is not None
        ),
        carrier_up_changes=stats.up_count if stats else None,
        carrier_down_changes=stats.down_count if stats else None,
        health_state=health.state if health else None,
        optical=r.optical.get(key),
        info=tuple((k, v) for k, v in info.items() if v) if (address or lldp) else (),
        **(_from_counters(counters) if counters else {}),  # type: ignore[arg-type]
    )


def read_chip_links(
    npu: int, chip: int, parts: ChipInterconnect, ub: UbConnect | None = None
) -> ChipLinks:
    return ChipLinks(
        npu=npu,
        chip=chip,
        hccs=parts.hccs.links if parts.hccs else (),
        hccs_healthy=parts.hccs.healthy if parts.hccs else None,
        hccs_first_error_link=parts.hccs.first_error_link if parts.hccs else None,
        hccs_bandwidth=parts.hccs_bw.links if parts.hccs_bw else (),
        pcie_errors=parts.pcie.counts if parts.pcie else (),
        sio_crc_errors=parts.sio.counts if parts.sio else (),
        ub_link_state=ub.state if ub else None,
    )


def read_network(
    hccn: HccnResults, interconnect: Mapping[ChipId, ChipInterconnect], chips: Iterable[ChipId]
) -> NetworkView:
    """Ports and chip links of the chips in ``chips`` (the latest table), sorted."""
    current = set(chips)
    keys = {
        k
        for results in (
            hccn.link,
            hccn.speed,
            hccn.link_stats,
            hccn.counters,
            hccn.optical,
            hccn.health,
            hccn.address,
            hccn.lldp,
            hccn.bandwidth,
        )
        for k in results
        if (k[0], k[1]) in current
    }
    return NetworkView(
        ports=tuple(read_port(k, hccn) for k in sorted(keys)),
        chips=tuple(
            read_chip_links(
                n, c, interconnect.get((n, c), NO_INTERCONNECT), hccn.ub_connect.get((n, c))
            )
            for n, c in sorted(set(interconnect) | set(hccn.ub_connect))
            if (n, c) in current
        ),
    )
