"""Parsers for the Ascend 950 per-port forms, `hccn_tool -g -<query> -i <npu> [-u <udie> -p
<port>]`: the box tables of `-speed`, `-link_stat` and `-dev_info`.

Only documentation examples of these exist (and one SYNTHETIC test string); columns are found
by header name, with the position npu-exporter reads as the fallback, so either header works.
"""

from __future__ import annotations

import re

from npumon.daemon.model.network import (
    LANE_STATES,
    DevInfo,
    DevPort,
    LinkSpeed,
    LinkStats,
    PortBandwidth,
    UbConnect,
)
from npumon.daemon.parsers import values
from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.hccn_tool import lines

Row = tuple[int, str, list[str]]  # (line number, line, cells)
GBIT = 1e9 / 8  # bytes per second in one Gb/s
_SPEED_CELL = re.compile(r"(?P<num>\d{1,6})\s*(?P<unit>G|M)\Z")
_LANES_CELL = re.compile(r"[Xx](?P<n>\d{1,3})\Z")
_BANDWIDTH = re.compile(r"Bandwidth (?P<dir>TX|RX):\s*(?P<mb>\d+(?:\.\d+)?) MB/sec\Z")
MB = 1e6  # hccn_tool's MB/sec


def box_tables(text: str) -> list[tuple[list[str], list[Row]]]:
    """Every `+---+` box as (header cells, data rows). Two borders in a row (or the first one)
    open a new box whose first row is its header; a border between data rows only separates
    them, and a row whose first cell is empty (more addresses of one interface) is its own row."""
    tables: list[tuple[list[str], list[Row]]] = []
    after_border = True
    for line_no, line in lines(text):
        stripped = line.strip()
        if stripped.startswith("+"):
            if after_border:
                tables.append(([], []))
            after_border = True
            continue
        after_border = False
        if not (stripped.startswith("|") and stripped.endswith("|")) or not tables:
            raise ParseError("expected a table row or border", line_no, line)
        cells = [c.strip() for c in stripped[1:-1].split("|")]
        header, rows = tables[-1]
        if not header:
            header.extend(cells)
        elif len(cells) != len(header):
            raise ParseError(f"expected {len(header)} cells, got {len(cells)}", line_no, line)
        else:
            rows.append((line_no, line, cells))
    return [table for table in tables if table[0]]


def _fold(cell: str) -> str:
    return "".join(cell.lower().split())


def _column(header: list[str], names: tuple[str, ...], position: int) -> int:
    folded = [_fold(h) for h in header]
    for name in names:
        if name in folded:
            return folded.index(name)
    if position >= len(header):
        raise ParseError(f"no {names[0]!r} column in a {len(header)}-column table", 0, "")
    return position


def _speed(cell: str, line_no: int, line: str) -> float | None:
    """`400 G` (the -speed table) or `400` (Gbps, -dev_info) as bytes per second; `unknown`
    (a port whose link is down: `tool_speed_exec`, hicann driver `tool_product.c`) is none."""
    if values.is_absent(cell) or cell.lower() == "unknown":
        return None
    match = _SPEED_CELL.match(cell) or _SPEED_CELL.match(cell + " G")
    if match is None:
        raise ParseError(f"expected a speed like '400 G', got {cell!r}", line_no, line)
    return int(match["num"]) * GBIT / (1000 if match["unit"] == "M" else 1)


def _lanes(cell: str, line_no: int, line: str) -> int | None:
    """`X4` lanes; `NA` (a width of 0: no lane up) is none."""
    if values.is_absent(cell):
        return None
    match = _LANES_CELL.match(cell)
    if match is None:
        raise ParseError(f"expected lanes like 'X4', got {cell!r}", line_no, line)
    return int(match["n"])


def parse_speed_table(text: str) -> LinkSpeed:
    """The one-row `-speed` table: NPU, UDie, Port, Speed (`400 G`), Cap, Width, Status."""
    tables = box_tables(text)
    if len(tables) != 1 or len(tables[0][1]) != 1:
        raise ParseError("expected one table with one port row", 0, "")
    header, [(line_no, line, cells)] = tables[0]
    folded = [_fold(h) for h in header]
    at = {name: folded.index(name) for name in ("cap", "width", "status") if name in folded}
    status = cells[at["status"]].lower() if "status" in at else None
    return LinkSpeed(
        _speed(cells[_column(header, ("speed",), 3)], line_no, line),
        lanes=_lanes(cells[at["width"]], line_no, line) if "width" in at else None,
        max_lanes=_lanes(cells[at["cap"]], line_no, line) if "cap" in at else None,
        lane_state=None if status is None else status if status in LANE_STATES else "unknown",
    )


_UB_WORDS = {
    "UP": "up",
    "DOWN": "down",
    "PARTIAL LINK": "partial",
    "PARTIAL UP": "partial",  # the manual's example; the source prints PARTIAL LINK
    "NA": "na",
    "INITIAL": "initial",
}
_UB_PORT = re.compile(r"port\s+(?P<port>\d{1,3})\Z")


def parse_ub_connect(text: str) -> UbConnect:
    """`link status : <state>` then `port <n> : <state>` per port (`tool_ub_connect_exec`)."""
    state: str | None = None
    ports: dict[int, str] = {}
    for line_no, line in lines(text):
        key, sep, value = line.partition(":")
        key, word = " ".join(key.split()), " ".join(value.split()).upper()
        found = _UB_WORDS.get(word)
        port = _UB_PORT.match(key)
        if not sep or found is None:
            raise ParseError("expected '<link status | port N> : <state>'", line_no, line)
        if key == "link status" and state is None and found != "initial":
            state = found
        elif port is not None and int(port["port"]) not in ports and found != "na":
            ports[int(port["port"])] = found
        else:
            raise ParseError("unexpected or repeated -ub_connect line", line_no, line)
    if state is None:
        raise ParseError("no 'link status' line", 0, "")
    return UbConnect(state, tuple(sorted(ports.items())))


def parse_bandwidth(text: str) -> PortBandwidth:
    """`Bandwidth TX: %10.02f MB/sec` and `Bandwidth RX: ...` (`tool_ub_bandwidth_exec`)."""
    found: dict[str, float] = {}
    for line_no, line in lines(text):
        match = _BANDWIDTH.match(line.strip())
        if match is None or match["dir"] in found:
            raise ParseError("expected 'Bandwidth TX|RX: <n> MB/sec' once each", line_no, line)
        found[match["dir"]] = float(round(float(match["mb"]) * MB))
    if not found:
        raise ParseError("no bandwidth line", 0, "")
    return PortBandwidth(transmit=found.get("TX"), receive=found.get("RX"))


def parse_link_stat_table(text: str) -> LinkStats:
    """`link up count :    2`, `link down count :  2`, then a table of LINK_UP/LINK_DOWN rows
    (not read)."""
    counts: dict[str, int | None] = {}
    for line_no, line in lines(text):
        key, sep, value = line.partition(":")
        key = " ".join(key.split()).lower()
        if key in ("link up count", "link down count") and sep:
            counts[key] = values.parse_int(value, line_no=line_no, line=line)
        elif line.strip()[:1] not in ("+", "|"):
            raise ParseError("expected a count line or the records table", line_no, line)
    if "link up count" not in counts:
        raise ParseError("no 'link up count' line", 0, "")
    return LinkStats(counts["link up count"], counts.get("link down count"))


_PORT_TABLE = ("udieid", "portid")


def parse_dev_info(text: str) -> DevInfo:
    """The port table's UDie and Port (Speed, Port Type, Media and the interfaces: not read).

    A device with no UB port (a 1P card) prints no port table at all, only the interface and
    EID tables (`tool_print_port_info` returns at 0 ports, hicann driver `tool_dev_info.c`):
    that is no port, not an error."""
    tables = box_tables(text)
    if not tables:
        raise ParseError("no table in -dev_info output", 0, "")
    header, rows = tables[0]
    if _fold(header[0]) == "interfacename":
        return DevInfo(())
    if tuple(_fold(h) for h in header[:2]) != _PORT_TABLE:
        raise ParseError("expected the port table (UDie ID, Port ID) first", 0, "")
    if len(header) < 5:
        raise ParseError("the port table has fewer than 5 columns", 0, "")
    ports = []
    for line_no, line, cells in rows:
        udie = values.parse_int(cells[0], line_no=line_no, line=line)
        port = values.parse_int(cells[1], line_no=line_no, line=line)
        if udie is None or port is None or cells[4] not in ("UP", "DOWN"):
            raise ParseError("a port row needs UDie, Port and UP/DOWN", line_no, line)
        ports.append(DevPort(udie, port))
    return DevInfo(tuple(ports))
