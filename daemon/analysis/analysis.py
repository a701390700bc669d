"""One profile directory into one AnalysisReport: its units read into typed evidence per rank
(readers/), the profile's evidence assembled from them (evidence.py), every rule (rules/) run
on it, and the summary, scope and findings put together. Runs in the analysis worker."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from npumon.daemon.analysis import opcounts, rules, stepstats
from npumon.daemon.analysis.evidence import CommRead, Evidence, HostShare, coverage_of
from npumon.daemon.analysis.limits import check_sizes
from npumon.daemon.analysis.readers import comm, host, layout, ops, replicas, steptime
from npumon.daemon.analysis.readers.tables import PMU_MAX_BYTES, PMU_MIN_BYTES
from npumon.daemon.analysis.reading import RankEvidence, read_unit
from npumon.daemon.model.profile import (
    AnalysisLimits,
    AnalysisReport,
    CommShare,
    ProfileSummary,
    RankDetail,
    ReportScope,
    StepPoint,
    Thresholds,
)
from npumon.daemon.model.rank_hardware import RankHardware

DEFAULT_THRESHOLDS = Thresholds()
_MAX_LINK_RANKS = 384  # links a rank drives at once, at most: an Atlas A3 supernode's NPUs


class NoProfileData(Exception):
    """The path holds no profiler table that could be read."""


@dataclass(frozen=True, slots=True)
class _Profile:
    """Every rank's evidence, and the views of it the summary needs."""

    ranks: tuple[RankEvidence, ...]

    @property
    def torch_steps(self) -> list[tuple[str, list[steptime.StepRow]]]:
        return [s for r in self.ranks for s in r.torch_steps]

    @property
    def graph_steps(self) -> list[tuple[str, list[steptime.StepRow]]]:
        return [s for r in self.ranks for s in r.graph_steps]

    @property
    def unit_facts(self) -> dict[str, ops.OpFacts]:
        return {r.name: r.facts for r in self.ranks if r.facts is not None}

    @property
    def coverage(self) -> dict[str, float | None]:
        """Per rank with an operator and a step table: its operator tables' coverage."""
        return {r.name: r.coverage.ratio for r in self.ranks if r.coverage is not None}

    @property
    def comm_units(self) -> list[str]:
        return [r.name for r in self.ranks if not r.comm.matrix_links]

    def step_total_us(self, units: Sequence[str]) -> float | None:
        """All captured steps of these units (warm-up included: the tasks ran in them too)."""
        rows = [r for name, rs in self.torch_steps + self.graph_steps if name in units for r in rs]
        return sum(r.total_us for r in rows) or None

    def host_share(self) -> HostShare | None:
        """The host figures over the captured steps of the units that have them."""
        counted = []
        for rank in self.ranks:
            if rank.host_times is None:
                continue
            rows = [
                r for n, rs in self.torch_steps + self.graph_steps if n == rank.name for r in rs
            ]
            total = sum(r.total_us for r in rows)
            if rows and total > 0:
                counted.append((rank.host_times, len(rows), total))
        return host.share(counted)


def _capture_time(units: tuple[layout.ProfileUnit, ...], sources: list[str]) -> float | None:
    ends = [u.capture_end_seconds for u in units if u.capture_end_seconds is not None]
    if ends:
        return float(max(ends))
    times = [Path(s).stat().st_mtime for s in sources if Path(s).exists()]
    return float(max(times)) if times else None


def _evidence(
    facts: ops.OpFacts | None,
    counts: opcounts.OpCounts | None,
    steps: stepstats.StepResult,
    mode: str | None,
    transfer: float | None,
    host_share: HostShare | None,
    rest: Evidence,
) -> Evidence:
    """``rest`` with the step, phase, operator and host figures the rules read."""
    ratios = {p.phase: p.ratio for p in steps.phases if p.ratio is not None}
    seconds = {p.phase: p.seconds for p in steps.phases}
    step_ms = steps.step.mean_seconds * 1e3 if steps.step else None
    evidence = replace(
        rest,
        phase_ratios=ratios,
        phase_ms={k: v * 1e3 for k, v in seconds.items()},
        step_ms=step_ms,
        mode=mode,
        transfer_ratio=transfer,
        host=host_share,
    )
    if facts is None or counts is None or facts.total_us <= 0:
        return evidence
    total = facts.total_us
    return replace(
        evidence,
        op_total_ms=total / 1e3,
        conversion_ratio=ops.ratio_of(facts, ops.FORMAT_CONVERSION_OPS | ops.COPY_OPS),
        reshape_transpose_ratio=ops.ratio_of(facts, ops.RESHAPE_TRANSPOSE_OPS),
        conv_matmul_ratio=ops.conv_matmul_ratio(facts),
        softmax_ratio=ops.softmax_ratio(facts),
        ai_cpu_ratio=None if counts.ai_cpu_us is None else counts.ai_cpu_us / total,
        ai_cpu_tasks=counts.ai_cpu_count,
        ai_cpu_ops=counts.ai_cpu_names(),
        dynamic_shape_ops=facts.dynamic_count,
        static_ops=facts.static_count,
        small_ops_ratio=counts.small_count / facts.op_count if facts.op_count else None,
    )


def _mode(p: _Profile, units: tuple[layout.ProfileUnit, ...]) -> str | None:
    """graph when the profile holds graph iterations (GE), eager for torch_npu's step tables."""
    if p.graph_steps:
        return "graph"
    return "eager" if any(u.layout == "torch_npu" for u in units) else None


def _steps(p: _Profile, t: Thresholds) -> stepstats.StepResult:
    """Graph-mode iterations when present (they carry the input-pipeline gap), else torch steps."""
    if p.graph_steps:
        return stepstats.analyse_rows(p.graph_steps, steptime.GRAPH_PHASES, t)
    return stepstats.analyse_rows(p.torch_steps, steptime.TORCH_PHASES, t)


def analyze_path(
    path: Path,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    top_n: int = 10,
    workload: str | None = None,
    limits: AnalysisLimits | None = None,
    process_ranks: Mapping[int, int] | None = None,
    hardware: tuple[RankHardware, ...] = (),
) -> AnalysisReport:
    """Analyse a PROF_* dir, a *_ascend_pt dir, or a parent holding several ranks.

    Raises NoProfileData when nothing usable is there, TooLarge when a table is over its cap in
    ``limits``; per-file problems go in the report. ``process_ranks`` (pid -> rank, from the
    captured processes' environment) names the ranks of profiles that name none themselves;
    ``hardware`` (the daemon's, per captured rank) is what a slow rank's finding says of its chip.
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
    # operator_pmu reads a head of each kernel table: PMU_MAX_BYTES over all of them
    kernel_tables = sum(len(u.tables.get(layout.KERNEL, ())) for u in units)
    pmu_bytes = max(PMU_MIN_BYTES, PMU_MAX_BYTES // max(kernel_tables, 1))
    p = _Profile(tuple(read_unit(unit, thresholds, pmu_bytes) for unit in units))
    sources = [s for r in p.ranks for s in r.sources]
    problems = list(unread) + [n for r in p.ranks for n in r.problems]
    if not sources:
        raise NoProfileData(f"{path}: no readable profiler table:\n  " + "\n  ".join(problems))
    summary = _summary(
        p, units, sources, problems, thresholds, top_n, workload or path.resolve().name, hardware
    )
    scope = _scope(p, summary, thresholds, top_n)
    return AnalysisReport(summary, tuple(sources), tuple(problems), scope)


def _step_points(rows: list[steptime.StepRow], t: Thresholds) -> tuple[StepPoint, ...]:
    """Every captured step, marked as the step statistics count it (stepstats.analyse_rows)."""
    whole, _ = stepstats.partial_edges(rows, t.partial_step_ratio)
    counted = {id(r) for r in stepstats.skip_warmup(whole, t.warmup_steps)}
    return tuple(StepPoint(r.key, r.total_us / 1e6, id(r) in counted) for r in rows)


def _scope(p: _Profile, s: ProfileSummary, t: Thresholds, top_n: int) -> ReportScope:
    """Per-rank figures, and which ranks the summary's totals cover."""
    stepped = p.graph_steps or p.torch_steps  # the rows the step statistics came from
    steps = {name: _step_points(rows, t) for name, rows in stepped}
    unit_facts = p.unit_facts
    coverage = p.coverage
    names = list(steps) + [n for n in unit_facts if n not in steps]
    details = []
    for name in names:
        facts = unit_facts.get(name)
        details.append(
            RankDetail(
                name,
                steps.get(name, ()),
                facts.total_us / 1e6 if facts else None,
                ops.top_ops(facts, top_n) if facts else (),
                _comm_shares(facts, p.step_total_us([name])) if facts else (),
                coverage.get(name),
            )
        )
    slowest = max(s.ranks, key=lambda r: r.step_seconds, default=None)
    return ReportScope(
        step_rank=slowest.rank if slowest else None,
        op_ranks=tuple(unit_facts),
        comm_ranks=tuple(p.comm_units),
        ranks=tuple(details),
    )


def _summary(
    p: _Profile,
    units: tuple[layout.ProfileUnit, ...],
    sources: list[str],
    problems: list[str],
    thresholds: Thresholds,
    top_n: int,
    workload: str,
    hardware: tuple[RankHardware, ...] = (),
) -> ProfileSummary:
    every = [r.facts for r in p.ranks if r.facts is not None]
    facts = ops.merge_facts(every) if every else None
    counts = opcounts.count(facts, thresholds) if facts else None
    steps = _steps(p, thresholds)
    problems.extend(steps.left_out)
    dp_of = {r.name: r.dp_ranks for r in p.ranks}
    groups = replicas.replica_groups(steps.ranks, dp_of)
    group_spreads, widest = stepstats.spreads(steps.ranks, groups, thresholds)
    communication = comm.combine([r.comm for r in p.ranks], problems)
    mode = _mode(p, units)
    transfer = _transfer_ratio(communication, p.step_total_us(p.comm_units))
    evidence = _evidence(
        facts,
        counts,
        steps,
        mode,
        transfer,
        p.host_share(),
        Evidence(
            windows=tuple(w for r in p.ranks for w in r.windows),
            ranks=steps.ranks,
            replica_groups=groups,
            group_spreads=group_spreads,
            rank_spread=widest,
            communication=communication,
            env=tuple((r.name, r.env) for r in p.ranks),
            vector=tuple(v for r in p.ranks for v in r.vector),
            timelines=tuple(r.timeline for r in p.ranks if r.timeline is not None),
            hardware=hardware,
            op_coverage=tuple(r.coverage for r in p.ranks if r.coverage is not None),
        ),
    )
    kernel_units = [r.name for r in p.ranks if r.kernel_read]
    return ProfileSummary(
        workload=workload,
        layout="+".join(sorted({u.layout for u in units})),
        capture_time_seconds=_capture_time(units, sources),
        step=steps.step,
        phases=steps.phases,
        op_total_seconds=facts.total_us / 1e6 if facts else None,
        op_time_ratio=ops.top_ops(facts, top_n) if facts else (),
        core_type_time_ratio=ops.core_shares(facts) if facts else (),
        ai_cpu_seconds=None
        if counts is None or counts.ai_cpu_us is None
        else counts.ai_cpu_us / 1e6,
        ai_cpu_count=counts.ai_cpu_count if counts else None,
        format_conversion_seconds=_conversion_seconds(facts),
        format_conversion_ratio=ops.ratio_of(facts, ops.FORMAT_CONVERSION_OPS) if facts else None,
        dynamic_shape_op_count=facts.dynamic_count if facts else None,
        op_types_inferred=facts.inferred if facts else False,
        ranks=steps.ranks,
        rank_spread=widest,
        bottlenecks=rules.diagnose(evidence, thresholds),
        mode=mode,
        communication=_comm_shares(facts, p.step_total_us(kernel_units)) if facts else (),
        comm_times=communication.times,
        comm_transfer_ratio=transfer,
        links=communication.links,
        peer_groups=groups if len(groups) > 1 or len(steps.ranks) > 1 else (),
        ai_cpu_op_types=counts.ai_cpu_names() if counts else (),
        op_coverage=coverage_of(evidence.op_coverage),
        not_judged=rules.withheld(evidence, thresholds),
    )


def _transfer_ratio(read: CommRead, step_total_us: float | None) -> float | None:
    """communication.json's transit time over the step time of the ranks it came from.

    None when that transit is implausibly short for what its links moved: a rank's transfers last at
    least the link time of a link type (summed over the ranks it sends to) over _MAX_LINK_RANKS.
    CANN 8.3's Level2 export (pp2dp2_level2) records 0.036 ms of transit against 368 ms of HCCS link
    time and files the rest as idle: unknown, not "fine"."""
    if read.times is None or not step_total_us:
        return None
    link_seconds = max((x.transit_seconds for x in read.links), default=0.0)
    if read.times.transit_seconds * _MAX_LINK_RANKS < link_seconds:
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
