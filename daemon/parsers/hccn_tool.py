"""Parsers for `hccn_tool -i <phy> -<query> -g` on 910/910B/A3 (one RoCE port per chip).

Formats: the captures in tests/fixtures/hccn_tool/ and, for `-speed` (no public capture), the
driver source's print format (`Speed: %d Mb/s`). A line of three dots is a documentation
elision (`...`); it is skipped, never taken for data.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from npumon.daemon.model.network import (
    NET_HEALTH_STATES,
    LinkSpeed,
    LinkStats,
    LinkStatus,
    LldpNeighbour,
    NetAddress,
    NetHealth,
    PortCounters,
)
from npumon.daemon.parsers import values
from npumon.daemon.parsers.errors import ParseError

ELISION = "..."
_COUNTER = re.compile(r"(?P<key>[A-Za-z0-9_]{1,64}):\s?(?P<value>\d{1,20})\Z")
_SPEED = re.compile(r"Speed:\s*(?:(?P<mbps>\d{1,9})\s*Mb/s|(?P<unknown>Unknown!?))\Z")
_DEV_PREFIX = re.compile(r"\[(?:devid|device) \d{1,4}\]")
_RECORD = re.compile(r"\S.{0,40}?\d{4}\s+LINK (?:UP|DOWN)\Z")  # a link-change record (not read)
MBIT = 1_000_000 / 8  # bytes per second in one Mb/s


def lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line without its end) for every non-blank line that is not an elision."""
    for line_no, line in enumerate(text.splitlines(), start=1):
        if line.strip() and line.strip() != ELISION:
            yield line_no, line


def _one_value(text: str, key: str) -> tuple[str, int, str]:
    """The value of the single `key: value` line the output must be."""
    found = [(n, line) for n, line in lines(text)]
    if len(found) != 1:
        raise ParseError(
            f"expected one '{key}:' line, got {len(found)} lines",
            found[1][0] if len(found) > 1 else 0,
            found[1][1] if found[1:] else "",
        )
    line_no, line = found[0]
    name, sep, value = line.partition(":")
    if not sep or name.strip().lower() != key:
        raise ParseError(f"expected '{key}:'", line_no, line)
    return value.strip(), line_no, line


def parse_link(text: str) -> LinkStatus:
    """`link status: UP` (also the 950 `-g -link -i N -u U -p P` form)."""
    value, line_no, line = _one_value(text, "link status")
    if value not in ("UP", "DOWN"):
        raise ParseError("link status is neither UP nor DOWN", line_no, line)
    return LinkStatus(up=value == "UP")


def parse_speed(text: str) -> LinkSpeed:
    """`Speed: 100000 Mb/s`, or `Speed: Unknown!` (no speed: None). Built from the driver's
    print format: no public capture of this form exists."""
    found = list(lines(text))
    if len(found) != 1:
        raise ParseError(f"expected one 'Speed:' line, got {len(found)}", 0, "")
    line_no, line = found[0]
    match = _SPEED.match(line.strip())
    if match is None:
        raise ParseError("expected 'Speed: <n> Mb/s'", line_no, line)
    mbps = match["mbps"]
    return LinkSpeed(bytes_per_second=None if mbps is None else int(mbps) * MBIT)


def parse_link_stat(text: str) -> LinkStats:
    """`[devid N]link up count : 2`, `link down count` (newer drivers), then the records (not
    read)."""
    counts: dict[str, int | None] = {}
    for line_no, raw in lines(text):
        line = _DEV_PREFIX.sub("", raw, count=1) if _DEV_PREFIX.match(raw) else raw
        if _RECORD.match(line.strip()):
            continue
        key, sep, value = line.partition(":")
        key = " ".join(key.split()).lower()
        if not sep:
            raise ParseError("expected 'key : value' or a link record", line_no, raw)
        if key in ("link up count", "link down count"):
            counts[key] = values.parse_int(value, line_no=line_no, line=raw)
        elif key not in ("current time", "link change records"):
            raise ParseError(f"unknown -link_stat line {key!r}", line_no, raw)
    if "link up count" not in counts:
        raise ParseError("no 'link up count' line", 0, "")
    return LinkStats(counts["link up count"], counts.get("link down count"))


def parse_stat(text: str) -> PortCounters:
    """`packet statistics:` then `key:value` counters (`key: value` on the 950 UB form)."""
    found = list(lines(text))
    if not found or found[0][1].strip() != "packet statistics:":
        raise ParseError("expected 'packet statistics:' first", *(found[0] if found else (0, "")))
    counters: list[tuple[str, int]] = []
    for line_no, line in found[1:]:
        match = _COUNTER.match(line.strip())
        if match is None:
            raise ParseError("expected 'name:count'", line_no, line)
        counters.append((match["key"], int(match["value"])))
    return PortCounters(tuple(counters))


def net_health_state(text: str) -> str:
    """`Socket fail` -> socket_fail; older drivers (or an edited capture) print `Socket failed`."""
    state = "_".join(text.lower().split())
    state = "socket_fail" if state == "socket_failed" else state
    return state if state in NET_HEALTH_STATES else "unknown"


def parse_net_health(text: str) -> NetHealth:
    value, line_no, line = _one_value(text, "net health status")
    if not value:
        raise ParseError("empty net health status", line_no, line)
    return NetHealth(state=net_health_state(value))


def parse_ip(text: str) -> NetAddress:
    """`ipaddr:` / `netmask:` pairs; empty output is a port with no IP configured."""
    pairs: list[tuple[str, str | None]] = []
    for line_no, line in lines(text):
        key, sep, value = line.strip().partition(":")
        if key == "ipaddr" and sep and value.strip():
            pairs.append((value.strip(), None))
        elif key == "netmask" and sep and pairs and pairs[-1][1] is None:
            pairs[-1] = (pairs[-1][0], value.strip() or None)
        else:
            raise ParseError("expected 'ipaddr:' then 'netmask:'", line_no, line)
    return NetAddress(tuple(pairs))


def _tlvs(text: str) -> list[tuple[str, list[str]]]:
    """TLV name lines (`Port ID TLV`) and the lines under each; value lines of output that a
    `grep` cut from its TLV go under the name ""."""
    tlvs: list[tuple[str, list[str]]] = []
    for _, line in lines(text):
        if not line[:1].isspace() and line.rstrip().endswith(" TLV"):
            tlvs.append((line.strip(), []))
        else:
            if not tlvs:
                tlvs.append(("", []))
            tlvs[-1][1].append(line.strip())
    return tlvs


def _tagged(lines_: list[str], tag: str) -> str | None:
    for line in lines_:
        name, sep, value = line.partition(":")
        if sep and name.strip().lower() == tag and value.strip() not in ("", ELISION):
            return value.strip()
    return None


def parse_lldp(text: str) -> LldpNeighbour:
    """The switch's LLDP announcement: System Name (else Chassis ID) and Port ID (Ifname)."""
    tlvs = _tlvs(text)
    if not tlvs:
        raise ParseError("no LLDP TLV", 0, "")
    by_name = dict(tlvs)
    name_lines = [v for v in by_name.get("System Name TLV", []) if v != ELISION]
    chassis = by_name.get("Chassis ID TLV", [])
    switch = (
        name_lines[0]
        if name_lines
        else (_tagged(chassis, "mac") or _tagged(chassis, "ifname") or _tagged(chassis, "ipv4"))
    )
    port_lines = by_name.get("Port ID TLV", by_name.get("", []))
    port = _tagged(port_lines, "ifname") or _tagged(port_lines, "mac")
    return LldpNeighbour(peer_switch=switch, peer_port=port)
