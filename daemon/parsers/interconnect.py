"""Parsers for npu-smi's interconnect queries: `-t hccs`, `-t hccs-bw`, `-t pcie-err`,
`-t sio-info` (`npu-smi info -t <query> -i <npu> [-c <chip>]`).

`-t pcie-err` and `-t sio-info` are built from Ascend 950 documentation examples. `-t hccs` and
`-t hccs-bw` follow the driver source's print functions (`print_npu_hccs_lane`,
`print_npu_310P_hccs_lane_packet_info`, `print_npu_single_hccs_lane`,
`printf_hccs_bandwidth_info`) and are checked against fixtures made from them; they accept only
lines of that shape, so an unexpected layout is a parse error, never a wrong value."""

from __future__ import annotations

import re

from npumon.daemon.model.network import ErrorCounts, HccsBandwidth, HccsLink, HccsReport
from npumon.daemon.parsers import values
from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.hccn_tool import lines
from npumon.daemon.parsers.keyvalue import normalise_key

GBIT = 1e9 / 8
GB = 1e9
# `-t hccs` list keys -> HccsLink fields; the driver's ORIENT_CH build prints `xlink ...` keys
_HCCS_PREFIXES = ("hccs", "xlink")
_HCCS_LISTS = {
    "lane mode": "lanes",
    "link speed": "speed_bytes_per_second",
    "tx packets": "tx_packets",
    "tx bytes": "tx_octets",
    "rx packets": "rx_packets",
    "rx bytes": "rx_octets",
    "retry count": "retries",
    "error count": "crc_errors",
}
_LANE_LIST = "link lane list"  # which of a port's lanes carry traffic: not kept, only checked
_LANE_BITS = re.compile(r"[01]{1,8}\Z")
_HEALTH, _FIRST_ERROR = "health status", "first error lane"  # one value per chip
HCCS_LAST_PORT = 7  # the all-links lists end at port 7 (DCMI_HCCS_910B_PCS_NUM)
PCIE_KINDS = {
    "tx error count": "tx",
    "rx error count": "rx",
    "lcrc error count": "lcrc",
    "ecrc error count": "ecrc",
    "retry count": "retry",
    # 310/310P cards
    "pcs rx error count": "pcs_rx",
    "phy lane error count": "phy_lane",
    "dl lcrc error count": "dl_lcrc",
    "dl dcrc error count": "dl_dcrc",
}
SIO_DIRECTIONS = {"tx error count": "transmit", "rx error count": "receive"}
_BW_HEADER = re.compile(r"(hccs|xlink) link\s+tx_bandwidth\(GB/S\)\s+rx_bandwidth\(GB/S\)\Z", re.I)
_BW_ROW = re.compile(
    r"(?P<link>\d{1,3}|total)\s+(?P<tx>\d{1,9}\.\d{1,9})\s+(?P<rx>\d{1,9}\.\d{1,9})\Z"
)


def _hccs_list(name: str, value: str, line_no: int, line: str) -> list[int | float | None]:
    if not (value.startswith("[") and value.endswith("]")):
        raise ParseError("expected a bracketed list", line_no, line)
    tokens = value[1:-1].split()
    if name == _LANE_LIST:
        if not all(_LANE_BITS.match(t) for t in tokens):
            raise ParseError("expected 0/1 lane digits", line_no, line)
        return [None] * len(tokens)
    numbers = [values.parse_int(t, line_no=line_no, line=line) for t in tokens]
    if name == "link speed":  # printed in Gbps
        return [None if n is None else n * GBIT for n in numbers]
    return list(numbers)


def _healthy(value: str, line_no: int, line: str) -> bool:
    if value not in ("OK", "NOK"):
        raise ParseError("hccs health status must be OK or NOK", line_no, line)
    return value == "OK"


def _first_error(value: str, line_no: int, line: str) -> int | None:
    """The first port with a problem; NA while pcs_status is 0."""
    return values.parse_int(value, line_no=line_no, line=line)


def _hccs_ports(count: int, chip_wide: bool, lane: int | None) -> range:
    """The port index of each list entry: the one asked with `-lane`; 310P's from 0; else the
    board's offset (1, or 2 on Atlas 9000 A3 SuperPoD) to port 7."""
    if lane is not None:
        if count != 1:
            raise ParseError(f"-lane {lane} answered {count} entries a list, not 1", 0, "")
        return range(lane, lane + 1)
    if not chip_wide:
        return range(count)
    if not 1 < count <= HCCS_LAST_PORT:  # one entry is a `-lane` answer, whose port is not printed
        raise ParseError(f"{count} hccs ports: the lists run from port 1 or 2 to 7", 0, "")
    return range(HCCS_LAST_PORT + 1 - count, HCCS_LAST_PORT + 1)


def parse_hccs(text: str, lane: int | None = None) -> HccsReport:
    """`\\t<key padded to 30> : OK` for the chip's health and first error lane, and
    `\\t<key> : [v0  v1 ... ]` lists, one entry per HCCS port (310P: the counters alone).
    ``lane``: the port asked with `-lane`, whose answer is lists of one."""
    columns: dict[str, list[int | float | None]] = {}
    chip: dict[str, tuple[str, int, str]] = {}  # the chip-wide lines: (value, line_no, line)
    for line_no, line in lines(text):
        key, sep, value = line.partition(":")
        prefix, _, name = normalise_key(key).partition(" ")
        if not sep or prefix not in _HCCS_PREFIXES:
            continue  # NPU ID / Chip ID lines, if a version prints them
        if name in columns or name in chip:
            raise ParseError(f"repeated hccs line {name!r}", line_no, line)
        if name in (_HEALTH, _FIRST_ERROR):
            chip[name] = (value.strip(), line_no, line)
        elif name in _HCCS_LISTS or name == _LANE_LIST:
            columns[name] = _hccs_list(name, value.strip(), line_no, line)
        else:
            raise ParseError(f"unknown hccs line {name!r}", line_no, line)
    widths = {len(v) for v in columns.values()}
    if not columns or len(widths) != 1:
        raise ParseError("hccs lists missing or of different lengths", 0, "")
    if len(chip) == 1:  # 310P prints neither
        raise ParseError("hccs health status without first error lane, or the reverse", 0, "")
    ports = _hccs_ports(widths.pop(), bool(chip), lane)
    fields = {_HCCS_LISTS[k]: v for k, v in columns.items() if k in _HCCS_LISTS}
    return HccsReport(
        tuple(
            HccsLink(port, **{f: col[i] for f, col in fields.items()})  # type: ignore[arg-type]
            for i, port in enumerate(ports)
        ),
        healthy=_healthy(*chip[_HEALTH]) if chip else None,
        first_error_link=_first_error(*chip[_FIRST_ERROR]) if chip else None,
    )


def parse_hccs_bw(text: str) -> HccsBandwidth:
    """The `hccs link / tx_bandwidth(GB/S) / rx_bandwidth(GB/S)` header, one row per link and a
    `total` row; tx comes before rx (the source's header order)."""
    found = list(lines(text))
    if not found or not _BW_HEADER.match(found[0][1].strip()):
        first = found[0] if found else (0, "")
        raise ParseError("expected the hccs link / tx / rx header", *first)
    links: list[tuple[int, float, float]] = []
    for line_no, line in found[1:]:
        match = _BW_ROW.match(line.strip())
        if match is None:
            raise ParseError("expected '<link> <tx GB/s> <rx GB/s>'", line_no, line)
        if match["link"] != "total":
            links.append((int(match["link"]), float(match["tx"]) * GB, float(match["rx"]) * GB))
    if not links:
        raise ParseError("no hccs link row", 0, "")
    return HccsBandwidth(tuple(links))


def _counts(text: str, known: dict[str, str], what: str) -> ErrorCounts:
    counts: list[tuple[str, int]] = []
    for line_no, line in lines(text):
        key, sep, value = line.partition(":")
        if not sep:
            raise ParseError("expected 'key : value'", line_no, line)
        name = known.get(normalise_key(key))
        number = values.parse_int(value, line_no=line_no, line=line) if name else None
        if name is not None and number is not None:
            counts.append((name, number))
    if not counts:
        raise ParseError(f"no {what} counter", 0, "")
    return ErrorCounts(tuple(counts))


def parse_pcie_err(text: str) -> ErrorCounts:
    """`NPU ID : 0`, then TX/RX/Lcrc/Ecrc error and Retry counts (310P: its own four)."""
    return _counts(text, PCIE_KINDS, "PCIe error")


def parse_sio(text: str) -> ErrorCounts:
    """`TX Error Count : 0`, `RX Error Count : 0`: CRC errors on the die-to-die (SIO) link."""
    return _counts(text, SIO_DIRECTIONS, "SIO error")
