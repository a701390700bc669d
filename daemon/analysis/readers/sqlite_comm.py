"""export_type=db communication: analysis.db's CommAnalyzer tables as the communication.json and
communication_matrix.json torch_npu writes for a text export (comm.py reads both shapes).

CommAnalyzerTime holds one row per collective (``Communication Time Info``, ms);
CommAnalyzerBandwidth one row per collective, link type and packet size of its size
distribution (package_size MB, count, total_duration ms: the file's ``Size Distribution``), the
op's Transit Size (MB) and Time (ms) over that link repeated on each;
CommAnalyzerMatrix one row per matrix op (``allreduce-top1``), group and src-dst pair. The db has
no ``Total Op Info`` entry: it is the sum of the ops, as in the text file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from npumon.daemon.analysis.readers.sqlite_tables import select, table_names

TIME = "CommAnalyzerTime"
BANDWIDTH = "CommAnalyzerBandwidth"
MATRIX = "CommAnalyzerMatrix"
TOTAL = "Total Op Info"
_TIME_SQL = f"""SELECT step, type, hccl_op_name, group_name, elapse_time, transit_time,
wait_time, idle_time FROM {TIME}"""
_BANDWIDTH_SQL = f"""SELECT DISTINCT step, type, hccl_op_name, group_name, transport_type,
transit_size, transit_time FROM {BANDWIDTH}"""
_SIZES_SQL = f"""SELECT step, type, hccl_op_name, group_name, transport_type, package_size, count,
total_duration FROM {BANDWIDTH} WHERE count > 0"""
_MATRIX_SQL = f"""SELECT step, type, hccl_op_name, group_name, src_rank, dst_rank, transport_type,
transit_size, transit_time, bandwidth, op_name FROM {MATRIX}"""
_TIME_KEYS = ("Elapse Time(ms)", "Transit Time(ms)", "Wait Time(ms)", "Idle Time(ms)")

Document = dict[str, dict[str, dict[str, dict[str, Any]]]]


def has_communication(path: Path) -> bool:
    """The analysis.db holds the communication tables (Level1+; Level0 has StepTraceTime only)."""
    return bool({TIME, BANDWIDTH} & table_names(path))


def _float(value: object) -> float:
    return float(value) if isinstance(value, int | float) and value == value else 0.0


def _op(doc: Document, step: object, kind: object, name: str) -> dict[str, Any]:
    return doc.setdefault(str(step), {}).setdefault(str(kind), {}).setdefault(name, {})


def _add(block: dict[str, float], values: dict[str, float]) -> None:
    for name, value in values.items():
        block[name] = block.get(name, 0.0) + value


def communication(path: Path) -> Document:
    """communication.json's shape: ``{step: {type: {op@group | Total Op Info: {Communication Time
    Info, Communication Bandwidth Info: {link: {Transit Size(MB), Transit Time(ms)}}}}}}``."""
    doc: Document = {}
    for step, kind, op, group, *times in select(path, TIME, _TIME_SQL) or ():
        values = dict(zip(_TIME_KEYS, map(_float, times), strict=True))
        for name in (f"{op}@{group}", TOTAL):
            _add(_op(doc, step, kind, name).setdefault("Communication Time Info", {}), values)
    for step, kind, op, group, link, size, time in select(path, BANDWIDTH, _BANDWIDTH_SQL) or ():
        values = {"Transit Size(MB)": _float(size), "Transit Time(ms)": _float(time)}
        for name in (f"{op}@{group}", TOTAL):
            links = _op(doc, step, kind, name).setdefault("Communication Bandwidth Info", {})
            _add(links.setdefault(str(link), {}), values)
    for step, kind, op, group, link, package, count, ms in (
        select(path, BANDWIDTH, _SIZES_SQL) or ()
    ):
        links = _op(doc, step, kind, f"{op}@{group}").setdefault("Communication Bandwidth Info", {})
        sizes = links.setdefault(str(link), {}).setdefault("Size Distribution", {})
        sizes[str(package)] = [_float(count), _float(ms)]  # MB -> [transfers, ms], as the file
    return doc


def matrix(path: Path) -> Document:
    """communication_matrix.json's shape: ``{step: {type: {op-stat@group: {src-dst: {Transport
    Type, Transit Size(MB), Transit Time(ms), Bandwidth(GB/s), Op Name}}}}}``."""
    doc: Document = {}
    for step, kind, op, group, src, dst, link, size, time, bandwidth, name in (
        select(path, MATRIX, _MATRIX_SQL) or ()
    ):
        _op(doc, step, kind, f"{op}@{group}")[f"{src}-{dst}"] = {
            "Transport Type": link,
            "Transit Size(MB)": _float(size),
            "Transit Time(ms)": _float(time),
            "Bandwidth(GB/s)": _float(bandwidth),
            "Op Name": name,
        }
    return doc
