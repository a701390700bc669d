"""Frozen results of the interconnect parsers: hccn_tool (RoCE NIC ports, optics) and npu-smi's
HCCS, PCIe and SIO queries, in base units (bytes, bits -> bytes per second, watts, volts).

``None`` means the tool did not give the value; a consumer never turns it into 0. Counters are
as printed: they restart at 0 on a driver reload and on `hccn_tool -stat -c`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

PortKey = tuple[int, int, int]
"""(npu, chip, port): the identity of every per-port series; port 0 on single-port chips."""

NET_HEALTH_STATES = (
    "success",
    "socket_fail",
    "receive_timeout",
    "unreachable",
    "time_exceeded",
    "fault",
    "init",
    "thread_error",
    "detect_ip_set",
    "unknown",
)
"""`hccn_tool -net_health -g` texts (driver codes 0..9) in lower_snake_case; others: unknown."""


# ---------------------------------------------------------------- hccn_tool, 910/910B/A3 forms
@dataclass(frozen=True, slots=True)
class LinkStatus:
    """`-link -g`: `link status: UP|DOWN`."""

    up: bool


LANE_STATES = ("normal", "downgraded", "abnormal", "unknown")
"""The 950 `-speed` table's Status (`tool_speed_exec`: normal, downgraded, abnormal); other
texts: unknown."""


@dataclass(frozen=True, slots=True)
class LinkSpeed:
    """`-speed -g` (`Speed: 100000 Mb/s`) or the 950 box table (`400 G`); None: Unknown!.
    The 950's table also gives the lanes: Width (active), Cap (the port's), and Status."""

    bytes_per_second: float | None
    lanes: int | None = None
    max_lanes: int | None = None
    lane_state: str | None = None  # a LANE_STATES value


@dataclass(frozen=True, slots=True)
class LinkStats:
    """`-link_stat -g`: link up/down counts since the driver loaded (the records after them
    are not read)."""

    up_count: int | None
    down_count: int | None  # older drivers print no `link down count` line


@dataclass(frozen=True, slots=True)
class PortCounters:
    """`-stat -g`: every `key:value` counter as printed (mac_*, roce_*, nic_*, or the 950 UB
    keys); the meaning of each key is `model/network_view.py`'s."""

    values: tuple[tuple[str, int], ...]

    def get(self, key: str) -> int | None:
        return next((v for k, v in self.values if k == key), None)


@dataclass(frozen=True, slots=True)
class OpticalReport:
    """`-optical -g`: the module's readings and its own alarm thresholds."""

    present: bool | None  # `present : present` / `not present`
    temperature_celsius: float | None = None
    supply_voltage_volts: float | None = None
    tx_power_watts: tuple[tuple[int, float], ...] = ()  # (lane, W); lane-less keys are lane 0
    rx_power_watts: tuple[tuple[int, float], ...] = ()
    tx_bias_amperes: tuple[tuple[int, float], ...] = ()
    # (quantity, bound, value): quantity temperature_celsius / supply_voltage_volts /
    # tx_power_watts / rx_power_watts, bound high / low
    thresholds: tuple[tuple[str, str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class NetHealth:
    """`-net_health -g`: the text as printed, as its NET_HEALTH_STATES value."""

    state: str


@dataclass(frozen=True, slots=True)
class NetAddress:
    """`-ip -g`: (address, netmask) pairs; empty when the port has no IP."""

    addresses: tuple[tuple[str, str | None], ...]


@dataclass(frozen=True, slots=True)
class LldpNeighbour:
    """`-lldp -g`: the switch port the NIC is cabled to, as the switch announces it."""

    peer_switch: str | None  # System Name, else the Chassis ID
    peer_port: str | None  # Port ID (Ifname)


# ---------------------------------------------------------------- hccn_tool, 950 only forms
@dataclass(frozen=True, slots=True)
class DevPort:
    """One row of the 950 `-dev_info -g` port table: where the per-port queries ask (its
    speed, type, link and media columns are not read: `-speed` and `-link` give them)."""

    udie: int
    port: int


@dataclass(frozen=True, slots=True)
class DevInfo:
    ports: tuple[DevPort, ...]


UB_LINK_STATES = ("up", "down", "partial", "na")
"""`-ub_connect`'s chip `link status` (`tool_ub_connect_exec`: UP all ports linked, DOWN none,
PARTIAL LINK some, NA no link needed)."""
UB_PORT_STATES = ("up", "down", "partial", "initial")
"""Its `port N` words: UP full lanes, DOWN (no port), PARTIAL LINK fewer lanes, INITIAL not
linked yet; the manual's `PARTIAL UP` is partial."""


@dataclass(frozen=True, slots=True)
class UbConnect:
    """The 950 `-g -ub_connect -i N` (PCIe cards only): the chip's UB link state and each
    port's."""

    state: str  # a UB_LINK_STATES value
    ports: tuple[tuple[int, str], ...]  # (port, UB_PORT_STATES value)


@dataclass(frozen=True, slots=True)
class PortBandwidth:
    """The 950 `-bandwidth` (`Bandwidth TX: %10.02f MB/sec`): the port's traffic over the
    sampling window, in bytes per second (MB read as 10^6 bytes)."""

    transmit: float | None
    receive: float | None


# ---------------------------------------------------------------- npu-smi interconnect queries
@dataclass(frozen=True, slots=True)
class HccsLink:
    """One HCCS port of `npu-smi info -t hccs` (the lists hold one entry per port)."""

    link: int  # the driver's port index (1-7; 2-7 on Atlas 9000 A3 SuperPoD; 0 on 310P)
    lanes: int | None = None
    speed_bytes_per_second: float | None = None
    tx_packets: int | None = None
    tx_octets: int | None = None  # not *_bytes: a counter, not a size (plausible.py)
    rx_packets: int | None = None
    rx_octets: int | None = None
    retries: int | None = None
    crc_errors: int | None = None


@dataclass(frozen=True, slots=True)
class HccsReport:
    """`npu-smi info -t hccs`: the chip's ports and what the driver keeps once per chip."""

    links: tuple[HccsLink, ...]
    healthy: bool | None = None  # `hccs health status : OK|NOK`; 310P prints none
    first_error_link: int | None = None  # `hccs first error lane`: the first port with a problem


@dataclass(frozen=True, slots=True)
class HccsBandwidth:
    """`npu-smi info -t hccs-bw`: per link (tx, rx) bytes per second (printed GB/s)."""

    links: tuple[tuple[int, float, float], ...]


@dataclass(frozen=True, slots=True)
class ErrorCounts:
    """`-t pcie-err` (kind -> count) or `-t sio-info` (direction -> CRC errors)."""

    counts: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class ChipInterconnect:
    """What the npu-smi health tier read about one chip's links (None: not read/unsupported)."""

    hccs: HccsReport | None = None
    hccs_bw: HccsBandwidth | None = None
    pcie: ErrorCounts | None = None
    sio: ErrorCounts | None = None


# ---------------------------------------------------------------- what the hccn_tool source holds
@dataclass(frozen=True, slots=True)
class HccnResults:
    """The latest result of every hccn_tool query, keyed by port, as the source published them."""

    link: Mapping[PortKey, LinkStatus] = field(default_factory=dict)
    speed: Mapping[PortKey, LinkSpeed] = field(default_factory=dict)
    link_stats: Mapping[PortKey, LinkStats] = field(default_factory=dict)
    counters: Mapping[PortKey, PortCounters] = field(default_factory=dict)
    optical: Mapping[PortKey, OpticalReport] = field(default_factory=dict)
    health: Mapping[PortKey, NetHealth] = field(default_factory=dict)
    address: Mapping[PortKey, NetAddress] = field(default_factory=dict)
    lldp: Mapping[PortKey, LldpNeighbour] = field(default_factory=dict)
    bandwidth: Mapping[PortKey, PortBandwidth] = field(default_factory=dict)  # 950 UB ports
    ub_connect: Mapping[tuple[int, int], UbConnect] = field(default_factory=dict)  # 950 chips
