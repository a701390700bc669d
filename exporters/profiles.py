"""Profiling families rendered from NodeSnapshot.profiles at scrape time (pure, no I/O).

Each row of ``FAMILIES`` reads the ProfilingView; ``PROFILES``, the collector's rows, are the
same rows contained, reading the NodeSnapshot as every collector's rows do, and written by
spec.write. Nothing profiling holds can break a scrape: a family that cannot be rendered (a
label that is not text, a value that is not a number) has no sample, a NaN or infinite value is
never a sample, and both are counted in `npumon_profile_render_skipped` (this scrape)
instead."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from npumon.daemon.model.profile import BOTTLENECK_KINDS, PERCENTILE_MIN_STEPS, ProfilingView
from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.spec import Family
from npumon.exporters.spec import write as write_rows

log = logging.getLogger(__name__)

PROFILED = "From npumon's latest profiler capture of the workload."
Rows = Iterator[tuple[tuple[Any, ...], Any]]


@dataclass
class _Skips:
    """What this render left out: whole families (by name) and non-finite samples."""

    families: list[str] = field(default_factory=list)
    non_finite: int = 0

    def checked(self, family: Family, rows: Iterable[tuple[Any, Any]]) -> list[tuple[Any, float]]:
        """The samples, checked: labels are text, the value a finite number."""
        out = []
        for labels, value in rows:
            if not all(isinstance(label, str) for label in labels):
                raise TypeError(f"a label of {family.name} is not text")
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(f"a value of {family.name} is {type(value).__name__}")
            number = float(value)
            if not math.isfinite(number):
                self.non_finite += 1
                continue
            out.append((labels, number))
        return out


def _gauge(name: str, doc: str, labels: tuple[str, ...], samples: Callable[[Any], Rows]) -> Family:
    return Family(name, "gauge", f"{doc} {PROFILED}", labels, samples)


def _step(view: ProfilingView) -> Rows:
    for w in view.workloads:
        if w.summary is not None and w.summary.step is not None:
            step = w.summary.step
            yield (w.workload, "mean"), step.mean_seconds
            for q, needs in PERCENTILE_MIN_STEPS.items():  # none of fewer steps than q needs
                if step.count >= needs:
                    yield (w.workload, f"p{q}"), getattr(step, f"p{q}_seconds")


def _phase_seconds(view: ProfilingView) -> Rows:
    for w in view.workloads:
        for p in w.summary.phases if w.summary is not None else ():
            yield (w.workload, p.phase), p.seconds


def _phase_ratio(view: ProfilingView) -> Rows:
    for w in view.workloads:
        for p in w.summary.phases if w.summary is not None else ():
            if p.ratio is not None:
                yield (w.workload, p.phase), p.ratio


def _baseline(view: ProfilingView) -> Rows:
    for w in view.workloads:
        if w.baseline_seconds is not None:
            yield (w.workload,), w.baseline_seconds


def _step_count(view: ProfilingView) -> Rows:
    for w in view.workloads:
        if w.summary is not None and w.summary.step is not None:
            yield (w.workload,), w.summary.step.count


def _op_ratio(view: ProfilingView) -> Rows:
    for w in view.workloads:
        merged: dict[tuple[str, str], float] = {}
        for o in w.summary.op_time_ratio if w.summary is not None else ():
            # one sample per label set, whatever the table held
            merged[(o.op_type, o.core_type)] = merged.get((o.op_type, o.core_type), 0.0) + o.ratio
        for (op_type, core_type), ratio in merged.items():
            yield (w.workload, op_type, core_type), ratio


def _core_ratio(view: ProfilingView) -> Rows:
    for w in view.workloads:
        merged: dict[str, float] = {}
        for c in w.summary.core_type_time_ratio if w.summary is not None else ():
            merged[c.core_type] = merged.get(c.core_type, 0.0) + c.ratio
        for core_type, ratio in merged.items():
            yield (w.workload, core_type), ratio


def _bottlenecks(view: ProfilingView) -> Rows:
    for w in view.workloads:
        if w.summary is not None:
            kinds = {b.kind for b in w.summary.bottlenecks}
            withheld = {n.kind for n in w.summary.not_judged}
            for kind in BOTTLENECK_KINDS:
                if kind not in withheld:  # not judged: neither found nor cleared
                    yield (w.workload, kind), 1.0 if kind in kinds else 0.0


def _bottleneck_size(view: ProfilingView) -> Rows:
    for w in view.workloads:
        seen: set[str] = set()
        for b in w.summary.bottlenecks if w.summary is not None else ():
            seconds = b.size.seconds_per_step if b.size is not None else None
            if seconds is not None and b.kind not in seen:  # a kind's largest finding
                seen.add(b.kind)
                yield (w.workload, b.kind), seconds


# the parts that changed most against the reference capture, per workload
MAX_DELTAS = 5


def _deltas(view: ProfilingView) -> Rows:
    for w in view.workloads:
        named: set[tuple[str, str]] = set()
        for d in w.comparison.deltas if w.comparison is not None else ():
            if len(named) == MAX_DELTAS:
                break
            if (d.part_kind, d.part) not in named:
                named.add((d.part_kind, d.part))
                yield (w.workload, d.part_kind, d.part), d.seconds_per_step


def _comm_ratio(view: ProfilingView) -> Rows:
    for w in view.workloads:
        for c in w.summary.communication if w.summary is not None else ():
            if c.ratio is not None:
                yield (w.workload, c.collective), c.ratio


def _comm_wait(view: ProfilingView) -> Rows:
    for w in view.workloads:
        t = w.summary.comm_times if w.summary is not None else None
        if t is not None and t.wait_seconds + t.transit_seconds > 0:
            yield (w.workload,), t.wait_seconds / (t.wait_seconds + t.transit_seconds)


def _link_bandwidth(view: ProfilingView) -> Rows:
    for w in view.workloads:
        for link in w.summary.links if w.summary is not None else ():
            if link.bandwidth_bytes_per_second is not None and link.link_type in LINK_TYPES:
                yield (w.workload, link.link_type), link.bandwidth_bytes_per_second


# a node has at most 16 chips (Atlas 900 A3 SuperPoD node): one workload's ranks on it
MAX_RANKS = 16
RANK_STATS = {
    "computing": "computing",
    "fp_bp": "computing",
    "communication": "communication",
    "free": "free",
}
LINK_TYPES = frozenset({"HCCS", "PCIE", "RDMA", "SDMA", "SIO", "LOCAL"})


def _rank_step(view: ProfilingView) -> Rows:
    for w in view.workloads:
        kept = sorted(
            w.summary.ranks if w.summary is not None else (), key=lambda r: -r.step_seconds
        )[:MAX_RANKS]
        named: set[str] = set()
        for r in kept:
            if r.rank in named:  # one sample per label set, whatever the analysis named
                continue
            named.add(r.rank)
            yield (w.workload, r.rank, "mean"), r.step_seconds
            for p in r.phases:
                if p.phase in RANK_STATS:
                    yield (w.workload, r.rank, RANK_STATS[p.phase]), p.seconds


def _workload_info(view: ProfilingView) -> Rows:
    for w in view.workloads:
        if w.source is not None:
            yield (w.workload, w.source), 1.0


def _rank_npu(view: ProfilingView) -> Rows:
    for w in view.workloads:
        for rank, npu in dict(w.rank_npus).items():  # a rank on two chips: the first listed
            yield (w.workload, f"rank{rank}", str(npu)), 1.0  # the analysis names ranks so


def _rank_throttled(view: ProfilingView) -> Rows:
    for w in view.workloads:
        for h in w.hardware:
            if h.throttled and h.throttled_share is not None:
                reason = h.throttle_reason or "unknown"
                yield (w.workload, f"rank{h.rank}", str(h.npu), reason), h.throttled_share


def _rank_errors(view: ProfilingView) -> Rows:
    for w in view.workloads:
        for h in w.hardware:
            for kind, count in h.errors:
                yield (w.workload, f"rank{h.rank}", str(h.npu), kind), float(count)


def _per_workload(attr: str) -> Callable[[ProfilingView], Rows]:
    """One optional WorkloadProfile field, one sample per workload that has it (a flag as 0
    or 1)."""

    def samples(view: ProfilingView) -> Rows:
        for w in view.workloads:
            value = getattr(w, attr)
            if value is not None:
                yield (w.workload,), float(value)

    return samples


def _counts(attr: str) -> Callable[[ProfilingView], Rows]:
    return lambda view: (((name,), count) for name, count in getattr(view, attr))


def _workload(name: str, doc: str, attr: str) -> Family:
    return Family(name, "gauge", doc, ("workload",), _per_workload(attr))


FAMILIES: tuple[Family, ...] = (
    _gauge(
        "npu_step_duration_seconds",
        "Step (graph iteration) time over the captured steps, warm-up excluded.",
        ("workload", "stat"),
        _step,
    ),
    _gauge(
        "npu_step_phase_seconds",
        "Mean time per step in a phase.",
        ("workload", "phase"),
        _phase_seconds,
    ),
    _gauge(
        "npu_step_phase_ratio",
        "Mean share of the step spent in a phase (0..1).",
        ("workload", "phase"),
        _phase_ratio,
    ),
    _gauge(
        "npu_step_captured_steps",
        "Steps the step statistics are over (warm-up and partial edge steps left out).",
        ("workload",),
        _step_count,
    ),
    Family(
        "npu_step_duration_baseline_seconds",
        "gauge",
        "Median of the median step times of the workload's previous judged captures (rolling "
        "window): what the regression gate judges the latest capture's median against.",
        ("workload",),
        _baseline,
    ),
    _workload(
        "npu_step_duration_baseline_band_ratio",
        "Noise band of the regression gate: the relative slowdown of the median step time over "
        "the baseline that counts as a regression, the larger of the configured regression_ratio "
        "and regression_noise_sigmas robust deviations (1.4826 x MAD) of the baseline's medians.",
        "band_ratio",
    ),
    _workload(
        "npu_step_regression_judged",
        "1 when the workload's latest capture was judged by the regression gate, 0 when it could "
        "not vote: fewer steps than regression_min_steps, or a baseline of fewer than "
        "baseline.min_captures judged captures.",
        "judged",
    ),
    _workload(
        "npu_step_regression",
        "1 when the latest judged capture's median step time is above the baseline by more than "
        "the noise band, 0 when within it; absent when the latest capture was not judged.",
        "regressed",
    ),
    _gauge(
        "npu_op_time_ratio",
        "Share of compute operator time of an op type (top N + other): communication "
        "(HCCL) tasks, waits and idle are never operator time, so the share is the same "
        "whichever tables the profile has.",
        ("workload", "op_type", "core_type"),
        _op_ratio,
    ),
    _gauge(
        "npu_core_type_time_ratio",
        "Share of compute operator time by core type (every kind the tables name).",
        ("workload", "core_type"),
        _core_ratio,
    ),
    _gauge(
        "npu_profile_bottleneck",
        "1 for each cause the diagnosis rules found, 0 for the others they judged; absent for "
        "a rule that did not judge the capture (its data cannot support it: the report says "
        "why).",
        ("workload", "kind"),
        _bottlenecks,
    ),
    _gauge(
        "npu_profile_bottleneck_seconds_per_step",
        "Time per step a cause the diagnosis rules found puts at stake (its finding's size: "
        "the phase or operator time it concerns); absent for causes whose time the profile "
        "does not measure, and for causes not found.",
        ("workload", "kind"),
        _bottleneck_size,
    ),
    _gauge(
        "npu_profile_delta_seconds",
        "Change of a part of the step (part_kind phase, op_type, collective or rank) in seconds "
        "per step, latest capture against the workload's reference capture (the newest that "
        f"entered the baseline); the {MAX_DELTAS} largest changes.",
        ("workload", "part_kind", "part"),
        _deltas,
    ),
    _gauge(
        "npu_communication_time_ratio",
        "Communication (HCCL) task time of a collective over the step time of the ranks "
        "whose tasks were read; overlapped time included, so the sum may exceed the "
        "not-overlapped phase.",
        ("workload", "collective"),
        _comm_ratio,
    ),
    _gauge(
        "npu_communication_wait_ratio",
        "Share of communication time spent waiting for peers (communication.json: "
        "wait / (wait + transit)); high with a slow rank.",
        ("workload",),
        _comm_wait,
    ),
    _gauge(
        "npu_communication_link_bandwidth_bytes_per_second",
        "Bytes per second moved over a link type (HCCS, PCIE, RDMA, SDMA, SIO) by "
        "the collectives of the capture.",
        ("workload", "link_type"),
        _link_bandwidth,
    ),
    _gauge(
        "npu_rank_step_duration_seconds",
        "Per rank of the workload on this node: mean step time (stat=mean) and its "
        "computing (graph mode: FP to BP), communication and free parts; the slowest "
        f"ranks are kept, at most {MAX_RANKS}.",
        ("workload", "rank", "stat"),
        _rank_step,
    ),
    Family(
        "npu_workload_info",
        "gauge",
        "1 per workload discovered or captured on this node, with what named it "
        "(workload_source): the launcher's environment (mindx_task_id, torchelastic_run_id, "
        "pet_rdzv_id, master_addr, pet_master_addr, volcano, slurm), the pod, a configured "
        "target, or the process name.",
        ("workload", "workload_source"),
        _workload_info,
    ),
    Family(
        "npu_rank_npu_info",
        "gauge",
        "1 per rank of the workload on this node whose process runs on one chip (the rank from "
        "its launcher's RANK, SLURM_PROCID or LOCAL_RANK): joins npu_rank_step_duration_seconds "
        "on (workload, rank) to the chip's families by npu.",
        ("workload", "rank", "npu"),
        _rank_npu,
    ),
    _gauge(
        "npu_rank_capture_throttled_ratio",
        "Share of the last capture window the rank's chip was clocked down, by reason (thermal, "
        "power, unknown); only ranks throttled at least 5 % of it (absent: not seen).",
        ("workload", "rank", "npu", "reason"),
        _rank_throttled,
    ),
    _gauge(
        "npu_rank_capture_errors",
        "Errors the rank's chip and NIC ports added during the last capture window, by kind "
        "(hbm_ecc, hccs_crc, sio_crc, retransmissions, pfc, cnp, link_flaps); only kinds that "
        "moved (absent: none seen).",
        ("workload", "rank", "npu", "kind"),
        _rank_errors,
    ),
    _workload(
        "npu_profile_capture_inflation_ratio",
        "The last capture's step time over the job's own outside captures, from the job's "
        "training log (profiling.step_log: the median 'elapsed time per iteration' of the "
        "Megatron-LM or MindSpeed lines logged inside the capture window over the median of "
        "those outside it, since the previous capture); absent with too few lines either side.",
        "capture_inflation_ratio",
    ),
    Family(
        "npumon_captures",
        "counter",
        "Profiler captures and ingested profiles since start, by result.",
        ("result",),
        _counts("captures"),
    ),
    _workload(
        "npumon_capture_last_success_timestamp_seconds",
        "Unix time in seconds of the workload's last successful capture (kept across restarts).",
        "last_success_timestamp",
    ),
    _workload(
        "npumon_capture_duration_seconds",
        "Wall time in seconds of the workload's last successful capture, analysis included.",
        "capture_duration_seconds",
    ),
    Family(
        "npumon_step_log_reads",
        "counter",
        "Reads of a captured workload's container log for its capture inflation since start, "
        "by result: ok (a figure), no_pod, no_log, ambiguous, refused, unreadable, no_steps, "
        "too_few_captured, too_few_uncaptured; absent while profiling.step_log is off.",
        ("result",),
        _counts("step_log_reads"),
    ),
    Family(
        "npumon_state_errors",
        "counter",
        "Problems with npumon's state file since start (corrupt, unreadable, write_failed); a "
        "corrupt or unreadable file is moved aside as <name>.corrupt-<time>.",
        ("reason",),
        _counts("state_errors"),
    ),
)
SKIPPED = Family(
    "npumon_profile_render_skipped",
    "gauge",
    "What this scrape left out of the profiling families: whole families that could not be "
    "rendered (reason=family) and NaN or infinite values (reason=non_finite).",
    ("reason",),
    lambda skips: [(("family",), len(skips.families)), (("non_finite",), skips.non_finite)],
)


def _render(family: Family, view: ProfilingView, skips: _Skips) -> list[tuple[Any, float]]:
    """The family's samples, checked; none, and the family counted in ``skips``, when it cannot
    be rendered."""
    try:
        return skips.checked(family, family.samples(view))
    except Exception as exc:  # a family that cannot render is left out, the rest served
        skips.families.append(family.name)
        log.debug(
            "event=profile_family_skipped family=%s error=%r",
            family.name,
            f"{type(exc).__name__}: {exc}",
        )
        return []


def _contained(family: Family) -> Family:
    """``family`` reading the NodeSnapshot, its samples checked; nothing without a view."""

    def samples(snap: NodeSnapshot) -> list[tuple[Any, float]]:
        return [] if snap.profiles is None else _render(family, snap.profiles, _Skips())

    return replace(family, samples=samples)


def _skipped(snap: NodeSnapshot) -> list[tuple[tuple[str], int]]:
    """What a render of ``snap`` leaves out (each family checked once more, on its own)."""
    if snap.profiles is None:
        return []
    skips = _Skips()
    for family in FAMILIES:
        _render(family, snap.profiles, skips)
    return list(SKIPPED.samples(skips))


PROFILES = (*(_contained(f) for f in FAMILIES), replace(SKIPPED, samples=_skipped))


def write(snap: NodeSnapshot, openmetrics: bool) -> list[str]:
    """Step time, phases, operators and diagnoses per workload, then capture self-metrics;
    nothing while profiling has no view.

    npu_step_duration_seconds{workload="llama",stat="p99"} 0.412
    npu_op_time_ratio{workload="llama",op_type="MatMulV3",core_type="ai_core"} 0.31
    npumon_captures_total{result="ok"} 12
    """
    text = write_rows(((f, snap) for f in PROFILES), openmetrics).decode()
    return [text] if text else []
