"""Write simulated steps as CANN 8 profiler tables: torch_npu and msprof spellings, real quirks.

Quirks kept on purpose (the daemon's readers must cope with them): a trailing TAB after every
timestamp, ``N/A`` cells (communication tasks, AI CPU PMU counters), torch_npu's shapes with
literal quotes (three double quotes each side in the file), repeated ``Reduce Start/Duration``
pairs.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path

from npumon.simulator.profiles import Step, Task

NA = "N/A"
EAGER_MODEL_ID = 4294967295  # 0xFFFFFFFF: op outside a GE graph (PyTorch eager)
GRAPH_MODEL_ID = 1
SLICE_ROWS = 5000  # msprof splits big summaries into op_summary_slice_N_<ts>.csv

PMU_HEADER = [
    "aicore_time(us)",
    "aic_total_cycles",
    "aic_mac_time(us)",
    "aic_mac_ratio",
    "aic_scalar_time(us)",
    "aic_scalar_ratio",
    "aic_mte1_time(us)",
    "aic_mte1_ratio",
    "aic_mte2_time(us)",
    "aic_mte2_ratio",
    "aic_fixpipe_time(us)",
    "aic_fixpipe_ratio",
    "aic_icache_miss_rate",
    "aiv_time(us)",
    "aiv_total_cycles",
    "aiv_vec_time(us)",
    "aiv_vec_ratio",
    "aiv_scalar_time(us)",
    "aiv_scalar_ratio",
    "aiv_mte2_time(us)",
    "aiv_mte2_ratio",
    "aiv_mte3_time(us)",
    "aiv_mte3_ratio",
    "aiv_icache_miss_rate",
    "cube_utilization(%)",
]
_TENSOR_HEADER = [
    "HF32 Eligible",
    "Input Shapes",
    "Input Data Types",
    "Input Formats",
    "Output Shapes",
    "Output Data Types",
    "Output Formats",
    "Context ID",
]
# torch_npu 2.7.1 / CANN 8.3.RC1 kernel_details.csv (as in the real sample, Block Dim spelling)
KERNEL_DETAILS_HEADER = [
    "Step Id",
    "Device_id",
    "Model ID",
    "Task ID",
    "Stream ID",
    "Name",
    "Type",
    "OP State",
    "Accelerator Core",
    "Start Time(us)",
    "Duration(us)",
    "Wait Time(us)",
    "Block Dim",
    "Mix Block Dim",
    *_TENSOR_HEADER,
    *PMU_HEADER,
]
# msprof op_summary, newest generation (Block Num since the 2026-01 rename)
OP_SUMMARY_HEADER = [
    "Device_id",
    "Model ID",
    "Task ID",
    "Stream ID",
    "Op Name",
    "OP Type",
    "OP State",
    "Task Type",
    "Task Start Time(us)",
    "Task Duration(us)",
    "Task Wait Time(us)",
    "Block Num",
    "Mix Block Num",
    *_TENSOR_HEADER,
    *PMU_HEADER,
]
OP_STATISTIC_HEADER = [
    "Device_id",
    "OP Type",
    "Core Type",
    "Count",
    "Total Time(us)",
    "Min Time(us)",
    "Avg Time(us)",
    "Max Time(us)",
    "Ratio(%)",
]
STEP_TRACE_TIME_HEADER = [
    "Device_id",
    "Step",
    "Computing",
    "Communication(Not Overlapped)",
    "Overlapped",
    "Communication",
    "Free",
    "Stage",
    "Bubble",
    "Communication(Not Overlapped and Exclude Receive)",
    "Preparing",
]
STEP_TRACE_HEADER = [
    "Device_id",
    "Iteration ID",
    "FP Start(us)",
    "BP End(us)",
    "Iteration End(us)",
    "Iteration Time(us)",
    "FP to BP Time(us)",
    "Iteration Refresh(us)",
    "Data Aug Bound(us)",
    "Model ID",
]


def _f(value: float) -> str:
    return f"{value:.3f}"


def _t(value_us: float) -> str:
    return f"{value_us:.3f}\t"  # msprof appends a TAB so Excel keeps all 16 digits


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def _pmu(task: Task) -> list[str]:
    """PipeUtilization counters; AI CPU and communication tasks have none (N/A)."""
    core = task.op.core if task.op else "HCCL"
    if core in ("AI_CPU", "HCCL"):
        return [NA] * len(PMU_HEADER)
    d = task.duration_us
    cube = core in ("AI_CORE", "MIX_AIC")
    vector = core != "AI_CORE"
    aic = (
        [
            d * 0.97,
            int(d * 0.97 * 1800),
            d * 0.8,
            0.8,
            d * 0.05,
            0.05,
            d * 0.1,
            0.1,
            d * 0.4,
            0.4,
            d * 0.2,
            0.2,
            0.01,
        ]
        if cube
        else [0.0] * 13
    )
    aiv = (
        [
            d * 0.95,
            int(d * 0.95 * 1800),
            d * 0.6,
            0.6,
            d * 0.05,
            0.05,
            d * 0.3,
            0.3,
            d * 0.2,
            0.2,
            0.02,
        ]
        if vector
        else [0.0] * 11
    )
    cells = [str(v) if isinstance(v, int) else _f(v) for v in (*aic, *aiv)]
    return [*cells, _f(70.0 if cube else 0.0)]


def _block(task: Task) -> tuple[int, int]:
    core = task.op.core if task.op else "HCCL"
    return {
        "AI_CORE": (24, 0),
        "MIX_AIC": (24, 48),
        "MIX_AIV": (40, 20),
        "AI_VECTOR_CORE": (40, 0),
    }.get(core, (0, 0))


def _base_cells(task: Task, device_id: int, torch: bool, model_id: int, index: int) -> list[str]:
    """Device_id .. Context ID in op_summary order (kernel_details renames, same order)."""
    op = task.op
    block, mix = _block(task)
    if op is None:
        name = f"hcom_allReduce__{task.start_us % 1000:.0f}_0_1"
        return [
            str(device_id),
            str(model_id),
            NA,
            NA,
            name,
            "hcom_allReduce_",
            NA,
            "HCCL" if torch else "COMMUNICATION",
            _t(task.start_us),
            _f(task.duration_us),
            _f(task.wait_us),
            "0",
            "0",
            NA,
            NA,
            NA,
            NA,
            NA,
            NA,
            NA,
            NA,
        ]
    name = op.kernel if torch else f"{op.op_type}_{index}"
    first = op.input_shapes.split(";")[0]
    # torch_npu writes shapes with literal quotes around them, msprof plain
    shapes, out = (f'"{op.input_shapes}"', f'"{first}"') if torch else (op.input_shapes, first)
    return [
        str(device_id),
        str(model_id),
        str(task.task_id % 65536),
        "2",
        name,
        op.op_type,
        "static",
        op.core,
        _t(task.start_us),
        _f(task.duration_us),
        _f(task.wait_us),
        str(block),
        str(mix),
        "NO",
        shapes,
        op.input_dtypes,
        op.input_formats,
        out,
        op.input_dtypes.split(";")[0],
        op.output_formats,
        NA,
    ]


def kernel_rows(steps: Sequence[Step], device_id: int, torch: bool) -> list[list[str]]:
    model_id = EAGER_MODEL_ID if torch else GRAPH_MODEL_ID
    rows = []
    for step in steps:
        for index, task in enumerate(step.tasks):
            cells = [*_base_cells(task, device_id, torch, model_id, index), *_pmu(task)]
            rows.append([str(step.step_id), *cells] if torch else cells)
    return rows


def op_statistic_rows(steps: Sequence[Step], device_id: int) -> list[list[str]]:
    """Per (op type, core type), biggest total first; communication is not in this table."""
    groups: dict[tuple[str, str], list[float]] = {}
    for step in steps:
        for task in step.tasks:
            if task.op is not None:
                groups.setdefault((task.op.op_type, task.op.core), []).append(task.duration_us)
    total = sum(sum(d) for d in groups.values()) or 1.0
    ranked = sorted(groups.items(), key=lambda kv: -sum(kv[1]))
    return [
        [
            str(device_id),
            op_type,
            core,
            str(len(d)),
            _f(sum(d)),
            _f(min(d)),
            _f(sum(d) / len(d)),
            _f(max(d)),
            _f(100.0 * sum(d) / total),
        ]
        for (op_type, core), d in ranked
    ]


def step_trace_time_rows(steps: Sequence[Step], device_id: int) -> list[list[str]]:
    rows = []
    for s in steps:
        overlapped = s.communication_us * 0.3
        rows.append(
            [
                str(device_id),
                str(s.step_id),
                _f(s.computing_us),
                _f(s.communication_us),
                _f(overlapped),
                _f(s.communication_us + overlapped),
                _f(s.free_us),
                _f(s.total_us),
                "0",
                _f(s.communication_us),
                _f(s.preparing_us),
            ]
        )
    return rows


def step_trace_header(reduce_pairs: int) -> list[str]:
    return [*STEP_TRACE_HEADER, *["Reduce Start(us)", "Reduce Duration(us)"] * reduce_pairs]


def step_trace_rows(steps: Sequence[Step], device_id: int, reduce_pairs: int) -> list[list[str]]:
    """Graph iterations; the first Data Aug Bound is N/A (no previous iteration end)."""
    rows = []
    for i, s in enumerate(steps):
        fp_start = s.start_us + s.data_aug_us
        bp_end = fp_start + s.fp_bp_us
        end = bp_end + s.refresh_us
        reduce_us = s.refresh_us * 0.8 / reduce_pairs
        reduces = []
        for k in range(reduce_pairs):
            reduces += [_t(bp_end - s.fp_bp_us * 0.1 + k * reduce_us), _f(reduce_us)]
        rows.append(
            [
                str(device_id),
                str(s.step_id),
                _t(fp_start),
                _t(bp_end),
                _t(end),
                _f(end - s.start_us),
                _f(s.fp_bp_us),
                _f(s.refresh_us),
                NA if i == 0 else _f(s.data_aug_us),
                str(GRAPH_MODEL_ID),
                *reduces,
            ]
        )
    return rows


def stamp(seconds: float, digits: int = 14) -> str:
    """``YYYYMMDDhhmmss`` (14) or with milliseconds (17), local time as the tools write it."""
    text = datetime.fromtimestamp(seconds).strftime("%Y%m%d%H%M%S%f")
    return text[:digits]


def write_op_summary(
    directory: Path, rows: Sequence[Sequence[str]], seconds: float, slice_rows: int = SLICE_ROWS
) -> list[Path]:
    """One op_summary_<ts>.csv, or slices whose timestamps differ as msprof's do."""
    if len(rows) <= slice_rows:
        path = directory / f"op_summary_{stamp(seconds)}.csv"
        write_csv(path, OP_SUMMARY_HEADER, rows)
        return [path]
    paths = []
    for number, first in enumerate(range(0, len(rows), slice_rows)):
        path = directory / f"op_summary_slice_{number}_{stamp(seconds + number)}.csv"
        write_csv(path, OP_SUMMARY_HEADER, rows[first : first + slice_rows])
        paths.append(path)
    return paths
