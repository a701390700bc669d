"""The cross-check's comparisons: what differs, beyond tolerance, between DCMI's answer to a
query and npu-smi's answer to the same query.

Pure: two model reports in, the disagreements out. Which answer is then served is
``serving``'s choice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from npumon.daemon.model.chips import HealthReport, InfoTable, code_value
from npumon.daemon.model.network import ErrorCounts, HccsBandwidth, HccsReport

# the table's check: readings taken milliseconds apart, power and temperature move
POWER_TOLERANCE_WATTS = 10.0
POWER_TOLERANCE_RATIO = 0.10
TEMPERATURE_TOLERANCE_CELSIUS = 3.0
# a counter read by npu-smi just after DCMI may have grown by this much
LINK_COUNTER_SLACK = 10_000_000
LINK_COUNTER_RATIO = 0.01
# the detail values' check: two reads milliseconds apart, where utilization and the current
# AI Core clock move with the load
RATIO_TOLERANCE = 0.25
CURRENT_CLOCK_TOLERANCE_RATIO = 0.5


def disagreements(dcmi: InfoTable, cli: InfoTable) -> list[tuple[str, str]]:
    """(field, what differs) for each disagreement beyond tolerance; field "ids" for the chips."""
    ours = {(c.npu, c.chip): c for c in dcmi.chips}
    theirs = {(c.npu, c.chip): c for c in cli.chips}
    if set(ours) != set(theirs):
        return [("ids", f"dcmi lists {sorted(ours)}, npu-smi {sorted(theirs)}")]
    found = []
    for key, a in ours.items():
        b = theirs[key]
        for field, close in _CHECKS:
            x, y = getattr(a, field), getattr(b, field)
            if x is not None and y is not None and not close(x, y):
                found.append((field, f"NPU {key[0]} chip {key[1]}: dcmi {x}, npu-smi {y}"))
    return found


_CHECKS: tuple[tuple[str, Callable[[float, float], bool]], ...] = (
    ("hbm_total_bytes", lambda x, y: x == y),
    (
        "power_watts",
        lambda x, y: abs(x - y) <= max(POWER_TOLERANCE_WATTS, POWER_TOLERANCE_RATIO * abs(y)),
    ),
    ("temperature_celsius", lambda x, y: abs(x - y) <= TEMPERATURE_TOLERANCE_CELSIUS),
)


def _counters_close(x: int | None, y: int | None) -> bool:
    if x is None or y is None:
        return x == y
    return abs(x - y) <= max(LINK_COUNTER_SLACK, LINK_COUNTER_RATIO * max(x, y))


def link_disagreement(dcmi: object, cli: object) -> str | None:
    """What differs between DCMI's and npu-smi's `-t hccs` or `-t hccs-bw` of one chip: the
    chip's health or first error port, link numbers, lanes or speed; counters beyond the
    slack (bandwidths are samples of different moments: only their link numbers are
    compared). None: they agree."""
    if isinstance(dcmi, HccsBandwidth) and isinstance(cli, HccsBandwidth):
        ours, theirs = [link for link, _, _ in dcmi.links], [link for link, _, _ in cli.links]
        return None if ours == theirs else f"links dcmi {ours}, npu-smi {theirs}"
    assert isinstance(dcmi, HccsReport) and isinstance(cli, HccsReport)
    chip = (dcmi.healthy, dcmi.first_error_link), (cli.healthy, cli.first_error_link)
    if chip[0] != chip[1]:
        return f"health and first error port: dcmi {chip[0]}, npu-smi {chip[1]}"
    if len(dcmi.links) != len(cli.links):
        return f"{len(dcmi.links)} links through dcmi, {len(cli.links)} through npu-smi"
    for a, b in zip(dcmi.links, cli.links, strict=True):
        same = (a.link, a.lanes, a.speed_bytes_per_second) == (
            b.link,
            b.lanes,
            b.speed_bytes_per_second,
        )
        counters = ("tx_packets", "rx_packets", "retries", "crc_errors")
        if not same or not all(_counters_close(getattr(a, f), getattr(b, f)) for f in counters):
            return f"link {a.link}: dcmi {a}, npu-smi {b}"
    return None


def _close(field: str, x: float, y: float) -> bool:
    if field.endswith("_ratio"):
        return abs(x - y) <= RATIO_TOLERANCE
    if field == "aicore_current_hertz":
        return abs(x - y) <= CURRENT_CLOCK_TOLERANCE_RATIO * max(abs(x), abs(y))
    if field == "power_watts":
        return abs(x - y) <= max(POWER_TOLERANCE_WATTS, POWER_TOLERANCE_RATIO * abs(y))
    if field.endswith("_celsius"):
        return abs(x - y) <= TEMPERATURE_TOLERANCE_CELSIUS
    return x == y


def _rows(report: object) -> dict[int | None, object]:
    chips = getattr(report, "chips", None)
    return {None: report} if chips is None else {row.chip: row for row in chips}


def detail_disagreement(dcmi: object, cli: object) -> str | None:
    """What differs between DCMI's and npu-smi's answer to one detail or interconnect query,
    among the values both give: totals, counts and rated clocks equal; utilization within 25
    points, the current clock within 50 %, power and temperature as in the table's check;
    error counters within the links' slack; the health word and the set of error codes equal.
    None: they agree."""
    if isinstance(dcmi, HccsReport | HccsBandwidth):
        return link_disagreement(dcmi, cli)
    if isinstance(dcmi, ErrorCounts) and isinstance(cli, ErrorCounts):
        theirs = dict(cli.counts)
        for kind, count in dcmi.counts:
            if kind in theirs and not _counters_close(count, theirs[kind]):
                return f"{kind}: dcmi {count}, npu-smi {theirs[kind]}"
        return None
    if isinstance(dcmi, HealthReport) and isinstance(cli, HealthReport):
        codes = [{code_value(c) for c in r.error_codes} for r in (dcmi, cli)]
        if None not in (dcmi.status, cli.status) and dcmi.status != cli.status:
            return f"health: dcmi {dcmi.status}, npu-smi {cli.status}"
        if codes[0] != codes[1]:
            return f"error codes: dcmi {dcmi.error_codes}, npu-smi {cli.error_codes}"
        return None
    theirs_rows = _rows(cli)
    for chip, row in _rows(dcmi).items():
        other = theirs_rows.get(chip)
        if other is None:
            continue
        for f in dataclasses.fields(row):  # type: ignore[arg-type]
            x, y = getattr(row, f.name), getattr(other, f.name, None)
            if f.name in ("npu", "chip") or x is None or y is None:
                continue
            if not _close(f.name, x, y):
                return f"chip {chip} {f.name}: dcmi {x}, npu-smi {y}"
    return None
