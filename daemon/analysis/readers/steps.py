"""Read the small per-step tables (torch_npu step_trace_time, msprof step_trace) with csv."""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from npumon.daemon.analysis.readers import confine
from npumon.daemon.analysis.readers.tables import TableError, find_column, read_head
from npumon.daemon.parsers.values import ABSENT_TOKENS

_REEXPORT = "re-run the export or wait for the profiler to finish"


@dataclass(frozen=True, slots=True)
class TorchStep:
    """One row of step_trace_time.csv, microseconds; None where the file has no value."""

    step: int | None
    device_id: int | None
    computing_us: float
    communication_us: float | None  # Communication(Not Overlapped)
    free_us: float | None
    preparing_us: float | None
    overlapped_us: float | None = None  # Overlapped: communication while computing
    communication_total_us: float | None = None  # Communication: not overlapped + overlapped


@dataclass(frozen=True, slots=True)
class GraphIteration:
    """One row of a graph-mode step_trace table, microseconds."""

    iteration_id: int
    model_id: int | None
    device_id: int | None
    iteration_us: float
    fp_bp_us: float | None
    refresh_us: float | None  # Iteration Refresh, named Grad Refresh Bound in CANN 5
    data_aug_us: float | None  # the gap before this iteration; N/A on the first one


def _number(path: Path, row_no: int, token: str) -> float | None:
    text = token.strip()  # time fields carry a trailing TAB on purpose (for Excel)
    if text in ABSENT_TOKENS:
        return None
    try:
        number = float(text)
    except ValueError:  # the cell itself is not quoted: a file's content stays out of logs
        raise TableError(
            f"{path}: line {row_no}: expected a number, got {len(text)} other characters"
        ) from None
    return number if math.isfinite(number) else None  # NaN/inf in a table: unknown, not a value


def _rows(path: Path, notes: list[str]) -> Iterator[tuple[int, list[str], list[str]]]:
    """(line number, header, row) for each complete data row."""
    head = read_head(path)
    with confine.open_text(path, newline="") as handle:
        lines = handle.read().splitlines()[head.skip_lines + 1 :]
    if not head.complete and lines:
        lines.pop()
        notes.append(f"{path}: last line incomplete (file still being written?); ignored it")
    for offset, row in enumerate(csv.reader(lines)):
        if any(cell.strip() for cell in row):
            yield head.skip_lines + 2 + offset, head.header, row


@dataclass(frozen=True, slots=True)
class _Row:
    path: Path
    header: list[str]
    cells: list[str]
    line_no: int

    def get(self, *aliases: str) -> float | None:
        index = find_column(self.header, aliases)
        if index is None or index >= len(self.cells):  # short rows: missing cells are absent
            return None
        return _number(self.path, self.line_no, self.cells[index])


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def read_torch_steps(path: Path, notes: list[str]) -> list[TorchStep]:
    head = read_head(path)
    if find_column(head.header, ("Computing",)) is None:
        raise TableError(f"{path}: no header row with Computing; {_REEXPORT}")
    steps = []
    for row_no, header, cells in _rows(path, notes):
        cell = _Row(path, header, cells, row_no).get
        computing = cell("Computing")
        if computing is None:
            continue
        steps.append(
            TorchStep(
                step=_int(cell("Step")),
                device_id=_int(cell("Device_id")),
                computing_us=computing,
                communication_us=cell("Communication(Not Overlapped)"),
                free_us=cell("Free"),
                preparing_us=cell("Preparing"),
                overlapped_us=cell("Overlapped"),
                communication_total_us=cell("Communication"),
            )
        )
    return steps


def read_graph_steps(paths: Sequence[Path], notes: list[str]) -> list[GraphIteration]:
    """All rows of every file; duplicate ``Reduce`` column pairs are simply not looked at."""
    iterations = []
    for path in paths:
        head = read_head(path)
        if find_column(head.header, ("Iteration Time(us)",)) is None:
            raise TableError(f"{path}: no header row with Iteration Time(us); {_REEXPORT}")
        for row_no, header, cells in _rows(path, notes):
            cell = _Row(path, header, cells, row_no).get
            iteration_id, iteration_us = cell("Iteration ID"), cell("Iteration Time(us)")
            if iteration_id is None or iteration_us is None:
                continue
            iterations.append(
                GraphIteration(
                    iteration_id=int(iteration_id),
                    model_id=_int(cell("Model ID")),
                    device_id=_int(cell("Device_id")),
                    iteration_us=iteration_us,
                    fp_bp_us=cell("FP to BP Time(us)"),
                    refresh_us=cell("Iteration Refresh(us)", "Grad Refresh Bound(us)"),
                    data_aug_us=cell("Data Aug Bound(us)"),
                )
            )
    return iterations
