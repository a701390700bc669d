"""One profile unit (a rank) read into its typed evidence, ``RankEvidence``, by ``read_unit``:
which reader (readers/) reads which of its files, in what order, and what could not be read.
It reads and measures; it never judges (rules/ does)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from npumon.daemon.analysis.evidence import (
    OpCoverage,
    OpWindows,
    RankComm,
    Timeline,
    VectorRows,
)
from npumon.daemon.analysis.readers import (
    affinity,
    comm,
    environment,
    fusible,
    host,
    layout,
    mindspore,
    ops,
    pmu,
    replicas,
    sqlite_comm,
    sqlite_tables,
    steptime,
)
from npumon.daemon.analysis.readers.steps import read_graph_steps, read_torch_steps
from npumon.daemon.analysis.readers.tables import (
    TableError,
    read_kernel_names,
    read_kernels,
    read_op_statistic,
    read_pmu,
)
from npumon.daemon.model.profile import Thresholds


@dataclass(frozen=True, slots=True)
class RankEvidence:
    """What the files of one unit (a rank, or a PROF of several devices) hold."""

    name: str
    sources: tuple[str, ...]  # the files read
    problems: tuple[str, ...]  # what could not be read, one sentence each
    torch_steps: tuple[tuple[str, list[steptime.StepRow]], ...]  # (rank, rows): step tables
    graph_steps: tuple[tuple[str, list[steptime.StepRow]], ...]  # graph iterations per device
    facts: ops.OpFacts | None  # its operators, the statistic and kernel tables combined
    kernel_read: bool  # its per-task table was read (communication comes from it)
    comm: RankComm  # its communication(_matrix).json
    dp_ranks: tuple[int, ...] | None  # the global ranks of its data-parallel group
    env: dict[str, str] | None  # profiler_metadata's variables
    vector: tuple[VectorRows, ...]  # per kernel table with PMU columns
    windows: tuple[OpWindows, ...]  # operator windows per kernel table with PMU columns
    host_times: host.HostTimes | None  # data loader and on-line compilation time
    timeline: Timeline | None  # host API sequences
    coverage: OpCoverage | None = None  # its operator tables against its step table


@dataclass(frozen=True, slots=True)
class _Log:
    """The files read and the problems met while reading one unit, in reading order (every
    reader appends, as the table readers append their notes)."""

    sources: list[str]
    problems: list[str]


@dataclass(frozen=True, slots=True)
class _Steps:
    torch: tuple[tuple[str, list[steptime.StepRow]], ...] = ()
    graph: tuple[tuple[str, list[steptime.StepRow]], ...] = ()
    model: int | None = None  # the graph Model ID the steps come from (legacy layouts)


@dataclass(frozen=True, slots=True)
class _Ops:
    facts: ops.OpFacts | None = None
    kernel_read: bool = False
    vector: tuple[VectorRows, ...] = ()
    windows: tuple[OpWindows, ...] = ()
    iterations: frozenset[int] | None = None  # the steps the tables cover; None: every step


def read_unit(unit: layout.ProfileUnit, t: Thresholds, pmu_bytes: int) -> RankEvidence:
    """Every table of one unit; what cannot be read is in its problems."""
    log = _Log([], list(unit.notes))
    steps = _unit_steps(unit, log)  # first: a legacy unit's op tables follow its steps' model
    read = _unit_ops(unit, t, steps.model, log, pmu_bytes)
    communication = _unit_comm(unit, log)
    meta = _metadata(unit, log)
    times = host.read(unit.root, log.problems)
    if times is None and layout.DB in unit.tables:
        times = host.read_db(unit.tables[layout.DB][0])
    timeline = _unit_timeline(unit, log)
    return RankEvidence(
        name=unit.name,
        sources=tuple(log.sources),
        problems=tuple(log.problems),
        torch_steps=steps.torch,
        graph_steps=steps.graph,
        facts=read.facts,
        kernel_read=read.kernel_read,
        comm=communication,
        dp_ranks=replicas.dp_ranks(meta),
        env=environment.recorded(meta),
        vector=read.vector,
        windows=read.windows,
        host_times=times,
        timeline=timeline,
        coverage=_coverage(unit.name, read, steps),
    )


def _coverage(name: str, read: _Ops, steps: _Steps) -> OpCoverage | None:
    """The unit's operator time against the computing time of the steps its operator tables
    cover: every captured step (warm-up and partial edges included: their tasks are in the
    tables too), or the iterations a legacy unit's per-iteration tables name. None without an
    operator table, a step table, or a computing time in it."""
    if read.facts is None or read.facts.total_us <= 0:
        return None
    stepped = steps.graph or steps.torch
    phase = "fp_bp" if steps.graph else "computing"
    rows = [
        r
        for _, rs in stepped
        for r in rs
        if read.iterations is None or (r.key is not None and r.key in read.iterations)
    ]
    known = [v for r in rows if (v := r.phases.get(phase)) is not None]
    if not known:
        return None
    return OpCoverage(name, read.facts.total_us, sum(known), len(known))


def _kernel_facts(paths: tuple[Path, ...], notes: list[str]) -> ops.OpFacts:
    table = read_kernels(paths)
    frame = table.frame
    notes.extend(table.notes)
    inferred = "op_type" not in frame or not frame["op_type"].notna().any()
    if inferred:  # Level0: no op types, guess them from the kernel names
        names = read_kernel_names(paths).frame
        frame = frame.assign(op_type=names["name"].astype("object").map(ops.infer_op_type))
    return ops.kernel_facts(frame, inferred)


def _db_facts(path: Path) -> ops.OpFacts:
    tasks = sqlite_tables.read_tasks(path)
    return ops.kernel_facts(tasks.frame, tasks.inferred)


_LEGACY_IDS = re.compile(r"_\d+_(?P<model>\d+)_(?P<iteration>\d+)\.csv$")


def _graph_tables(paths: tuple[Path, ...], model: int | None, warmup: int) -> tuple[Path, ...]:
    """Of a legacy unit's per-iteration tables (``{kind}_{device}_{model}_{iteration}.csv``),
    those of the model the steps come from and past its warm-up, as its steps are chosen; the
    model's warm-up ones when it has no other, every table when none is the model's."""
    ids = [(p, _LEGACY_IDS.search(p.name)) for p in paths]
    own = [(p, m) for p, m in ids if m is not None and int(m["model"]) == model]
    later = tuple(p for p, m in own if int(m["iteration"]) > warmup)
    return later or tuple(p for p, _ in own) or paths


def _iterations(paths: tuple[Path, ...], model: int) -> frozenset[int] | None:
    """The iterations of the model that per-iteration tables name; None when one is not such a
    table (it covers every step)."""
    found = set()
    for path in paths:
        ids = _LEGACY_IDS.search(path.name)
        if ids is None or int(ids["model"]) != model:
            return None
        found.add(int(ids["iteration"]))
    return frozenset(found)


def _unit_ops(
    unit: layout.ProfileUnit, t: Thresholds, model: int | None, log: _Log, pmu_bytes: int
) -> _Ops:
    kernel = statistic = None
    vector: list[VectorRows] = []
    windows: list[OpWindows] = []
    iterations = None
    if unit.layout == "legacy" and model is not None:
        unit = replace(
            unit,
            tables={
                k: _graph_tables(v, model, t.warmup_steps)
                if k in (layout.KERNEL, layout.OP_STATISTIC)
                else v
                for k, v in unit.tables.items()
            },
        )
        op_tables = unit.tables.get(layout.OP_STATISTIC) or unit.tables.get(layout.KERNEL, ())
        iterations = _iterations(op_tables, model) if op_tables else None
    if layout.DB in unit.tables and layout.KERNEL not in unit.tables:
        try:
            kernel = _db_facts(unit.tables[layout.DB][0])
            log.sources.append(str(unit.tables[layout.DB][0]))
            frame = sqlite_tables.read_pmu(unit.tables[layout.DB][0])
            if frame is not None:
                vector.append(pmu.vector_rows(frame))
        except TableError as exc:
            log.problems.append(str(exc))
    if layout.KERNEL in unit.tables:
        try:
            kernel = _kernel_facts(unit.tables[layout.KERNEL], log.problems)
            log.sources.extend(str(p) for p in unit.tables[layout.KERNEL])
            table = read_pmu(unit.tables[layout.KERNEL], pmu_bytes)
            if table is not None:
                vector.append(pmu.vector_rows(table.frame, table.notes))
                found = fusible.windows(unit.name, table.frame)
                if found is not None:
                    windows.append(found)
        except TableError as exc:
            log.problems.append(str(exc))
    if layout.OP_STATISTIC in unit.tables:
        try:
            table = read_op_statistic(unit.tables[layout.OP_STATISTIC])
            statistic = ops.statistic_facts(table.frame)
            log.problems.extend(table.notes)
            log.sources.extend(str(p) for p in unit.tables[layout.OP_STATISTIC])
        except TableError as exc:
            log.problems.append(str(exc))
    if layout.AICORE_TYPE in unit.tables and statistic is None:
        path = unit.tables[layout.AICORE_TYPE][0]
        try:
            statistic = ops.statistic_facts(mindspore.read_op_types(path))
            log.sources.append(str(path))
        except TableError as exc:
            log.problems.append(str(exc))
    if statistic is not None and kernel is not None:
        statistic = ops.combine(statistic, kernel)  # time by type; the tasks for the rest
    facts = statistic if statistic is not None else kernel
    return _Ops(facts, kernel is not None, tuple(vector), tuple(windows), iterations)


def _unit_steps(unit: layout.ProfileUnit, log: _Log) -> _Steps:
    torch: list[tuple[str, list[steptime.StepRow]]] = []
    graph: list[tuple[str, list[steptime.StepRow]]] = []
    model = None
    try:
        if layout.STEP_TRACE_TIME in unit.tables:
            path = unit.tables[layout.STEP_TRACE_TIME][0]
            rows = steptime.torch_rows(read_torch_steps(path, log.problems))
            torch.append((unit.name, rows))
            log.sources.append(str(path))
        elif layout.ANALYSIS_DB in unit.tables:  # export_type=db: the same step table
            path = unit.tables[layout.ANALYSIS_DB][0]
            rows = steptime.torch_rows(sqlite_tables.read_steps(path))
            if rows:
                torch.append((unit.name, rows))
                log.sources.append(str(path))
        if layout.STEP_TRACE_RAW in unit.tables:  # MindSpore <= 2.2
            path = unit.tables[layout.STEP_TRACE_RAW][0]
            rows = steptime.graph_rows(mindspore.read_steps(path, None)).get(None, [])
            graph.append((unit.name, rows))
            log.sources.append(str(path))
        if layout.STEP_TRACE in unit.tables:
            paths = unit.tables[layout.STEP_TRACE]
            iterations = read_graph_steps(paths, log.problems)
            model = steptime.chosen_model(iterations)
            by_device = steptime.graph_rows(iterations)
            for device, rows in by_device.items():
                name = (
                    unit.name
                    if len(by_device) == 1
                    else f"device{device}"  # a PROF of several devices names no rank of its own
                    if unit.name.startswith(layout.SLOT)
                    else f"{unit.name}/device{device}"
                )
                graph.append((name, rows))
            log.sources.extend(str(p) for p in paths)
    except TableError as exc:
        log.problems.append(str(exc))
    return _Steps(tuple(torch), tuple(graph), model)


def _metadata(unit: layout.ProfileUnit, log: _Log) -> dict[str, object] | None:
    """profiler_metadata.json, or for a db export without it the db's META_DATA table."""
    meta = layout.metadata(unit.root)
    if meta is None and layout.DB in unit.tables:
        try:
            meta = sqlite_tables.read_metadata(unit.tables[layout.DB][0])
        except TableError as exc:
            log.problems.append(str(exc))
    return meta


def _unit_comm(unit: layout.ProfileUnit, log: _Log) -> RankComm:
    """communication(_matrix).json, for a db export the CommAnalyzer tables of analysis.db, for
    MindSpore <= 2.2 hccl_raw_N.csv; each file named by the unit, or by the unit and its stem
    where it has several."""
    comm_files = unit.tables.get(layout.COMMUNICATION, ()) or unit.tables.get(layout.HCCL_RAW, ())
    matrix_files = unit.tables.get(layout.COMM_MATRIX, ())
    if not comm_files and layout.ANALYSIS_DB in unit.tables:
        db = unit.tables[layout.ANALYSIS_DB][0]
        try:
            if sqlite_comm.has_communication(db):
                comm_files = matrix_files = (db,)
                log.sources.append(str(db))
        except TableError as exc:
            log.problems.append(str(exc))
    names = tuple(
        unit.name if len(comm_files) == 1 else f"{unit.name}/{path.stem}" for path in comm_files
    )
    return comm.read_rank(tuple(comm_files), names, tuple(matrix_files))


def _unit_timeline(unit: layout.ProfileUnit, log: _Log) -> Timeline | None:
    """The host API sequences of trace_view.json, or of a db export's PYTORCH_API."""
    try:
        timeline = affinity.read_trace(unit.name, unit.root, log.problems)
        if timeline is None and layout.DB in unit.tables:
            timeline = affinity.read_db(unit.name, unit.tables[layout.DB][0])
    except TableError as exc:
        log.problems.append(str(exc))
        return None
    return timeline
