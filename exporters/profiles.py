"""Profiling families rendered from NodeSnapshot.profiling at scrape time (pure, no I/O)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from npumon.daemon.model.profile import BOTTLENECK_KINDS, ProfilingView, WorkloadProfile
from npumon.daemon.model.snapshot import NodeSnapshot

PROFILED = "From npumon's latest profiler capture of the workload."


def _gauge(name: str, doc: str, *labels: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, f"{doc} {PROFILED}", labels=labels)


def render_profiles(snap: NodeSnapshot) -> Iterator[Metric]:
    """Step time, phases, operators and diagnoses per workload, then capture self-metrics.

    npu_step_duration_seconds{workload="llama",stat="p99"} 0.412
    npu_op_time_ratio{workload="llama",op_type="MatMulV3",core_type="ai_core"} 0.31
    npumon_captures_total{result="ok"} 12
    """
    view = snap.profiling
    if view is None:
        return
    yield from _steps(view.workloads)
    yield from _operators(view.workloads)
    yield from _captures(view)


def _steps(workloads: tuple[WorkloadProfile, ...]) -> Iterator[Metric]:
    step = _gauge("npu_step_duration_seconds",
                  "Step (graph iteration) time over the captured steps, warm-up excluded.",
                  "workload", "stat")
    phase_s = _gauge("npu_step_phase_seconds", "Mean time per step in a phase.",
                     "workload", "phase")
    phase_r = _gauge("npu_step_phase_ratio", "Mean share of the step spent in a phase (0..1).",
                     "workload", "phase")
    baseline = GaugeMetricFamily(
        "npu_step_duration_baseline_seconds",
        "Median p99 step time of the workload's previous captures (rolling window); the latest "
        "p99 above it by more than the regression ratio is a regression.",
        labels=("workload",),
    )
    for w in workloads:
        if w.baseline_seconds is not None:
            baseline.add_metric([w.workload], w.baseline_seconds)
        s = w.summary
        if s is None:
            continue
        if s.step is not None:
            for stat in ("mean", "p50", "p90", "p99"):
                step.add_metric([w.workload, stat], getattr(s.step, f"{stat}_seconds"))
        for p in s.phases:
            phase_s.add_metric([w.workload, p.phase], p.seconds)
            if p.ratio is not None:
                phase_r.add_metric([w.workload, p.phase], p.ratio)
    yield from (step, phase_s, phase_r, baseline)


def _operators(workloads: tuple[WorkloadProfile, ...]) -> Iterator[Metric]:
    ops = _gauge("npu_op_time_ratio", "Share of operator time of an op type (top N + other).",
                 "workload", "op_type", "core_type")
    cores = _gauge("npu_core_type_time_ratio", "Share of operator time by core type.",
                   "workload", "core_type")
    found = _gauge("npu_profile_bottleneck",
                   "1 for each cause the diagnosis rules found, 0 for the others.",
                   "workload", "kind")
    for w in workloads:
        s = w.summary
        if s is None:
            continue
        merged: dict[tuple[str, str], float] = {}
        for o in s.op_time_ratio:  # one sample per label set, whatever the table held
            merged[(o.op_type, o.core_type)] = merged.get((o.op_type, o.core_type), 0.0) + o.ratio
        for (op_type, core_type), ratio in merged.items():
            ops.add_metric([w.workload, op_type, core_type], ratio)
        for c in s.core_type_time_ratio:
            cores.add_metric([w.workload, c.core_type], c.ratio)
        kinds = {b.kind for b in s.bottlenecks}
        for kind in BOTTLENECK_KINDS:
            found.add_metric([w.workload, kind], 1.0 if kind in kinds else 0.0)
    yield from (ops, cores, found)


def _captures(view: ProfilingView) -> Iterator[Metric]:
    total = CounterMetricFamily(
        "npumon_captures", "Profiler captures and ingested profiles since start, by result.",
        labels=("result",))
    for result, count in view.captures:
        total.add_metric([result], float(count))
    last = GaugeMetricFamily(
        "npumon_capture_last_success_timestamp_seconds",
        "Unix time in seconds of the workload's last successful capture (kept across restarts).",
        labels=("workload",))
    took = GaugeMetricFamily(
        "npumon_capture_duration_seconds",
        "Wall time in seconds of the workload's last successful capture, analysis included.",
        labels=("workload",))
    for w in view.workloads:
        if w.last_success_timestamp is not None:
            last.add_metric([w.workload], w.last_success_timestamp)
        if w.capture_duration_seconds is not None:
            took.add_metric([w.workload], w.capture_duration_seconds)
    errors = CounterMetricFamily(
        "npumon_state_errors",
        "Problems with npumon's state file since start (corrupt, unreadable, write_failed).",
        labels=("reason",))
    for reason, count in view.state_errors:
        errors.add_metric([reason], float(count))
    yield from (total, last, took, errors)
