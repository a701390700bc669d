"""MindSpore <= 2.2 ``profiler/`` output: operator time by type and graph-mode steps, per rank.

``aicore_intermediate_{rank}_type.csv``: the AI Core operators by type, ``op_type`` (older:
``kernel_type``), ``execution_time`` (``total_time``) in ms over the capture,
``execution_frequency``, ``percent``. ``step_trace_raw_{rank}_detail_time.csv``: one row per
step in 10 ns ticks (MindInsight divides by 1e5 for ms): ``total``, ``iteration_interval`` (the
gap before the step: data loading), ``fp_and_bp``, ``tail`` (gradient refresh); a last ``-`` row
holds the averages and a step of total 0 is none. MindSpore >= 2.3 writes ``*_ascend_ms/`` with
torch_npu's ASCEND_PROFILER_OUTPUT tables instead (layout.py).

``hccl_raw_{rank}.csv``: one row per step (a last ``-`` row of averages), ``communication_cost``
and ``wait_cost`` in ms, ``link_info`` ``{"src-dst": {"SDMA" | "RDMA": [time ms, size kB,
bandwidth kB/s, (RDMA: wait ms)]}}`` summed over the step's ops, and
``communication_operator_cost`` ``{op: [step, cost ms, wait ms, link_info]}`` (the units are
MindSpore's hccl_parser.py's). ``communication`` gives it as torch_npu's communication.json
(comm.py reads that shape): transit = communication_cost, wait = wait_cost, elapse = their
sum (the table has no elapse or idle); link sizes and times from link_info, a rank to itself
(``0-0``, a copy on the chip) left out as comm.py leaves out LOCAL, the summed bandwidth column
not used. It holds no single-transfer sizes, so byte_alignment is not judged on it.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npumon.daemon.analysis.readers import confine
from npumon.daemon.analysis.readers.steps import GraphIteration
from npumon.daemon.analysis.readers.tables import TableError, find_column

if TYPE_CHECKING:
    import pandas as pd

TICK_US = 0.01  # step_trace_raw counts 10 ns ticks
_TYPE = ("op_type", "kernel_type")
_TIME_MS = ("execution_time", "total_time")
_COUNT = ("execution_frequency",)


def _table(path: Path) -> tuple[list[str], list[list[str]]]:
    try:
        with confine.open_text(path, newline="") as handle:
            rows = [r for r in csv.reader(handle) if r]
    except OSError as exc:
        raise TableError(f"{path}: cannot read ({exc.strerror})") from exc
    if not rows:
        raise TableError(f"{path}: the file is empty; re-run the MindSpore profiler's analyse()")
    return [h.strip() for h in rows[0]], rows[1:]


def _float(cells: list[str], index: int | None) -> float | None:
    if index is None or index >= len(cells):
        return None
    try:
        return float(cells[index])
    except ValueError:
        return None


def _need(path: Path, header: list[str], names: tuple[str, ...]) -> int:
    index = find_column(header, names)
    if index is None:
        raise TableError(
            f"{path}: no {names[0]} column (the header has {len(header)} fields): "
            "not a MindSpore profiler table"
        )
    return index


def read_op_types(path: Path) -> pd.DataFrame:
    """aicore_intermediate_*_type.csv as op_statistic rows: op_type, core_type (AI_CORE),
    count, total_us, avg_us."""
    import pandas as pd

    header, body = _table(path)
    kind, time, count = (_need(path, header, n) for n in (_TYPE, _TIME_MS, _COUNT))
    records = []
    for cells in body:
        total_ms, n = _float(cells, time), _float(cells, count)
        if kind < len(cells) and total_ms is not None:
            records.append(
                {
                    "op_type": cells[kind].strip(),
                    "core_type": "AI_CORE",
                    "count": n,
                    "total_us": total_ms * 1e3,
                    "avg_us": total_ms * 1e3 / n if n else None,
                }
            )
    columns = ["op_type", "core_type", "count", "total_us", "avg_us"]
    return pd.DataFrame.from_records(records, columns=columns).astype(
        {
            "op_type": "category",
            "core_type": "category",
            "count": "float64",
            "total_us": "float64",
            "avg_us": "float64",
        }
    )


def read_steps(path: Path, rank: int | None) -> list[GraphIteration]:
    """step_trace_raw_*_detail_time.csv as graph iterations (microseconds)."""
    header, body = _table(path)
    step, total = _need(path, header, ("step_num",)), _need(path, header, ("total",))
    gap, fp_bp, tail = (
        find_column(header, (n,)) for n in ("iteration_interval", "fp_and_bp", "tail")
    )
    iterations = []
    for cells in body:
        number, ticks = _float(cells, step), _float(cells, total)
        if number is None or not ticks:  # the average row ("-") and empty steps
            continue
        iterations.append(
            GraphIteration(
                iteration_id=int(number),
                model_id=None,
                device_id=rank,
                iteration_us=ticks * TICK_US,
                fp_bp_us=_us(cells, fp_bp),
                refresh_us=_us(cells, tail),
                data_aug_us=_us(cells, gap),
            )
        )
    return iterations


def _us(cells: list[str], index: int | None) -> float | None:
    ticks = _float(cells, index)
    return None if ticks is None else ticks * TICK_US


TOTAL = "Total Op Info"


def _links(info: object) -> dict[str, dict[str, float]]:
    """link_info summed per link type over the src-dst pairs, a rank to itself left out:
    {link: {Transit Size(MB), Transit Time(ms)}}."""
    links: dict[str, dict[str, float]] = {}
    for pair, by_link in info.items() if isinstance(info, dict) else ():
        src, _, dst = str(pair).partition("-")
        if src == dst or not isinstance(by_link, dict):
            continue
        for link, values in by_link.items():
            if not isinstance(values, list) or len(values) < 2:
                continue
            ms, kb = (float(v) if isinstance(v, int | float) else 0.0 for v in values[:2])
            block = links.setdefault(
                str(link).upper(), {"Transit Size(MB)": 0.0, "Transit Time(ms)": 0.0}
            )
            block["Transit Size(MB)"] += kb / 1e3
            block["Transit Time(ms)"] += ms
    return links


def _times(transit_ms: float | None, wait_ms: float | None) -> dict[str, float]:
    transit, wait = transit_ms or 0.0, wait_ms or 0.0
    return {"Elapse Time(ms)": transit + wait, "Transit Time(ms)": transit, "Wait Time(ms)": wait}


def _json(path: Path, cells: list[str], index: int | None) -> object:
    if index is None or index >= len(cells):
        return None
    try:
        return json.loads(cells[index])
    except ValueError as exc:
        raise TableError(f"{path}: a link_info cell is not JSON ({exc}); not read") from exc


def communication(path: Path) -> dict[str, Any]:
    """hccl_raw_N.csv as communication.json: ``{step: {"collective": {op | Total Op Info:
    {Communication Time Info, Communication Bandwidth Info}}}}``, the ``-`` average row left
    out."""
    header, body = _table(path)
    step = _need(path, header, ("step_num",))
    cost, wait, info, ops = (
        find_column(header, (n,))
        for n in ("communication_cost", "wait_cost", "link_info", "communication_operator_cost")
    )
    doc: dict[str, Any] = {}
    for cells in body:
        number = _float(cells, step)
        if number is None:
            continue
        group: dict[str, Any] = {
            TOTAL: {
                "Communication Time Info": _times(_float(cells, cost), _float(cells, wait)),
                "Communication Bandwidth Info": _links(_json(path, cells, info)),
            }
        }
        per_op = _json(path, cells, ops)
        for name, op in per_op.items() if isinstance(per_op, dict) else ():
            if isinstance(op, list) and len(op) >= 4:
                group[f"{name}@"] = {
                    "Communication Time Info": _times(*(_number(v) for v in op[1:3])),
                    "Communication Bandwidth Info": _links(op[3]),
                }
        doc[f"step{int(number)}"] = {"collective": group}
    if not doc:
        raise TableError(f"{path}: no step rows, not read: no communication figures for this rank")
    return doc


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None
