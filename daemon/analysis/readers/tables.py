"""Read profiler CSV tables whatever their header generation: big ones with pandas, small with csv.

pandas is imported inside the functions that need it so importing this module stays cheap.
Step tables hold one row per step, so the csv module reads them: it copes with the repeated
``Reduce Start(us)`` columns and ragged rows without pandas' column mangling.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from npumon.daemon.analysis.evidence import PMU_RATIOS
from npumon.daemon.analysis.readers import confine
from npumon.daemon.analysis.readers.chunks import CsvSpec, concat_frames, read_csv_ranges
from npumon.daemon.parsers.values import ABSENT_TOKENS

if TYPE_CHECKING:
    import pandas as pd

_HEADER_PROBE_BYTES = 1 << 16
_REEXPORT = "re-run `msprof --export=on --output=<PROF dir>` or wait for the profiler to finish"

# canonical name -> header spellings across generations (compared after normalisation)
KERNEL_ALIASES: dict[str, tuple[str, ...]] = {
    "name": ("Name", "Op Name"),
    "op_type": ("Type", "OP Type"),
    "core_type": ("Accelerator Core", "Task Type"),
    "duration_us": ("Duration(us)", "Task Duration(us)"),
    "op_state": ("OP State",),
}
OP_STAT_ALIASES: dict[str, tuple[str, ...]] = {
    "op_type": ("OP Type", "Type"),
    "core_type": ("Core Type", "Task Type", "Accelerator Core"),
    "count": ("Count",),
    "total_us": ("Total Time(us)",),
    "avg_us": ("Avg Time(us)",),
}
PMU_ALIASES: dict[str, tuple[str, ...]] = {
    **{k: KERNEL_ALIASES[k] for k in ("name", "op_type", "core_type", "duration_us")},
    "input_shapes": ("Input Shapes",),
    "output_shapes": ("Output Shapes",),
    **{r: (r, r.removeprefix("aiv_")) for r in PMU_RATIOS},
}
# read with them where the table has them: the task's start and its PMU times, for the fusible
# operator sequences (fusible.py)
SEQUENCE_ALIASES: dict[str, tuple[str, ...]] = {
    "start_us": ("Start Time(us)", "Task Start Time(us)"),
    "aicore_us": ("aicore_time(us)",),
    "aiv_us": ("aiv_time(us)",),
    "aic_mte2_us": ("aic_mte2_time(us)", "mte2_time(us)"),
    "aiv_mte2_us": ("aiv_mte2_time(us)",),
    "aic_fixpipe_us": ("aic_fixpipe_time(us)",),
    "aiv_mte3_us": ("aiv_mte3_time(us)", "mte3_time(us)"),
}
# 910A only (910B has aic_mac_ratio): an AI_CORE task that never used the cube did vector work
MAC_RATIO = "mac_ratio"
# operator_pmu reads a head of the kernel tables: PMU_MAX_BYTES over all of a profile's tables
# (~24,000 tasks), at least PMU_MIN_BYTES of each (~3,000)
PMU_MAX_BYTES = 8 << 20
PMU_MIN_BYTES = 1 << 20
_CATEGORIES = ("name", "op_type", "core_type", "op_state", "input_shapes", "output_shapes")


class TableError(Exception):
    """A table that cannot be used; the message names the file and what to do about it."""


@dataclass(frozen=True, slots=True)
class Table:
    """Rows of one kind from one or more files (slices concatenated), plus per-file notes."""

    frame: pd.DataFrame
    notes: tuple[str, ...]


def normalise(column: str) -> str:
    """``Task Duration(us)`` and ``task duration`` compare equal; so do stray spaces and tabs."""
    text = column.strip().lower()
    return text.removesuffix("(us)").strip()


def find_column(header: Sequence[str], aliases: Sequence[str]) -> int | None:
    wanted = {normalise(a) for a in aliases}
    for index, column in enumerate(header):
        if normalise(column) in wanted:
            return index
    return None


@dataclass(frozen=True, slots=True)
class _Head:
    header: list[str]
    skip_lines: int  # leading ``# `` provenance lines before the header
    data_start: int  # byte offset of the first data row
    complete: bool  # False when the last row was cut short (a writer still at work)


def read_head(path: Path) -> _Head:
    """The header row; a clear TableError for empty or header-less files."""
    try:
        with confine.open_binary(path) as handle:
            probe = handle.read(_HEADER_PROBE_BYTES)
            size = handle.seek(0, 2)
            handle.seek(max(0, size - _HEADER_PROBE_BYTES))
            tail = handle.read()
    except OSError as exc:
        raise TableError(f"{path}: cannot read ({exc.strerror})") from exc
    lines = probe.decode("utf-8", errors="replace").splitlines()
    skip = 0
    while skip < len(lines) and lines[skip].startswith("# "):
        skip += 1
    if skip >= len(lines) or not lines[skip].strip():
        raise TableError(f"{path}: the file is empty; {_REEXPORT}")
    header = next(csv.reader([lines[skip]]))
    offset = 0
    for _ in range(skip + 1):
        newline = probe.find(b"\n", offset)
        offset = len(probe) if newline < 0 else newline + 1
    fields = [h.strip() for h in header]
    return _Head(fields, skip, offset, _last_row_complete(tail, len(fields), offset >= size))


def _last_row_complete(tail: bytes, columns: int, header_only: bool) -> bool:
    """A final line without newline is complete when it has every field (some tools omit it)."""
    if header_only or tail.endswith((b"\n", b"\r")):
        return True
    last = tail.rsplit(b"\n", 1)[-1].decode("utf-8", errors="replace")
    return len(next(csv.reader([last]), [])) >= columns


def _columns(
    path: Path, head: _Head, aliases: dict[str, tuple[str, ...]], required: Sequence[str]
) -> dict[str, str]:
    """canonical -> the file's own column name; TableError when a required one is missing."""
    found = {}
    for canonical, names in aliases.items():
        index = find_column(head.header, names)
        if index is not None:
            found[canonical] = head.header[index]
    missing = [aliases[c][0] for c in required if c not in found]
    if missing:
        raise TableError(
            f"{path}: no header row with {', '.join(missing)} (the first line has "
            f"{len(head.header)} fields, none of them that); the file is truncated or not a "
            f"profiler table, {_REEXPORT}"
        )
    return found


def _read_frame(
    path: Path,
    columns: dict[str, str],
    numeric: Sequence[str],
    head: _Head,
    max_bytes: int | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    import pandas as pd

    dtypes = {columns[c]: "category" for c in _CATEGORIES if c in columns}
    dtypes.update({columns[c]: "float64" for c in numeric if c in columns})
    spec = CsvSpec(tuple(head.header), tuple(columns.values()), dtypes, tuple(ABSENT_TOKENS))
    try:
        frame = read_csv_ranges(path, head.data_start, spec, max_bytes)
    except pd.errors.ParserError as exc:  # "Expected 5 fields in line 3, saw 7": no content
        raise TableError(
            f"{path}: unreadable table ({str(exc).splitlines()[0][:200]}); {_REEXPORT}"
        ) from exc
    except ValueError as exc:  # its message quotes the cell: a file's content stays out of logs
        raise TableError(
            f"{path}: unreadable table (a value is not a number in a numeric column); {_REEXPORT}"
        ) from exc
    frame = frame.rename(columns={v: k for k, v in columns.items()})
    for name in (c for c in numeric if c in frame):  # "inf" parses: treat it as unknown, like NaN
        frame[name] = frame[name].mask(frame[name].abs() == float("inf"))
    notes = []
    capped = max_bytes is not None and path.stat().st_size - head.data_start > max_bytes
    if not head.complete and not capped and len(frame):
        frame = frame.iloc[:-1]  # the last line was cut short by a writer still at work
        notes.append(f"{path}: last line incomplete (file still being written?); ignored it")
    return frame, notes


def read_kernels(paths: Sequence[Path]) -> Table:
    """kernel_details / op_summary slices -> name, op_type, core_type, duration_us, op_state."""
    frames, notes = [], []
    for path in paths:
        head = read_head(path)
        columns = _columns(path, head, KERNEL_ALIASES, ("duration_us",))
        if "name" in columns and "op_type" in columns:
            del columns["name"]  # names are only needed to guess Level0 op types: skip the bulk
        frame, file_notes = _read_frame(path, columns, ("duration_us",), head)
        frames.append(frame)
        notes.extend(file_notes)
    return Table(concat_frames(frames), tuple(notes))


def read_kernel_names(paths: Sequence[Path]) -> Table:
    """Only name and duration (Level0 tables, whose types are N/A)."""
    frames, notes = [], []
    for path in paths:
        head = read_head(path)
        columns = _columns(
            path,
            head,
            {k: KERNEL_ALIASES[k] for k in ("name", "duration_us")},
            ("name", "duration_us"),
        )
        frame, file_notes = _read_frame(path, columns, ("duration_us",), head)
        frames.append(frame)
        notes.extend(file_notes)
    return Table(concat_frames(frames), tuple(notes))


def read_op_statistic(paths: Sequence[Path]) -> Table:
    """op_statistic -> op_type, core_type, count, total_us, avg_us."""
    frames, notes = [], []
    for path in paths:
        head = read_head(path)
        columns = _columns(path, head, OP_STAT_ALIASES, ("op_type", "total_us"))
        frame, file_notes = _read_frame(path, columns, ("count", "total_us", "avg_us"), head)
        frames.append(frame)
        notes.extend(file_notes)
    return Table(concat_frames(frames), tuple(notes))


def read_pmu(paths: Sequence[Path], max_bytes: int = PMU_MAX_BYTES) -> Table | None:
    """name, op_type, core_type, duration_us, shapes and the vector PMU ratios of the rows in
    the first ``max_bytes`` of each table (all of a table up to ~24,000 tasks; beyond, a
    note says how much was judged); None when a table lacks the PMU or shape columns (Level0,
    or no PipeUtilization metrics); 910A's mac_ratio too where the table has it. Operator names
    and shapes are strings: reading them for every row of a 1,000,000-row table cost more than
    the rest of the analysis together, and the mean ratios of an operator's shapes are settled
    long before."""
    frames, notes = [], []
    for path in paths:
        head = read_head(path)
        columns = _columns(path, head, PMU_ALIASES, ("duration_us",))
        if len(columns) < len(PMU_ALIASES):
            return None
        mac = find_column(head.header, (MAC_RATIO,))
        if mac is not None:
            columns[MAC_RATIO] = head.header[mac]
        for name, spellings in SEQUENCE_ALIASES.items():
            at = find_column(head.header, spellings)
            if at is not None:
                columns[name] = head.header[at]
        frame, file_notes = _read_frame(
            path,
            columns,
            ("duration_us", *PMU_RATIOS, MAC_RATIO, *SEQUENCE_ALIASES),
            head,
            max_bytes,
        )
        if path.stat().st_size - head.data_start > max_bytes:
            file_notes.append(
                f"{path}: operator PMU ratios judged on its first "
                f"{len(frame):,} tasks ({max_bytes / 2**20:g} MB)"
            )
        frames.append(frame)
        notes.extend(file_notes)
    return Table(concat_frames(frames), tuple(notes)) if frames else None
