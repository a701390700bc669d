"""Independent readings of the msprof fixtures (csv module only) and tree builders for tests."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "msprof"
ABSENT = {"", "N/A", "NA", "-", "--"}


def rows(name: str) -> tuple[list[str], list[list[str]]]:
    with (FIXTURES / name).open(encoding="utf-8", newline="") as handle:
        table = list(csv.reader(handle))
    return [h.strip() for h in table[0]], [r for r in table[1:] if r]


def column(name: str, *headers: str) -> list[str | None]:
    """Cell of the first header spelling present, per row; None where the row is short."""
    header, body = rows(name)
    index = next(header.index(h) for h in headers if h in header)
    return [r[index] if index < len(r) else None for r in body]


def number(cell: str | None) -> float | None:
    if cell is None or cell.strip() in ABSENT:
        return None
    return float(cell.strip())


def torch_tree(root: Path, rank: int, **tables: str) -> Path:
    """``rank_N_ascend_pt/ASCEND_PROFILER_OUTPUT/<kind>.csv`` copied from fixtures."""
    out = root / f"rank_{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    for kind, fixture in tables.items():
        shutil.copyfile(FIXTURES / fixture, out / f"{kind}.csv")
    return out.parent


def four_rank_tree(root: Path) -> Path:
    torch_tree(
        root,
        0,
        step_trace_time="step_trace_time_torchnpu_cann8.3rc1_rank0.csv",
        op_statistic="op_statistic_torchnpu_cann8.3rc1.csv",
        kernel_details="kernel_details_torchnpu_cann8.3rc1_level2.csv",
    )
    for rank in (1, 2, 3):
        torch_tree(
            root, rank, step_trace_time=f"step_trace_time_torchnpu_cann8.3rc1_rank{rank}.csv"
        )
    return root
