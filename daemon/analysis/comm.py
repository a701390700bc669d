"""Communication from torch_npu's communication.json: transfer vs waiting, bandwidth per link
type, and the slow-link finding.

Layout: ``{"step13": {"collective" | "p2p": {"<op>@<group>": {...}, "Total Op Info": {...}}}}``;
each op has ``Communication Time Info`` (Elapse, Transit, Wait, Idle in ms) and ``Communication
Bandwidth Info`` per link type (Transit Size(MB), Transit Time(ms), Bandwidth(GB/s) = MB/ms).
Only ``Total Op Info`` is summed (the per-op entries add up to it). communication_matrix.json
(per src-dst link) is not read: the per-link-type totals here answer the same question.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from npumon.daemon.analysis.diagnosis import finding
from npumon.daemon.model.profile import Bottleneck, CommTimes, LinkStat, Thresholds

FILE = "communication.json"
_TIMES = {"elapse": "Elapse Time(ms)", "transit": "Transit Time(ms)",
          "wait": "Wait Time(ms)", "idle": "Idle Time(ms)"}


def _totals(data: object) -> Iterator[dict[str, object]]:
    if not isinstance(data, dict):
        return
    for step in data.values():
        for kind in step.values() if isinstance(step, dict) else ():
            total = kind.get("Total Op Info") if isinstance(kind, dict) else None
            if isinstance(total, dict):
                yield total


def _num(block: object, key: str) -> float:
    value = block.get(key) if isinstance(block, dict) else None
    return float(value) if isinstance(value, int | float) and value == value else 0.0


def read(paths: Sequence[Path], notes: list[str]) -> tuple[CommTimes | None, tuple[LinkStat, ...]]:
    """Sums over every file (rank) given; (None, ()) when none could be read."""
    times = dict.fromkeys(_TIMES, 0.0)
    links: dict[str, list[float]] = {}
    read_any = False
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
        except (OSError, ValueError) as exc:
            notes.append(f"{path}: not read ({type(exc).__name__})")
            continue
        read_any = True
        for total in _totals(data):
            info = total.get("Communication Time Info")
            for name, key in _TIMES.items():
                times[name] += _num(info, key) / 1e3
            bandwidth = total.get("Communication Bandwidth Info")
            for link, block in bandwidth.items() if isinstance(bandwidth, dict) else ():
                size_time = links.setdefault(str(link).upper(), [0.0, 0.0])
                size_time[0] += _num(block, "Transit Size(MB)")
                size_time[1] += _num(block, "Transit Time(ms)")
    if not read_any:
        return None, ()
    stats = tuple(
        LinkStat(link, mb * 1e6, ms / 1e3, mb / ms * 1e9 if ms > 0 and mb > 0 else None)
        for link, (mb, ms) in sorted(links.items())
        if mb > 0 or ms > 0
    )
    return CommTimes(times["elapse"], times["transit"], times["wait"], times["idle"]), stats


def slow_links(links: Sequence[LinkStat], t: Thresholds) -> tuple[Bottleneck, ...]:
    """A link type that moved at least slow_link_min_mb at under slow_link_ratio of its
    expected bandwidth (link_expected_gbps)."""
    found = []
    for link in links:
        expected = t.link_expected_gbps.get(link.link_type)
        if expected is None or link.bandwidth_bytes_per_second is None:
            continue
        if link.transit_bytes < t.slow_link_min_mb * 1e6:
            continue
        ratio = link.bandwidth_bytes_per_second / (expected * 1e9)
        if ratio < t.slow_link_ratio:
            found.append(finding(
                "slow_link",
                f"{link.link_type} moved {link.transit_bytes / 1e6:.1f} MB at "
                f"{link.bandwidth_bytes_per_second / 1e9:.1f} GB/s, {ratio:.0%} of the expected "
                f"{expected:g} GB/s (threshold {t.slow_link_ratio:.0%})",
                ratio,
                t.slow_link_ratio,
            ))
    return tuple(found)
