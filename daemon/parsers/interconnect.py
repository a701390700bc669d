"""Parsers for npu-smi's interconnect queries: `-t hccs`, `-t hccs-bw`, `-t pcie-err`,
`-t sio-info` (`npu-smi info -t <query> -i <npu> [-c <chip>]`).

`-t pcie-err` and `-t sio-info` are built from Ascend 950 documentation examples. No public
output of `-t hccs` or `-t hccs-bw` exists: those two parsers follow the driver source's print
format (`npu_info_print_ext.c`) and are checked against fixtures made from it (SYNTHETIC); they
accept only lines of that shape, so an unexpected layout is a parse error, never a wrong value.
"""

from __future__ import annotations

import re

from npumon.daemon.model.network import ErrorCounts, HccsBandwidth, HccsLink, HccsReport
from npumon.daemon.parsers import values
from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.hccn_tool import lines
from npumon.daemon.parsers.keyvalue import normalise_key

GBIT = 1e9 / 8
GB = 1e9
# `-t hccs` list keys -> HccsLink fields (the lane bitmap and first error lane are not kept)
_HCCS_FIELDS = {
    "hccs health status": "healthy",
    "hccs lane mode": "lanes",
    "hccs link speed": "speed_bytes_per_second",
    "hccs tx packets": "tx_packets",
    "hccs tx bytes": "tx_octets",
    "hccs rx packets": "rx_packets",
    "hccs rx bytes": "rx_octets",
    "hccs retry count": "retries",
    "hccs error count": "crc_errors",
}
_HCCS_IGNORED = frozenset({"hccs link lane list", "hccs first error lane"})
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
_BW_HEADER = re.compile(r"hccs link\s+tx_bandwidth\(GB/S\)\s+rx_bandwidth\(GB/S\)\Z", re.I)
_BW_ROW = re.compile(
    r"(?P<link>\d{1,3}|total)\s+(?P<tx>\d{1,9}\.\d{1,9})\s+(?P<rx>\d{1,9}\.\d{1,9})\Z"
)


def _hccs_value(name: str, token: str, line_no: int, line: str) -> object:
    if name == "healthy":
        if token not in ("OK", "NOK"):
            raise ParseError("hccs health status must be OK or NOK", line_no, line)
        return token == "OK"
    number = values.parse_int(token, line_no=line_no, line=line)
    if name == "speed_bytes_per_second" and number is not None:
        return number * GBIT  # printed in Gbps
    return number


def parse_hccs(text: str) -> HccsReport:
    """`\\t<key padded to 30> : [v0  v1 ... ]`, one list entry per HCCS port."""
    columns: dict[str, list[object]] = {}
    for line_no, line in lines(text):
        key, sep, value = line.partition(":")
        key, value = normalise_key(key), value.strip()
        if not sep or not key.startswith("hccs"):
            continue  # NPU ID / Chip ID lines, if a version prints them
        if not (value.startswith("[") and value.endswith("]")):
            raise ParseError("expected a bracketed list", line_no, line)
        if key in _HCCS_IGNORED:
            continue
        if key not in _HCCS_FIELDS or _HCCS_FIELDS[key] in columns:
            raise ParseError(f"unknown or repeated hccs line {key!r}", line_no, line)
        name = _HCCS_FIELDS[key]
        columns[name] = [_hccs_value(name, t, line_no, line) for t in value[1:-1].split()]
    widths = {len(v) for v in columns.values()}
    if not columns or len(widths) != 1:
        raise ParseError("hccs lists missing or of different lengths", 0, "")
    count = widths.pop()
    return HccsReport(
        tuple(
            HccsLink(link, **{name: col[link] for name, col in columns.items()})  # type: ignore[arg-type]
            for link in range(count)
        )
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
