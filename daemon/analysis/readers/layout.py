"""Find profile tables on disk by what exists: torch_npu, msprof (CANN 8) and legacy layouts."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from npumon.daemon.analysis.readers import confine

KERNEL = "kernel"  # kernel_details.csv / op_summary_*.csv
OP_STATISTIC = "op_statistic"
STEP_TRACE_TIME = "step_trace_time"  # torch_npu per-step breakdown
STEP_TRACE = "step_trace"  # graph-mode iterations (msprof)
COMMUNICATION = "communication"  # torch_npu communication.json
COMM_MATRIX = "comm_matrix"  # torch_npu communication_matrix.json: per src-dst link
DB = "db"  # export_type=db: ascend_pytorch_profiler_N.db / msprof_*.db (sqlite_tables.py)
ANALYSIS_DB = "analysis_db"  # torch_npu analysis.db: StepTraceTime, CommAnalyzer* tables
AICORE_TYPE = "aicore_type"  # MindSpore <= 2.2 aicore_intermediate_N_type.csv (mindspore.py)
STEP_TRACE_RAW = "step_trace_raw"  # MindSpore <= 2.2 step_trace_raw_N_detail_time.csv
HCCL_RAW = "hccl_raw"  # MindSpore <= 2.2 hccl_raw_N.csv: communication per step (mindspore.py)

_TORCH_FILES = {
    KERNEL: "kernel_details.csv",
    OP_STATISTIC: "op_statistic.csv",
    STEP_TRACE_TIME: "step_trace_time.csv",
    COMMUNICATION: "communication.json",
    COMM_MATRIX: "communication_matrix.json",
    ANALYSIS_DB: "analysis.db",
}
_MSPROF_NAME = re.compile(
    r"^(?P<kind>op_summary|op_statistic|step_trace)(?:_slice_(?P<slice>\d+))?_(?P<ts>\d+)\.csv$"
)
_LEGACY_NAME = re.compile(r"^(?P<kind>op_summary|op_statistic|step_trace)(?P<ids>(?:_\d+)+)\.csv$")
_KIND_OF = {"op_summary": KERNEL, "op_statistic": OP_STATISTIC, "step_trace": STEP_TRACE}
_MINDSPORE_NAME = re.compile(
    r"^(?:(?P<type>aicore_intermediate)_(?P<r1>\d+)_type|(?P<stat>op_statistic)_(?P<r2>\d+)"
    r"|(?P<trace>step_trace_raw)_(?P<r3>\d+)_detail_time)\.csv$"
)
_RANK_IN_NAME = re.compile(r"rank_?(\d+)", re.IGNORECASE)
_MAX_DEPTH = 4


@dataclass(frozen=True, slots=True)
class ProfileUnit:
    """The tables of one rank (one process / device), each kind in reading order."""

    name: str
    layout: str  # torch_npu, msprof, legacy
    root: Path
    tables: Mapping[str, tuple[Path, ...]] = field(hash=False)
    capture_end_seconds: float | None
    notes: tuple[str, ...] = ()


def find_units(
    path: Path, process_ranks: Mapping[int, int] | None = None
) -> tuple[ProfileUnit, ...]:
    """Every profile unit at or under ``path`` (a PROF_* dir, a *_ascend_pt dir, or a parent).

    ``process_ranks`` (pid -> the RANK or LOCAL_RANK of the captured process's environment)
    names a unit whose files name no rank, by the pid its files record.

    A table that resolves outside ``path`` (a symlink out of it) is never read: the worker runs
    as root, and a job must not make it read (and report) a file the job itself cannot."""
    confine.add_root(path)  # and every read below it is confined when it opens
    root = path.resolve()
    ranks = dict(process_ranks or {})
    return _named(tuple(_confined(unit, root) for unit in _walk(path, 0, ranks)))


SLOT = "slot"  # a unit whose rank and device no file names: its place among such units


def _named(units: tuple[ProfileUnit, ...]) -> tuple[ProfileUnit, ...]:
    """Every unit named once: an unnamed one (no rank or device found) takes ``slot<i>`` by
    its order, a name taken twice (two processes on one device) a ``.<k>`` suffix. A name is
    a label value of the exported families, so it never carries a directory name (host, PID,
    time): the label set stays the same from one capture of a job to the next."""
    seen: dict[str, int] = {}
    named = []
    slots = 0
    for unit in units:
        name = unit.name
        if not name:
            name, slots = f"{SLOT}{slots}", slots + 1
        count = seen.get(name, 0)
        seen[name] = count + 1
        named.append(replace(unit, name=name if count == 0 else f"{name}.{count}"))
    return tuple(named)


def inside(file: Path, root: Path) -> bool:
    """``file``, every symlink followed, is under ``root`` (an already resolved path)."""
    try:
        return file.resolve(strict=True).is_relative_to(root)
    except (OSError, RuntimeError):  # dangling, a loop, or gone meanwhile
        return False


def _confined(unit: ProfileUnit, root: Path) -> ProfileUnit:
    tables: dict[str, tuple[Path, ...]] = {}
    notes = list(unit.notes)
    for kind, files in unit.tables.items():
        kept = tuple(f for f in files if inside(f, root))
        notes.extend(
            f"{f}: not read: it leads out of {root} (a symlink)" for f in files if f not in kept
        )
        if kept:
            tables[kind] = kept
    return replace(unit, tables=tables, notes=tuple(notes))


def _walk(path: Path, depth: int, ranks: Mapping[int, int]) -> Iterator[ProfileUnit]:
    if not path.is_dir():
        return
    units = _units_at(path, ranks)
    if units:
        yield from units
        return
    if depth >= _MAX_DEPTH:
        return
    for child in sorted(p for p in path.iterdir() if p.is_dir() and not p.is_symlink()):
        yield from _walk(child, depth + 1, ranks)


def _units_at(path: Path, ranks: Mapping[int, int] | None = None) -> list[ProfileUnit]:
    ranks = ranks or {}
    if path.name == "ASCEND_PROFILER_OUTPUT":
        path = path.parent
    if path.name == "mindstudio_profiler_output":
        path = path.parent
    torch_dir = path / "ASCEND_PROFILER_OUTPUT"
    if torch_dir.is_dir():
        tables: dict[str, tuple[Path, ...]] = {
            k: (torch_dir / n,) for k, n in _TORCH_FILES.items() if (torch_dir / n).is_file()
        }
        dbs = sorted(torch_dir.glob("ascend_pytorch_profiler*.db"))
        if dbs:
            tables[DB] = (dbs[-1],)
        if tables:
            kind = "mindspore" if path.name.endswith("_ascend_ms") else "torch_npu"
            name = _torch_rank(path, ranks)
            return [ProfileUnit(name, kind, path, tables, _torch_end(path))]
    msprof_dir = path / "mindstudio_profiler_output"
    msprof_dbs = sorted(path.glob("msprof_*.db")) + sorted(msprof_dir.glob("msprof_*.db"))
    if msprof_dir.is_dir() or msprof_dbs:
        tables, notes = _msprof_tables(msprof_dir) if msprof_dir.is_dir() else ({}, ())
        if msprof_dbs and not tables:  # an export_type=db capture: no CSVs
            tables = {DB: (msprof_dbs[-1],)}
        if tables:
            name = _prof_rank(path, ranks)
            return [ProfileUnit(name, "msprof", path, tables, _prof_end(path), notes)]
    mindspore = _mindspore_units(path)
    if mindspore:
        return mindspore
    units = []
    for device in sorted(path.glob("device_*/summary")):
        tables = _legacy_tables(device)
        if tables:
            name = _device_name(device.parent) or ""
            units.append(ProfileUnit(name, "legacy", path, tables, _prof_end(path)))
    return units


TRACE_VIEW = "trace_view.json"
EXPORT_COMMAND = "msprof --export=on --output={}"


def unread(path: Path) -> tuple[str, ...]:
    """What at or under ``path`` holds a profile in a form npumon does not read, each with what
    to do: a PROF folder never exported (device_N/data or timeline only: the command that
    exports it), a trace_view.json without the tables exported beside it."""
    if path.is_file():
        return (_trace_view_hint(path),) if path.name == TRACE_VIEW else ()
    return tuple(_unread(path, 0))


def _trace_view_hint(file: Path) -> str:
    return (
        f"{file}: a torch_npu timeline (Chrome trace: host API ranges, device tasks); npumon "
        "reads the tables the profiler exports beside it in ASCEND_PROFILER_OUTPUT "
        "(kernel_details.csv, step_trace_time.csv, op_statistic.csv, communication.json, or "
        "the export_type=db files), not the timeline: give it the whole *_ascend_pt folder, "
        "or export the tables again with torch_npu.profiler.profiler.analyse('<that folder>')"
    )


def _unread(path: Path, depth: int) -> Iterator[str]:
    if not path.is_dir() or _units_at(path):
        return
    devices = [d for d in path.glob("device_*") if d.is_dir()]
    if devices and any(
        (d / "data").is_dir() or (d / "timeline").is_dir() or any(d.glob("info.json*"))
        for d in devices
    ):
        yield (
            f"{path}: a PROF folder that was never exported (raw device_N data or timeline "
            f"JSON only, no summary tables): run `{EXPORT_COMMAND.format(path)}` and analyse "
            "it again"
        )
        return
    output = path / "ASCEND_PROFILER_OUTPUT" / TRACE_VIEW
    if output.is_file():
        yield _trace_view_hint(output)
        return
    if depth < _MAX_DEPTH:
        for child in sorted(p for p in path.iterdir() if p.is_dir() and not p.is_symlink()):
            yield from _unread(child, depth + 1)


def _mindspore_units(path: Path) -> list[ProfileUnit]:
    """MindSpore <= 2.2 ``profiler/``: one unit per rank id in the file names."""
    by_rank: dict[int, dict[str, tuple[Path, ...]]] = {}
    for file in sorted(path.glob("*.csv")):
        match = _MINDSPORE_NAME.match(file.name)
        if match and file.is_file():
            kind = (
                AICORE_TYPE if match["type"] else OP_STATISTIC if match["stat"] else STEP_TRACE_RAW
            )
            rank = int(match["r1"] or match["r2"] or match["r3"])
            by_rank.setdefault(rank, {})[kind] = (file,)
    for rank, tables in by_rank.items():
        hccl = path / f"hccl_raw_{rank}.csv"
        if hccl.is_file():
            tables[HCCL_RAW] = (hccl,)
    return [
        ProfileUnit(f"rank{rank}", "mindspore", path, tables, None)
        for rank, tables in sorted(by_rank.items())
        if AICORE_TYPE in tables or STEP_TRACE_RAW in tables
    ]


def _msprof_tables(directory: Path) -> tuple[dict[str, tuple[Path, ...]], tuple[str, ...]]:
    """Slices concatenate in slice order; of several un-sliced exports only the newest counts."""
    found: dict[str, list[tuple[int, int, Path]]] = {}
    for file in directory.iterdir():
        match = _MSPROF_NAME.match(file.name)
        if match and file.is_file():
            sliced = match["slice"] is not None
            key = (int(match["slice"]) if sliced else -1, int(match["ts"]), file)
            found.setdefault(_KIND_OF[match["kind"]], []).append(key)
    tables: dict[str, tuple[Path, ...]] = {}
    notes: list[str] = []
    for kind, entries in found.items():
        slices = sorted(e for e in entries if e[0] >= 0)
        whole = sorted(e for e in entries if e[0] < 0)
        if slices:
            by_index = {s[0]: s[2] for s in slices}  # a later export of the same slice wins
            tables[kind] = tuple(by_index[i] for i in sorted(by_index))
        else:
            tables[kind] = (whole[-1][2],)
            if len(whole) > 1:
                notes.append(f"{directory}: {len(whole)} exports of {kind}; read the newest")
    return tables, tuple(notes)


def _legacy_tables(summary: Path) -> dict[str, tuple[Path, ...]]:
    """``{name}_{dev}_{model}_{iter}.csv``: one file per model/iteration, all of them count."""
    found: dict[str, list[tuple[tuple[int, ...], Path]]] = {}
    for file in summary.iterdir():
        match = _LEGACY_NAME.match(file.name)
        if match and file.is_file():
            ids = tuple(int(i) for i in match["ids"].strip("_").split("_"))
            found.setdefault(_KIND_OF[match["kind"]], []).append((ids, file))
    return {kind: tuple(f for _, f in sorted(entries)) for kind, entries in found.items()}


_DEVICE_DIR = re.compile(r"^device_(\d+)$")


def _device_name(directory: Path) -> str | None:
    """``device<N>`` for a ``device_N`` directory (the NPU the process ran on)."""
    match = _DEVICE_DIR.match(directory.name)
    return f"device{match[1]}" if match else None


def _devices(path: Path) -> list[str]:
    """The devices a capture recorded: the ``device_N`` directories of its PROF data."""
    return sorted(
        {n for d in path.glob("device_*") if d.is_dir() and (n := _device_name(d)) is not None}
    )


_PT_PID = re.compile(r"_(\d+)_\d{8,}_ascend_(?:pt|ms)$")  # {host}_{pid}_{time}_ascend_pt


def _prof_pids(path: Path) -> set[int]:
    """The pids an msprof PROF_* recorded: ``pid`` of its devices' info.json.N."""
    pids = set()
    for info in sorted(path.glob("device_*/data/info.json.*")) + sorted(
        path.glob("device_*/info.json.*")
    ):
        data = _read_json(info)
        pid = str(data.get("pid", "")) if data else ""
        if pid.isdigit():
            pids.add(int(pid))
    return pids


def _env_rank(pids: set[int], ranks: Mapping[int, int]) -> str | None:
    """``rank<N>`` when the environment of the profile's one process named its rank."""
    found = {ranks[p] for p in pids if p in ranks}
    return f"rank{found.pop()}" if len(found) == 1 else None


def _prof_rank(path: Path, ranks: Mapping[int, int] | None = None) -> str:
    """An msprof PROF_* names no rank: the captured process's (its environment's RANK), else
    the device it recorded, when it is one; else unnamed (a PROF of several devices is split by
    device in analysis)."""
    by_env = _env_rank(_prof_pids(path), ranks or {})
    if by_env:
        return by_env
    devices = _devices(path)
    return devices[0] if len(devices) == 1 else ""


def _torch_rank(path: Path, ranks: Mapping[int, int] | None = None) -> str:
    """The job's rank: profiler_info_<rank>.json (a distributed job), the rank in
    profiler_metadata.json, the process's environment (RANK, LOCAL_RANK; by the pid in the
    folder's name), ``rank_N`` in the folder's name; else the device of the CANN data inside
    (``PROF_*/device_N``); else unnamed (``_named`` gives it a slot)."""
    for info in sorted(path.glob("profiler_info_*.json")):
        rank = info.stem.removeprefix("profiler_info_")
        if rank.isdigit():
            return f"rank{rank}"
    meta = metadata(path)
    args = meta.get("distributed_args") if meta else None
    rank_value = args.get("rank") if isinstance(args, dict) else None
    if isinstance(rank_value, int) and not isinstance(rank_value, bool) and rank_value >= 0:
        return f"rank{rank_value}"
    pid = _PT_PID.search(path.name)
    by_env = _env_rank({int(pid[1])} if pid else set(), ranks or {})
    if by_env:
        return by_env
    match = _RANK_IN_NAME.search(path.name)
    if match:
        return f"rank{match[1]}"
    devices = sorted({d for prof in path.glob("PROF_*") for d in _devices(prof)})
    return devices[0] if len(devices) == 1 else ""


METADATA = "profiler_metadata.json"  # torch_npu: ENV_VARIABLES, parallel_group_info, ...


def metadata(root: Path) -> dict[str, object] | None:
    """A torch_npu unit's profiler_metadata.json, read once for every reader of it; None when
    it is absent, unreadable, or a symlink out of the unit."""
    file = root / METADATA
    if not inside(file, root.resolve()):
        return None
    return _read_json(file)


def _read_json(file: Path) -> dict[str, object] | None:
    """Metadata JSON, tolerating the ``#`` comment lines some tools prepend; None if unreadable."""
    try:
        lines = confine.read_text(file).splitlines()
        data = json.loads("\n".join(ln for ln in lines if not ln.startswith("#")))
    except (OSError, ValueError):
        return None  # metadata is optional: the capture time falls back to file times
    return data if isinstance(data, dict) else None


def _epoch_seconds(value: object) -> float | None:
    """``collectionTimeEnd`` is ns in torch_npu files and us in older msprof ones."""
    try:
        number = float(str(value))
    except ValueError:
        return None
    for scale in (1e9, 1e6, 1e3, 1.0):
        if 1e8 <= number / scale < 1e10:  # 1973..2286: the unit that gives a plausible date
            return number / scale
    return None


def _torch_end(path: Path) -> float | None:
    for info in sorted(path.glob("profiler_info*.json")):
        data = _read_json(info)
        end = data.get("end_info") if data else None
        if isinstance(end, dict) and "collectionTimeEnd" in end:
            return _epoch_seconds(end["collectionTimeEnd"])
    return None


def _prof_end(path: Path) -> float | None:
    for end_info in sorted(path.glob("*/end_info*")) + sorted(path.glob("*/data/end_info*")):
        data = _read_json(end_info)
        if data and "collectionTimeEnd" in data:
            return _epoch_seconds(data["collectionTimeEnd"])
    return None
