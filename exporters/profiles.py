"""Profiling families rendered from NodeSnapshot.profiles at scrape time (pure, no I/O).

Nothing profiling holds can break a scrape: each family is built on its own, a family that
cannot be built is left out, a NaN or infinite value is never a sample, and both are counted
in `npumon_profile_render_skipped` (this scrape) instead."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from npumon.daemon.model.profile import BOTTLENECK_KINDS, ProfilingView
from npumon.daemon.model.snapshot import NodeSnapshot

log = logging.getLogger(__name__)

PROFILED = "From npumon's latest profiler capture of the workload."
Family = GaugeMetricFamily | CounterMetricFamily


@dataclass
class _Skips:
    """What this render left out: whole families (by name) and non-finite samples."""

    families: list[str] = field(default_factory=list)
    non_finite: int = 0

    def add(self, family: Family, labels: Sequence[str], value: object) -> None:
        """One sample, checked: labels are text, the value a finite number."""
        if not all(isinstance(label, str) for label in labels):
            raise TypeError(f"a label of {family.name} is not text")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"a value of {family.name} is {type(value).__name__}")
        number = float(value)
        if not math.isfinite(number):
            self.non_finite += 1
            return
        family.add_metric(list(labels), number)


Builder = Callable[[ProfilingView, _Skips], Family]


def _gauge(name: str, doc: str, *labels: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, f"{doc} {PROFILED}", labels=labels)


def _step(view: ProfilingView, skips: _Skips) -> Family:
    step = _gauge(
        "npu_step_duration_seconds",
        "Step (graph iteration) time over the captured steps, warm-up excluded.",
        "workload",
        "stat",
    )
    for w in view.workloads:
        if w.summary is not None and w.summary.step is not None:
            for stat in ("mean", "p50", "p90", "p99"):
                skips.add(step, (w.workload, stat), getattr(w.summary.step, f"{stat}_seconds"))
    return step


def _phase_seconds(view: ProfilingView, skips: _Skips) -> Family:
    phases = _gauge("npu_step_phase_seconds", "Mean time per step in a phase.", "workload", "phase")
    for w in view.workloads:
        for p in w.summary.phases if w.summary is not None else ():
            skips.add(phases, (w.workload, p.phase), p.seconds)
    return phases


def _phase_ratio(view: ProfilingView, skips: _Skips) -> Family:
    ratios = _gauge(
        "npu_step_phase_ratio",
        "Mean share of the step spent in a phase (0..1).",
        "workload",
        "phase",
    )
    for w in view.workloads:
        for p in w.summary.phases if w.summary is not None else ():
            if p.ratio is not None:
                skips.add(ratios, (w.workload, p.phase), p.ratio)
    return ratios


def _baseline(view: ProfilingView, skips: _Skips) -> Family:
    baseline = GaugeMetricFamily(
        "npu_step_duration_baseline_seconds",
        "Median of the median step times of the workload's previous judged captures (rolling "
        "window): what the regression gate judges the latest capture's median against.",
        labels=("workload",),
    )
    for w in view.workloads:
        if w.baseline_seconds is not None:
            skips.add(baseline, (w.workload,), w.baseline_seconds)
    return baseline


def _step_count(view: ProfilingView, skips: _Skips) -> Family:
    steps = _gauge(
        "npu_step_captured_steps",
        "Steps the step statistics are over (warm-up and partial edge steps left out).",
        "workload",
    )
    for w in view.workloads:
        if w.summary is not None and w.summary.step is not None:
            skips.add(steps, (w.workload,), w.summary.step.count)
    return steps


def _op_ratio(view: ProfilingView, skips: _Skips) -> Family:
    ops = _gauge(
        "npu_op_time_ratio",
        "Share of compute operator time of an op type (top N + other): communication "
        "(HCCL) tasks, waits and idle are never operator time, so the share is the same "
        "whichever tables the profile has.",
        "workload",
        "op_type",
        "core_type",
    )
    for w in view.workloads:
        merged: dict[tuple[str, str], float] = {}
        for o in w.summary.op_time_ratio if w.summary is not None else ():
            # one sample per label set, whatever the table held
            merged[(o.op_type, o.core_type)] = merged.get((o.op_type, o.core_type), 0.0) + o.ratio
        for (op_type, core_type), ratio in merged.items():
            skips.add(ops, (w.workload, op_type, core_type), ratio)
    return ops


def _core_ratio(view: ProfilingView, skips: _Skips) -> Family:
    cores = _gauge(
        "npu_core_type_time_ratio",
        "Share of compute operator time by core type (every kind the tables name).",
        "workload",
        "core_type",
    )
    for w in view.workloads:
        merged: dict[str, float] = {}
        for c in w.summary.core_type_time_ratio if w.summary is not None else ():
            merged[c.core_type] = merged.get(c.core_type, 0.0) + c.ratio
        for core_type, ratio in merged.items():
            skips.add(cores, (w.workload, core_type), ratio)
    return cores


def _bottlenecks(view: ProfilingView, skips: _Skips) -> Family:
    found = _gauge(
        "npu_profile_bottleneck",
        "1 for each cause the diagnosis rules found, 0 for the others.",
        "workload",
        "kind",
    )
    for w in view.workloads:
        if w.summary is not None:
            kinds = {b.kind for b in w.summary.bottlenecks}
            for kind in BOTTLENECK_KINDS:
                skips.add(found, (w.workload, kind), 1.0 if kind in kinds else 0.0)
    return found


def _comm_ratio(view: ProfilingView, skips: _Skips) -> Family:
    comm = _gauge(
        "npu_communication_time_ratio",
        "Communication (HCCL) task time of a collective over the step time of the ranks "
        "whose tasks were read; overlapped time included, so the sum may exceed the "
        "not-overlapped phase.",
        "workload",
        "collective",
    )
    for w in view.workloads:
        for c in w.summary.communication if w.summary is not None else ():
            if c.ratio is not None:
                skips.add(comm, (w.workload, c.collective), c.ratio)
    return comm


def _comm_wait(view: ProfilingView, skips: _Skips) -> Family:
    wait = _gauge(
        "npu_communication_wait_ratio",
        "Share of communication time spent waiting for peers (communication.json: "
        "wait / (wait + transit)); high with a slow rank.",
        "workload",
    )
    for w in view.workloads:
        t = w.summary.comm_times if w.summary is not None else None
        if t is not None and t.wait_seconds + t.transit_seconds > 0:
            skips.add(wait, (w.workload,), t.wait_seconds / (t.wait_seconds + t.transit_seconds))
    return wait


def _link_bandwidth(view: ProfilingView, skips: _Skips) -> Family:
    links = _gauge(
        "npu_communication_link_bandwidth_bytes_per_second",
        "Bytes per second moved over a link type (HCCS, PCIE, RDMA, SDMA, SIO) by "
        "the collectives of the capture.",
        "workload",
        "link_type",
    )
    for w in view.workloads:
        for link in w.summary.links if w.summary is not None else ():
            if link.bandwidth_bytes_per_second is not None and link.link_type in LINK_TYPES:
                skips.add(links, (w.workload, link.link_type), link.bandwidth_bytes_per_second)
    return links


# a node has at most 16 chips (Atlas 900 A3 SuperPoD node): one workload's ranks on it
MAX_RANKS = 16
RANK_STATS = {
    "computing": "computing",
    "fp_bp": "computing",
    "communication": "communication",
    "free": "free",
}
LINK_TYPES = frozenset({"HCCS", "PCIE", "RDMA", "SDMA", "SIO", "LOCAL"})


def _rank_step(view: ProfilingView, skips: _Skips) -> Family:
    ranks = _gauge(
        "npu_rank_step_duration_seconds",
        "Per rank of the workload on this node: mean step time (stat=mean) and its "
        "computing (graph mode: FP to BP), communication and free parts; the slowest "
        f"ranks are kept, at most {MAX_RANKS}.",
        "workload",
        "rank",
        "stat",
    )
    for w in view.workloads:
        kept = sorted(
            w.summary.ranks if w.summary is not None else (), key=lambda r: -r.step_seconds
        )[:MAX_RANKS]
        named: set[str] = set()
        for r in kept:
            if r.rank in named:  # one sample per label set, whatever the analysis named
                continue
            named.add(r.rank)
            skips.add(ranks, (w.workload, r.rank, "mean"), r.step_seconds)
            for p in r.phases:
                if p.phase in RANK_STATS:
                    skips.add(ranks, (w.workload, r.rank, RANK_STATS[p.phase]), p.seconds)
    return ranks


def _captures(view: ProfilingView, skips: _Skips) -> Family:
    total = CounterMetricFamily(
        "npumon_captures",
        "Profiler captures and ingested profiles since start, by result.",
        labels=("result",),
    )
    for result, count in view.captures:
        skips.add(total, (result,), count)
    return total


def _per_workload(name: str, documentation: str, field: str) -> Builder:
    """A gauge of one optional WorkloadProfile field, one sample per workload that has it (a
    flag as 0 or 1)."""

    def build(view: ProfilingView, skips: _Skips) -> Family:
        family = GaugeMetricFamily(name, documentation, labels=("workload",))
        for w in view.workloads:
            value = getattr(w, field)
            if value is not None:
                skips.add(family, (w.workload,), float(value))
        return family

    return build


_band = _per_workload(
    "npu_step_duration_baseline_band_ratio",
    "Noise band of the regression gate: the relative slowdown of the median step time over "
    "the baseline that counts as a regression, the larger of the configured regression_ratio "
    "and regression_noise_sigmas robust deviations (1.4826 x MAD) of the baseline's medians.",
    "band_ratio",
)
_judged = _per_workload(
    "npu_step_regression_judged",
    "1 when the workload's latest capture was judged by the regression gate, 0 when it could "
    "not vote: fewer steps than regression_min_steps, or a baseline of fewer than "
    "baseline.min_captures judged captures.",
    "judged",
)
_regressed = _per_workload(
    "npu_step_regression",
    "1 when the latest judged capture's median step time is above the baseline by more than "
    "the noise band, 0 when within it; absent when the latest capture was not judged.",
    "regressed",
)


_last_success = _per_workload(
    "npumon_capture_last_success_timestamp_seconds",
    "Unix time in seconds of the workload's last successful capture (kept across restarts).",
    "last_success_timestamp",
)
_capture_duration = _per_workload(
    "npumon_capture_duration_seconds",
    "Wall time in seconds of the workload's last successful capture, analysis included.",
    "capture_duration_seconds",
)


def _state_errors(view: ProfilingView, skips: _Skips) -> Family:
    errors = CounterMetricFamily(
        "npumon_state_errors",
        "Problems with npumon's state file since start (corrupt, unreadable, write_failed); a "
        "corrupt or unreadable file is moved aside as <name>.corrupt-<time>.",
        labels=("reason",),
    )
    for reason, count in view.state_errors:
        skips.add(errors, (reason,), count)
    return errors


FAMILIES: tuple[tuple[str, Builder], ...] = (
    ("npu_step_duration_seconds", _step),
    ("npu_step_phase_seconds", _phase_seconds),
    ("npu_step_phase_ratio", _phase_ratio),
    ("npu_step_captured_steps", _step_count),
    ("npu_step_duration_baseline_seconds", _baseline),
    ("npu_step_duration_baseline_band_ratio", _band),
    ("npu_step_regression_judged", _judged),
    ("npu_step_regression", _regressed),
    ("npu_op_time_ratio", _op_ratio),
    ("npu_core_type_time_ratio", _core_ratio),
    ("npu_profile_bottleneck", _bottlenecks),
    ("npu_communication_time_ratio", _comm_ratio),
    ("npu_communication_wait_ratio", _comm_wait),
    ("npu_communication_link_bandwidth_bytes_per_second", _link_bandwidth),
    ("npu_rank_step_duration_seconds", _rank_step),
    ("npumon_captures", _captures),
    ("npumon_capture_last_success_timestamp_seconds", _last_success),
    ("npumon_capture_duration_seconds", _capture_duration),
    ("npumon_state_errors", _state_errors),
)


def render_profiles(snap: NodeSnapshot) -> Iterator[Metric]:
    """Step time, phases, operators and diagnoses per workload, then capture self-metrics.

    npu_step_duration_seconds{workload="llama",stat="p99"} 0.412
    npu_op_time_ratio{workload="llama",op_type="MatMulV3",core_type="ai_core"} 0.31
    npumon_captures_total{result="ok"} 12
    """
    view = snap.profiles
    if view is None:
        return
    skips = _Skips()
    for name, build in FAMILIES:
        try:
            family = build(view, skips)
        except Exception as exc:  # a family that cannot render is left out, the rest served
            skips.families.append(name)
            log.debug(
                "event=profile_family_skipped family=%s error=%r",
                name,
                f"{type(exc).__name__}: {exc}",
            )
            continue
        yield family
    yield _skipped(skips)


def _skipped(skips: _Skips) -> GaugeMetricFamily:
    skipped = GaugeMetricFamily(
        "npumon_profile_render_skipped",
        "What this scrape left out of the profiling families: whole families that could not be "
        "rendered (reason=family) and NaN or infinite values (reason=non_finite).",
        labels=("reason",),
    )
    skipped.add_metric(["family"], float(len(skips.families)))
    skipped.add_metric(["non_finite"], float(skips.non_finite))
    return skipped
