"""Analyse a profile directory on disk into a ProfileSummary (runs in the analysis worker)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from npumon.daemon.analysis import (
    affinity,
    comm,
    environment,
    fusible,
    host,
    layout,
    mindspore,
    ops,
    peers,
    pmu,
    sqlite_comm,
    sqlite_tables,
    steptime,
)
from npumon.daemon.analysis.diagnosis import Evidence, diagnose, transfer_tier
from npumon.daemon.analysis.limits import check_sizes
from npumon.daemon.analysis.readers import (
    PMU_MAX_BYTES,
    PMU_MIN_BYTES,
    TableError,
    read_kernel_names,
    read_kernels,
    read_op_statistic,
    read_pmu,
)
from npumon.daemon.analysis.steps import read_graph_steps, read_torch_steps
from npumon.daemon.model.profile import (
    AnalysisLimits,
    AnalysisReport,
    Bottleneck,
    CommShare,
    ProfileSummary,
    RankDetail,
    ReportScope,
    StepPoint,
    Thresholds,
)

DEFAULT_THRESHOLDS = Thresholds()
_MAX_PEERS = 384  # links a rank drives at once, at most: an Atlas A3 supernode's NPUs


class NoProfileData(Exception):
    """The path holds no profiler table that could be read."""


@dataclass
class _Collected:
    sources: list[str]
    problems: list[str]
    facts: list[ops.OpFacts]
    torch_ranks: list[tuple[str, list[steptime.StepRow]]]
    graph_ranks: list[tuple[str, list[steptime.StepRow]]]
    kernel_units: list[str]  # units whose per-task table was read (communication comes from it)
    comm_files: list[Path]
    comm_names: list[str]  # the rank each of comm_files is named by in findings
    matrix_files: list[Path]  # communication_matrix.json of every rank
    matrix_only: list[Path]  # those of ranks without communication.json
    comm_units: list[str]  # units whose communication.json is in comm_files
    dp_of: dict[str, tuple[int, ...] | None]
    env: list[tuple[str, dict[str, str] | None]]  # per unit: profiler_metadata's variables
    vector: list[pmu.VectorRows]  # per kernel table with PMU columns
    # per unit: data loader and on-line compilation time (trace_view.json, api_statistic.csv;
    # a db reader fills it from PYTORCH_API / CANN_API)
    host_times: dict[str, host.HostTimes] = field(default_factory=dict)
    graph_model: dict[str, int] = field(default_factory=dict)  # per unit: the Model ID analysed
    timelines: list[affinity.Timeline] = field(default_factory=list)  # host API sequences
    unit_facts: dict[str, ops.OpFacts] = field(default_factory=dict)  # per unit: its operators
    sequences: list[fusible.RankSequences] = field(default_factory=list)  # per kernel table

    def step_total_us(self, units: list[str]) -> float | None:
        """All captured steps of these units (warm-up included: the tasks ran in them too)."""
        rows = [r for name, rs in self.torch_ranks + self.graph_ranks if name in units for r in rs]
        return sum(r.total_us for r in rows) or None

    def host_share(self) -> host.HostShare | None:
        """The host figures over the captured steps of the units that have them."""
        counted = []
        for name, times in self.host_times.items():
            rows = [r for n, rs in self.torch_ranks + self.graph_ranks if n == name for r in rs]
            total = sum(r.total_us for r in rows)
            if rows and total > 0:
                counted.append((times, len(rows), total))
        return host.share(counted)


def _kernel_facts(paths: tuple[Path, ...], t: Thresholds, notes: list[str]) -> ops.OpFacts:
    table = read_kernels(paths)
    frame = table.frame
    notes.extend(table.notes)
    inferred = "op_type" not in frame or not frame["op_type"].notna().any()
    if inferred:  # Level0: no op types, guess them from the kernel names
        names = read_kernel_names(paths).frame
        frame = frame.assign(op_type=names["name"].astype("object").map(ops.infer_op_type))
    return ops.kernel_facts(frame, t, inferred)


def _db_facts(path: Path, t: Thresholds) -> ops.OpFacts:
    tasks = sqlite_tables.read_tasks(path)
    return ops.kernel_facts(tasks.frame, t, tasks.inferred)


_LEGACY_IDS = re.compile(r"_\d+_(?P<model>\d+)_(?P<iteration>\d+)\.csv$")


def _graph_tables(paths: tuple[Path, ...], model: int | None, warmup: int) -> tuple[Path, ...]:
    """Of a legacy unit's per-iteration tables (``{kind}_{device}_{model}_{iteration}.csv``),
    those of the model the steps come from and past its warm-up, as its steps are chosen; the
    model's warm-up ones when it has no other, every table when none is the model's."""
    ids = [(p, _LEGACY_IDS.search(p.name)) for p in paths]
    own = [(p, m) for p, m in ids if m is not None and int(m["model"]) == model]
    later = tuple(p for p, m in own if int(m["iteration"]) > warmup)
    return later or tuple(p for p, _ in own) or paths


def _unit_ops(unit: layout.ProfileUnit, t: Thresholds, c: _Collected, pmu_bytes: int) -> None:
    kernel = statistic = None
    if unit.layout == "legacy" and unit.name in c.graph_model:
        model = c.graph_model[unit.name]
        unit = replace(
            unit,
            tables={
                k: _graph_tables(v, model, t.warmup_steps)
                if k in (layout.KERNEL, layout.OP_STATISTIC)
                else v
                for k, v in unit.tables.items()
            },
        )
    if layout.DB in unit.tables and layout.KERNEL not in unit.tables:
        try:
            kernel = _db_facts(unit.tables[layout.DB][0], t)
            c.sources.append(str(unit.tables[layout.DB][0]))
            frame = sqlite_tables.read_pmu(unit.tables[layout.DB][0])
            if frame is not None:
                c.vector.append(pmu.vector_rows(frame))
        except TableError as exc:
            c.problems.append(str(exc))
    if layout.KERNEL in unit.tables:
        try:
            kernel = _kernel_facts(unit.tables[layout.KERNEL], t, c.problems)
            c.sources.extend(str(p) for p in unit.tables[layout.KERNEL])
            table = read_pmu(unit.tables[layout.KERNEL], pmu_bytes)
            if table is not None:
                c.vector.append(pmu.vector_rows(table.frame, table.notes))
                found = fusible.find(unit.name, table.frame, t)
                if found is not None:
                    c.sequences.append(found)
        except TableError as exc:
            c.problems.append(str(exc))
    if layout.OP_STATISTIC in unit.tables:
        try:
            table = read_op_statistic(unit.tables[layout.OP_STATISTIC])
            statistic = ops.statistic_facts(table.frame, t)
            c.problems.extend(table.notes)
            c.sources.extend(str(p) for p in unit.tables[layout.OP_STATISTIC])
        except TableError as exc:
            c.problems.append(str(exc))
    if layout.AICORE_TYPE in unit.tables and statistic is None:
        path = unit.tables[layout.AICORE_TYPE][0]
        try:
            statistic = ops.statistic_facts(mindspore.read_op_types(path), t)
            c.sources.append(str(path))
        except TableError as exc:
            c.problems.append(str(exc))
    if statistic is not None and kernel is not None:
        c.facts.append(ops.combine(statistic, kernel))
    elif statistic is not None:
        c.facts.append(statistic)
    elif kernel is not None:
        c.facts.append(kernel)
    if statistic is not None or kernel is not None:
        c.unit_facts[unit.name] = c.facts[-1]
    if kernel is not None:
        c.kernel_units.append(unit.name)


def _unit_steps(unit: layout.ProfileUnit, c: _Collected) -> None:
    try:
        if layout.STEP_TRACE_TIME in unit.tables:
            path = unit.tables[layout.STEP_TRACE_TIME][0]
            rows = steptime.torch_rows(read_torch_steps(path, c.problems))
            c.torch_ranks.append((unit.name, rows))
            c.sources.append(str(path))
        elif layout.ANALYSIS_DB in unit.tables:  # export_type=db: the same step table
            path = unit.tables[layout.ANALYSIS_DB][0]
            rows = steptime.torch_rows(sqlite_tables.read_steps(path))
            if rows:
                c.torch_ranks.append((unit.name, rows))
                c.sources.append(str(path))
        if layout.STEP_TRACE_RAW in unit.tables:  # MindSpore <= 2.2
            path = unit.tables[layout.STEP_TRACE_RAW][0]
            rows = steptime.graph_rows(mindspore.read_steps(path, None)).get(None, [])
            c.graph_ranks.append((unit.name, rows))
            c.sources.append(str(path))
        if layout.STEP_TRACE in unit.tables:
            paths = unit.tables[layout.STEP_TRACE]
            iterations = read_graph_steps(paths, c.problems)
            model = steptime.chosen_model(iterations)
            if model is not None:
                c.graph_model[unit.name] = model
            by_device = steptime.graph_rows(iterations)
            for device, rows in by_device.items():
                name = (
                    unit.name
                    if len(by_device) == 1
                    else f"device{device}"  # a PROF of several devices names no rank of its own
                    if unit.name.startswith(layout.SLOT)
                    else f"{unit.name}/device{device}"
                )
                c.graph_ranks.append((name, rows))
            c.sources.extend(str(p) for p in paths)
    except TableError as exc:
        c.problems.append(str(exc))


def _metadata(unit: layout.ProfileUnit, c: _Collected) -> dict[str, object] | None:
    """profiler_metadata.json, or for a db export without it the db's META_DATA table."""
    meta = layout.metadata(unit.root)
    if meta is None and layout.DB in unit.tables:
        try:
            meta = sqlite_tables.read_metadata(unit.tables[layout.DB][0])
        except TableError as exc:
            c.problems.append(str(exc))
    return meta


def _unit_comm(unit: layout.ProfileUnit, c: _Collected) -> None:
    """communication(_matrix).json, for a db export the CommAnalyzer tables of analysis.db, for
    MindSpore <= 2.2 hccl_raw_N.csv."""
    comm_files = unit.tables.get(layout.COMMUNICATION, ()) or unit.tables.get(layout.HCCL_RAW, ())
    matrix_files = unit.tables.get(layout.COMM_MATRIX, ())
    if not comm_files and layout.ANALYSIS_DB in unit.tables:
        db = unit.tables[layout.ANALYSIS_DB][0]
        try:
            if sqlite_comm.has_communication(db):
                comm_files = matrix_files = (db,)
                c.sources.append(str(db))
        except TableError as exc:
            c.problems.append(str(exc))
    c.comm_files.extend(comm_files)
    c.comm_names.extend(
        unit.name if len(comm_files) == 1 else f"{unit.name}/{path.stem}" for path in comm_files
    )
    c.matrix_files.extend(matrix_files)
    if comm_files:
        c.comm_units.append(unit.name)
    else:
        c.matrix_only.extend(matrix_files)


def _unit_timeline(unit: layout.ProfileUnit, c: _Collected) -> None:
    """The host API sequences of trace_view.json, or of a db export's PYTORCH_API."""
    try:
        timeline = affinity.read_trace(unit.name, unit.root, c.problems)
        if timeline is None and layout.DB in unit.tables:
            timeline = affinity.read_db(unit.name, unit.tables[layout.DB][0])
    except TableError as exc:
        c.problems.append(str(exc))
        return
    if timeline is not None:
        c.timelines.append(timeline)


def _capture_time(units: tuple[layout.ProfileUnit, ...], sources: list[str]) -> float | None:
    ends = [u.capture_end_seconds for u in units if u.capture_end_seconds is not None]
    if ends:
        return float(max(ends))
    times = [Path(s).stat().st_mtime for s in sources if Path(s).exists()]
    return float(max(times)) if times else None


def _evidence(
    facts: ops.OpFacts | None,
    steps: steptime.StepResult,
    mode: str | None,
    findings: tuple[Bottleneck, ...],
    transfer: float | None = None,
    host_share: host.HostShare | None = None,
) -> Evidence:
    ratios = {p.phase: p.ratio for p in steps.phases if p.ratio is not None}
    seconds = {p.phase: p.seconds for p in steps.phases}
    step_ms = steps.step.mean_seconds * 1e3 if steps.step else None
    if facts is None or facts.total_us <= 0:
        return Evidence(
            phase_ratios=ratios,
            phase_ms={k: v * 1e3 for k, v in seconds.items()},
            step_ms=step_ms,
            mode=mode,
            findings=findings,
            transfer_ratio=transfer,
            host=host_share,
        )
    total = facts.total_us
    return Evidence(
        phase_ratios=ratios,
        phase_ms={k: v * 1e3 for k, v in seconds.items()},
        step_ms=step_ms,
        host=host_share,
        op_total_ms=total / 1e3,
        conversion_ratio=ops.ratio_of(facts, ops.FORMAT_CONVERSION_OPS | ops.COPY_OPS),
        reshape_transpose_ratio=ops.ratio_of(facts, ops.RESHAPE_TRANSPOSE_OPS),
        conv_matmul_ratio=ops.conv_matmul_ratio(facts),
        softmax_ratio=ops.softmax_ratio(facts),
        ai_cpu_ratio=None if facts.ai_cpu_us is None else facts.ai_cpu_us / total,
        ai_cpu_tasks=facts.ai_cpu_count,
        ai_cpu_ops=_ai_cpu_names(facts),
        dynamic_shape_ops=facts.dynamic_count,
        static_ops=facts.static_count,
        small_ops_ratio=facts.small_count / facts.op_count if facts.op_count else None,
        mode=mode,
        transfer_ratio=transfer,
        findings=findings,
    )


def _ai_cpu_names(facts: ops.OpFacts | None) -> tuple[str, ...]:
    found = facts.ai_cpu_ops if facts is not None and facts.ai_cpu_ops else {}
    return tuple(sorted(found, key=lambda k: (-found[k][0], k)))


def _mode(c: _Collected, units: tuple[layout.ProfileUnit, ...]) -> str | None:
    """graph when the profile holds graph iterations (GE), eager for torch_npu's step tables."""
    if c.graph_ranks:
        return "graph"
    return "eager" if any(u.layout == "torch_npu" for u in units) else None


def _steps(c: _Collected, t: Thresholds) -> steptime.StepResult:
    """Graph-mode iterations when present (they carry the input-pipeline gap), else torch steps."""
    if c.graph_ranks:
        return steptime.analyse_rows(c.graph_ranks, steptime.GRAPH_PHASES, t)
    return steptime.analyse_rows(c.torch_ranks, steptime.TORCH_PHASES, t)


def analyze_path(
    path: Path,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    top_n: int = 10,
    workload: str | None = None,
    limits: AnalysisLimits | None = None,
    process_ranks: Mapping[int, int] | None = None,
) -> AnalysisReport:
    """Analyse a PROF_* dir, a *_ascend_pt dir, or a parent holding several ranks.

    Raises NoProfileData when nothing usable is there, TooLarge when a table is over its cap in
    ``limits``; per-file problems go in the report. ``process_ranks`` (pid -> rank, from the
    captured processes' environment) names the ranks of profiles that name none themselves.
    """
    units = layout.find_units(path, process_ranks or {})
    if limits is not None:
        check_sizes(units, limits)
    unread = layout.unread(path)
    if not units:
        raise NoProfileData(
            "\n".join(unread)
            or (
                f"{path}: no profiler tables found (looked for ASCEND_PROFILER_OUTPUT/ with CSVs "
                "or "
                "ascend_pytorch_profiler_N.db, PROF_*/mindstudio_profiler_output/, "
                "PROF_*/msprof_*.db, "
                "PROF_*/device_N/summary/ and MindSpore's profiler/ tables)"
            )
        )
    c = _Collected([], [], [], [], [], [], [], [], [], [], [], {}, [], [])
    # operator_pmu reads a head of each kernel table: PMU_MAX_BYTES over all of them
    kernel_tables = sum(len(u.tables.get(layout.KERNEL, ())) for u in units)
    pmu_bytes = max(PMU_MIN_BYTES, PMU_MAX_BYTES // max(kernel_tables, 1))
    c.problems.extend(unread)
    for unit in units:
        c.problems.extend(unit.notes)
        _unit_steps(unit, c)  # first: a legacy unit's op tables follow its steps' model
        _unit_ops(unit, thresholds, c, pmu_bytes)
        _unit_comm(unit, c)
        meta = _metadata(unit, c)
        c.dp_of[unit.name] = peers.dp_ranks(meta)
        c.env.append((unit.name, environment.recorded(meta)))
        times = host.read(unit.root, c.problems)
        if times is None and layout.DB in unit.tables:
            times = host.read_db(unit.tables[layout.DB][0])
        if times is not None:
            c.host_times[unit.name] = times
        _unit_timeline(unit, c)
    if not c.sources:
        raise NoProfileData(f"{path}: no readable profiler table:\n  " + "\n  ".join(c.problems))
    summary = _summary(c, units, thresholds, top_n, workload or path.resolve().name)
    scope = _scope(c, summary, thresholds, top_n)
    return AnalysisReport(summary, tuple(c.sources), tuple(c.problems), scope)


def _step_points(rows: list[steptime.StepRow], t: Thresholds) -> tuple[StepPoint, ...]:
    """Every captured step, marked as the step statistics count it (steptime.analyse_rows)."""
    whole, _ = steptime.partial_edges(rows, t.partial_step_ratio)
    counted = {id(r) for r in steptime.skip_warmup(whole, t.warmup_steps)}
    return tuple(StepPoint(r.key, r.total_us / 1e6, id(r) in counted) for r in rows)


def _scope(c: _Collected, s: ProfileSummary, t: Thresholds, top_n: int) -> ReportScope:
    """Per-rank figures, and which ranks the summary's totals cover."""
    stepped = c.graph_ranks or c.torch_ranks  # the rows the step statistics came from
    steps = {name: _step_points(rows, t) for name, rows in stepped}
    names = list(steps) + [n for n in c.unit_facts if n not in steps]
    details = []
    for name in names:
        facts = c.unit_facts.get(name)
        details.append(
            RankDetail(
                name,
                steps.get(name, ()),
                facts.total_us / 1e6 if facts else None,
                ops.top_ops(facts, top_n) if facts else (),
                _comm_shares(facts, c.step_total_us([name])) if facts else (),
            )
        )
    slowest = max(s.ranks, key=lambda r: r.step_seconds, default=None)
    return ReportScope(
        step_rank=slowest.rank if slowest else None,
        op_ranks=tuple(c.unit_facts),
        comm_ranks=tuple(c.comm_units),
        ranks=tuple(details),
    )


def _summary(
    c: _Collected,
    units: tuple[layout.ProfileUnit, ...],
    thresholds: Thresholds,
    top_n: int,
    workload: str,
) -> ProfileSummary:
    facts = ops.merge_facts(c.facts) if c.facts else None
    steps = _steps(c, thresholds)
    c.problems.extend(steps.left_out)
    groups = peers.peer_groups(steps.ranks, c.dp_of)
    spreads, rank_findings = peers.judge(steps.ranks, groups, thresholds)
    communication = comm.read(
        c.comm_files, thresholds, c.problems, c.matrix_files, c.matrix_only, c.comm_names
    )
    mode = _mode(c, units)
    transfer = _transfer_ratio(communication, c.step_total_us(c.comm_units))
    tier = transfer_tier(transfer, thresholds)
    judged = (
        rank_findings
        + comm.slow_links(communication.links, thresholds, communication.pairs, tier)
        + comm.small_packets(communication.packets, thresholds, tier)
        + comm.byte_alignment(communication.alignment, thresholds)
        + environment.judge(c.env, thresholds)
        + pmu.judge(c.vector, thresholds)
        + affinity.judge(c.timelines, thresholds)
    )
    evidence = replace(
        _evidence(facts, steps, mode, judged, transfer, c.host_share()),
        sequences=tuple(c.sequences),
    )
    return ProfileSummary(
        workload=workload,
        layout="+".join(sorted({u.layout for u in units})),
        capture_time_seconds=_capture_time(units, c.sources),
        step=steps.step,
        phases=steps.phases,
        op_total_seconds=facts.total_us / 1e6 if facts else None,
        op_time_ratio=ops.top_ops(facts, top_n) if facts else (),
        core_type_time_ratio=ops.core_shares(facts) if facts else (),
        ai_cpu_seconds=None if facts is None or facts.ai_cpu_us is None else facts.ai_cpu_us / 1e6,
        ai_cpu_count=facts.ai_cpu_count if facts else None,
        format_conversion_seconds=_conversion_seconds(facts),
        format_conversion_ratio=ops.ratio_of(facts, ops.FORMAT_CONVERSION_OPS) if facts else None,
        dynamic_shape_op_count=facts.dynamic_count if facts else None,
        op_types_inferred=facts.inferred if facts else False,
        ranks=steps.ranks,
        rank_spread=spreads,
        bottlenecks=diagnose(evidence, thresholds),
        mode=mode,
        communication=_comm_shares(facts, c.step_total_us(c.kernel_units)) if facts else (),
        comm_times=communication.times,
        comm_transfer_ratio=transfer,
        links=communication.links,
        peer_groups=groups if len(groups) > 1 or len(steps.ranks) > 1 else (),
        ai_cpu_op_types=_ai_cpu_names(facts),
    )


def _transfer_ratio(read: comm.CommRead, step_total_us: float | None) -> float | None:
    """communication.json's transit time over the step time of the ranks it came from.

    None when that transit is implausibly short for what its links moved: a rank's transfers
    last at least the link time of a link type (summed over its peers) over _MAX_PEERS. CANN
    8.3's Level2 export (pp2dp2_level2) records 0.036 ms of transit against 368 ms of HCCS
    link time and files the rest as idle: unknown, not "fine"."""
    if read.times is None or not step_total_us:
        return None
    link_seconds = max((x.transit_seconds for x in read.links), default=0.0)
    if read.times.transit_seconds * _MAX_PEERS < link_seconds:
        return None
    return read.times.transit_seconds / (step_total_us / 1e6)


def _comm_shares(facts: ops.OpFacts, step_total_us: float | None) -> tuple[CommShare, ...]:
    """Communication task time by collective; ratio over the step time those tasks ran in."""
    ranked = sorted(facts.comm.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return tuple(
        CommShare(kind, us / 1e6, us / step_total_us if step_total_us else None, n)
        for kind, (us, n) in ranked
    )


def _conversion_seconds(facts: ops.OpFacts | None) -> float | None:
    if facts is None:
        return None
    return ops.ratio_of(facts, ops.FORMAT_CONVERSION_OPS) * facts.total_us / 1e6
