"""Communication from torch_npu's communication.json: transfer vs waiting, bandwidth per link
type, packet sizes and byte alignment, for the communication rules (rules/slow_link.py,
small_packets.py, byte_alignment.py).

Layout: ``{"step13": {"collective" | "p2p": {"<op>@<group>": {...}, "Total Op Info": {...}}}}``;
each op has ``Communication Time Info`` (Elapse, Transit, Wait, Idle in ms) and ``Communication
Bandwidth Info`` per link type (Transit Size(MB), Transit Time(ms), Bandwidth(GB/s) = MB/ms).
Only ``Total Op Info`` is summed (the per-op entries add up to it).

communication_matrix.json, where present, holds the same transfers per src-dst link:
``{"step50": {"collective" | "p2p": {"<op>-<stat>@<group>": {"<src>-<dst>": {"Transport Type",
"Transit Size(MB)", "Transit Time(ms)", "Bandwidth(GB/s)", "Op Name"}}}}}``, where ``<stat>`` is
top1, middle, bottom1..3 (single ops, samples) or total (every op of that kind: the one summed).
It names the slowest rank pairs of a slow link type in the slow_link finding (at most
``PAIRS_NAMED``; never a metric label), and gives the per-link-type bandwidth of a rank that has
no communication.json. An export_type=db unit gives both documents from its analysis.db
(sqlite_comm.py). Its LOCAL entries (a rank to itself) are not a link and are left out.

The per-op entries count for one thing: packet sizes. msprof-analyze's packet analysis counts, per
transport (SDMA, RDMA), the ops that moved anything and those that moved less than a minimum size;
``small_packets`` is npumon's rule for the same figures, per rank as msprof-analyze counts them,
with two differences: it judges every rank (msprof-analyze one rank: the one of the lowest SDMA
bandwidth, in its slowest step) and it leaves out the ``Total Op Info`` entries (a step's collective
and p2p sums), which msprof-analyze counts as ops (on pp2dp2_level2's rank 0: 3 of 8 ops, 38 %,
where msprof-analyze says 30 %, 3 of 10 with the two totals; the small ops' time is the same, 0.81
ms).

The per-op ``Size Distribution`` (``{"<MB>": [transfers, ms]}`` per link type, MB = 1e6 bytes)
gives the sizes of single transfers: msprof-analyze's byte alignment rule flags the ops whose
SDMA transfers (link types HCCS, PCIE, SIO; RDMA is not judged) over 512 bytes are not a
multiple of 512 bytes (``byte_alignment``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from npumon.daemon.analysis.evidence import (
    PACKET_LINKS,
    CommRead,
    OpTransfers,
    PacketSizes,
    PairStat,
    RankComm,
)
from npumon.daemon.analysis.readers import confine, mindspore, sqlite_comm
from npumon.daemon.analysis.readers.tables import TableError
from npumon.daemon.model.profile import CommTimes, LinkStat

FILE = "communication.json"
_TIMES = {
    "elapse": "Elapse Time(ms)",
    "transit": "Transit Time(ms)",
    "wait": "Wait Time(ms)",
    "idle": "Idle Time(ms)",
}
TOTAL = "Total Op Info"
SDMA_LINKS = ("HCCS", "PCIE", "SIO")  # the link types SDMA transfers go over
_SAMPLE_OP = re.compile(r"-(top\d+|middle|bottom\d+)$")  # matrix entries that repeat single ops


def _distribution(op: object) -> dict[str, object]:
    """The op's SDMA Size Distribution: over HCCS, PCIE and SIO, else the SDMA entry's own."""
    bandwidth = op.get("Communication Bandwidth Info") if isinstance(op, dict) else None
    if not isinstance(bandwidth, dict):
        return {}
    merged: dict[str, object] = {}
    for link in SDMA_LINKS + ("SDMA",):
        block = bandwidth.get(link)
        sizes = block.get("Size Distribution") if isinstance(block, dict) else None
        if isinstance(sizes, dict) and sizes and (link != "SDMA" or not merged):
            merged.update({f"{link}:{k}": v for k, v in sizes.items()})
    return merged


def _transfers(data: object) -> Iterator[OpTransfers]:
    """Per op entry but the totals: its SDMA transfers of a known size (Size Distribution)."""
    for group in _groups(data):
        for name, op in group.items():
            if name == TOTAL:
                continue
            sizes = []
            for key, entry in _distribution(op).items():
                size = _bytes(key.partition(":")[2])
                count_ms = entry if isinstance(entry, list) and len(entry) == 2 else None
                if size is not None and count_ms is not None:
                    sizes.append((size, _value(count_ms[0]), _value(count_ms[1])))
            if sizes:
                yield OpTransfers(str(name).split("@")[0], tuple(sizes))


def _bytes(mb: str) -> int | None:
    try:
        value = float(mb) * 1e6
    except ValueError:
        return None
    return round(value) if value == value and abs(value) < 1e18 else None


def _groups(data: object) -> Iterator[dict[str, object]]:
    """{op name: op} of each step's collective and p2p groups (p2p may be [] when empty)."""
    if not isinstance(data, dict):
        return
    for step in data.values():
        for kind in step.values() if isinstance(step, dict) else ():
            if isinstance(kind, dict):
                yield kind


def _totals(data: object) -> Iterator[dict[str, object]]:
    for group in _groups(data):
        total = group.get(TOTAL)
        if isinstance(total, dict):
            yield total


def _op_sizes(data: object, link: str) -> Iterator[tuple[float, float]]:
    """(Transit Size(MB), Transit Time(ms)) over `link` of every op entry but the total."""
    for group in _groups(data):
        for name, op in group.items():
            bandwidth = op.get("Communication Bandwidth Info") if isinstance(op, dict) else None
            if name != TOTAL and isinstance(bandwidth, dict):
                block = bandwidth.get(link)
                yield _num(block, "Transit Size(MB)"), _num(block, "Transit Time(ms)")


def _num(block: object, key: str) -> float:
    return _value(block.get(key) if isinstance(block, dict) else None)


def _value(value: object) -> float:
    return float(value) if isinstance(value, int | float) and value == value else 0.0


def _matrix_ops(group: dict[str, object]) -> Iterator[dict[str, object]]:
    """The op entries of a matrix group that count each transfer once: the ``-total`` ones when
    the group has them, else every entry that is not a top/middle/bottom sample."""
    ops = {str(name).split("@")[0]: op for name, op in group.items() if isinstance(op, dict)}
    totals = [op for name, op in ops.items() if name.endswith("-total")]
    yield from totals or [op for name, op in ops.items() if not _SAMPLE_OP.search(name)]


def _matrix_pairs(data: object) -> dict[tuple[str, str, str], list[float]]:
    """{(link type, src, dst): [MB, ms]} of one communication_matrix.json, LOCAL left out."""
    pairs: dict[tuple[str, str, str], list[float]] = {}
    for group in _groups(data):
        for op in _matrix_ops(group):
            for key, entry in op.items():
                src, sep, dst = str(key).partition("-")
                link = entry.get("Transport Type") if isinstance(entry, dict) else None
                if not sep or not isinstance(link, str) or link.upper() == "LOCAL":
                    continue
                acc = pairs.setdefault((link.upper(), src.strip(), dst.strip()), [0.0, 0.0])
                acc[0] += _num(entry, "Transit Size(MB)")
                acc[1] += _num(entry, "Transit Time(ms)")
    return pairs


def _link_stats(links: dict[str, list[float]]) -> tuple[LinkStat, ...]:
    return tuple(
        LinkStat(link, mb * 1e6, ms / 1e3, mb / ms * 1e9 if ms > 0 and mb > 0 else None)
        for link, (mb, ms) in sorted(links.items())
        if mb > 0 or ms > 0
    )


def _load(path: Path, notes: list[str], matrix: bool = False) -> object | None:
    """A communication(_matrix).json, or the same document from an export_type=db analysis.db
    or a MindSpore hccl_raw_N.csv (no matrix)."""
    try:
        if path.name.startswith("hccl_raw_"):
            return None if matrix else mindspore.communication(path)
        if path.suffix == ".db":
            return sqlite_comm.matrix(path) if matrix else sqlite_comm.communication(path)
        data: object = json.loads(confine.read_text(path))
    except TableError as exc:
        notes.append(str(exc))
        return None
    except (OSError, ValueError) as exc:
        notes.append(f"{path}: not read ({type(exc).__name__})")
        return None
    return data


def read_rank(paths: Sequence[Path], names: Sequence[str], matrices: Sequence[Path]) -> RankComm:
    """One rank's communication.json files (``names``: the rank each is named by) and
    communication_matrix.json files, as read; the matrix's pairs stand in for the link totals
    when the rank has no communication.json."""
    matrix_notes: list[str] = []
    pairs: list[tuple[str, str, str, float, float]] = []
    for path in matrices:
        data = _load(path, matrix_notes, matrix=True)
        for (link, src, dst), (mb, ms) in _matrix_pairs(data).items() if data else ():
            pairs.append((link, src, dst, mb, ms))
    notes: list[str] = []
    times: list[tuple[float, float, float, float]] = []
    links: list[tuple[str, float, float]] = []
    packets: list[PacketSizes] = []
    transfers: list[OpTransfers] = []
    read_any = False
    for index, path in enumerate(paths):
        data = _load(path, notes)
        if data is None:
            continue
        read_any = True
        for total in _totals(data):
            info = total.get("Communication Time Info")
            elapse, transit, wait, idle = (_num(info, key) / 1e3 for key in _TIMES.values())
            times.append((elapse, transit, wait, idle))
            bandwidth = total.get("Communication Bandwidth Info")
            for link, block in bandwidth.items() if isinstance(bandwidth, dict) else ():
                mb, ms = _num(block, "Transit Size(MB)"), _num(block, "Transit Time(ms)")
                links.append((str(link).upper(), mb, ms))
        rank = names[index] if index < len(names) else str(path)
        for link in PACKET_LINKS:
            sizes = tuple((mb, ms) for mb, ms in _op_sizes(data, link) if mb > 0)
            if sizes:
                packets.append(PacketSizes(rank, link, sizes))
        transfers.extend(_transfers(data))
    return RankComm(
        read_any,
        tuple(times),
        tuple(links),
        tuple(pairs),
        not paths,
        tuple(packets),
        tuple(transfers),
        tuple(matrix_notes),
        tuple(notes),
    )


def combine(ranks: Sequence[RankComm], notes: list[str]) -> CommRead:
    """Every rank's communication summed; the ranks' problems appended to ``notes``, the
    matrices' first."""
    pairs: dict[tuple[str, str, str], list[float]] = {}
    links: dict[str, list[float]] = {}
    for r in ranks:
        notes.extend(r.matrix_notes)
        for link, src, dst, mb, ms in r.matrix_pairs:
            acc = pairs.setdefault((link, src, dst), [0.0, 0.0])
            acc[0] += mb
            acc[1] += ms
            if r.matrix_links:
                link_total = links.setdefault(link, [0.0, 0.0])
                link_total[0] += mb
                link_total[1] += ms
    pair_stats = tuple(
        PairStat(link, src, dst, mb * 1e6, ms / 1e3)
        for (link, src, dst), (mb, ms) in sorted(pairs.items())
    )
    times = [0.0, 0.0, 0.0, 0.0]  # elapse, transit, wait, idle
    for r in ranks:
        notes.extend(r.notes)
        for total in r.times:
            for i, value in enumerate(total):
                times[i] += value
        for link, mb, ms in r.links:
            size_time = links.setdefault(link, [0.0, 0.0])
            size_time[0] += mb
            size_time[1] += ms
    if not any(r.read for r in ranks):
        return CommRead(None, _link_stats(links), (), pair_stats)
    return CommRead(
        CommTimes(*times),
        _link_stats(links),
        tuple(p for r in ranks for p in r.packets),
        pair_stats,
        tuple(t for r in ranks for t in r.transfers),
    )
