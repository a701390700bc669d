"""The profiles collector cannot break a scrape: a mistyped or non-finite value in a profile
summary costs that family (counted), never the exposition, /metrics or /healthz."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from npumon.daemon.model.profile import (
    OpShare,
    ProfileSummary,
    ProfilingView,
    StepStats,
    WorkloadProfile,
)
from npumon.daemon.model.rank_hardware import RankHardware
from npumon.daemon.model.snapshot import EMPTY_SNAPSHOT, NodeSnapshot
from npumon.daemon.rendercache import RenderCache
from npumon.exporters.collector import NpuCollector
from npumon.exporters.web.http import serve
from tests.helpers.exposition import names, samples, value
from tests.helpers.http import get

STEP = StepStats(100, 0.3, 0.3, 0.31, 0.32)  # enough steps for every percentile
GOOD = ProfileSummary(
    workload="llama",
    layout="torch_npu",
    capture_time_seconds=None,
    step=STEP,
    phases=(),
    op_total_seconds=1.0,
    op_time_ratio=(OpShare("MatMul", "ai_core", 0.5, 0.5, 3),),
    core_type_time_ratio=(),
    ai_cpu_seconds=None,
    ai_cpu_count=None,
    format_conversion_seconds=None,
    format_conversion_ratio=None,
    dynamic_shape_op_count=None,
    op_types_inferred=False,
    ranks=(),
    rank_spread=(),
    bottlenecks=(),
)


def snapshot(summary: ProfileSummary, **profile: Any) -> NodeSnapshot:
    view = ProfilingView(workloads=(WorkloadProfile("llama", summary, **profile),))
    return replace(EMPTY_SNAPSHOT, profiles=view)


def scrape(snap: NodeSnapshot) -> str:
    return NpuCollector(lambda: snap, "test").exposition().decode()


# what a bug or a state file read without validation could put in a summary
MISTYPED = {
    "step time as text": replace(GOOD, step=replace(STEP, p99_seconds="0.5")),  # type: ignore[arg-type]
    "op type as a number": replace(GOOD, op_time_ratio=(OpShare(7, "ai_core", 0.5, 0.5, 3),)),  # type: ignore[arg-type]
    "ratio as None": replace(GOOD, op_time_ratio=(OpShare("MatMul", "ai_core", 0.5, None, 3),)),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("summary", MISTYPED.values(), ids=MISTYPED.keys())
def test_a_mistyped_summary_costs_one_family_not_the_scrape(summary: ProfileSummary) -> None:
    found = samples(scrape(snapshot(summary, baseline_seconds=0.3)))
    assert value(found, "npumon_scrape_collector_success", collector="profiles") == 1
    assert value(found, "npumon_profile_render_skipped", reason="family") == 1
    assert value(found, "npu_step_duration_baseline_seconds", workload="llama") == 0.3
    assert value(found, "npumon_captures_total", result="ok") == 0


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_inf_are_never_samples(bad: float) -> None:
    summary = replace(GOOD, step=replace(STEP, p99_seconds=bad))
    found = samples(scrape(snapshot(summary, baseline_seconds=bad, last_success_timestamp=bad)))
    assert all(math.isfinite(v) for v in found.values())
    assert value(found, "npu_step_duration_seconds", workload="llama", stat="p99") is None
    assert value(found, "npu_step_duration_seconds", workload="llama", stat="p50") == 0.3
    assert value(found, "npumon_profile_render_skipped", reason="non_finite") == 3
    assert value(found, "npumon_profile_render_skipped", reason="family") == 0


def test_no_percentile_of_fewer_steps_than_it_needs() -> None:
    found = samples(scrape(snapshot(replace(GOOD, step=replace(STEP, count=9)))))
    assert value(found, "npu_step_duration_seconds", workload="llama", stat="p50") == 0.3
    assert value(found, "npu_step_duration_seconds", workload="llama", stat="mean") == 0.3
    assert value(found, "npu_step_duration_seconds", workload="llama", stat="p90") is None
    assert value(found, "npu_step_duration_seconds", workload="llama", stat="p99") is None
    found = samples(scrape(snapshot(replace(GOOD, step=replace(STEP, count=10)))))
    assert value(found, "npu_step_duration_seconds", workload="llama", stat="p90") == 0.31
    assert value(found, "npu_step_duration_seconds", workload="llama", stat="p99") is None


def test_a_clean_view_skips_nothing() -> None:
    found = samples(scrape(snapshot(GOOD)))
    assert value(found, "npumon_profile_render_skipped", reason="family") == 0
    assert value(found, "npumon_profile_render_skipped", reason="non_finite") == 0
    assert (
        value(found, "npu_op_time_ratio", workload="llama", op_type="MatMul", core_type="ai_core")
        == 0.5
    )


@pytest.mark.integration
def test_a_mistyped_summary_never_makes_metrics_a_500_over_http() -> None:
    snap = snapshot(MISTYPED["op type as a number"], last_success_timestamp=math.nan)
    exposition = RenderCache(
        NpuCollector(lambda: snap, "test").exposition, CollectorRegistry(), lambda: snap
    )
    server = serve(exposition, "127.0.0.1:0", None, lambda: True)
    try:
        base = f"http://127.0.0.1:{server.port}"
        found = samples(get(f"{base}/metrics"))  # urlopen raises on a 500
        get(f"{base}/healthz")
    finally:
        server.shutdown()
    assert value(found, "npumon_scrape_collector_success", collector="profiles") == 1
    assert value(found, "npu_step_duration_seconds", workload="llama", stat="p99") == 0.32
    assert value(found, "npumon_profile_render_skipped", reason="family") == 1
    assert value(found, "npumon_profile_render_skipped", reason="non_finite") == 1


def test_ranks_and_communication_families_from_a_real_export() -> None:
    """The PP2 x DP2 export's analysis, rendered: per-rank step figures in their own family,
    communication apart, the new kinds present."""
    from pathlib import Path

    from npumon.daemon.analysis.analysis import analyze_path

    tree = Path(__file__).resolve().parents[1] / "fixtures" / "msprof" / "trees"
    summary = replace(analyze_path(tree / "pp2dp2_level2").summary, workload="llama")
    found = samples(scrape(snapshot(summary)))
    rank2 = next(r for r in summary.ranks if r.rank == "rank2")
    assert value(
        found, "npu_rank_step_duration_seconds", workload="llama", rank="rank2", stat="mean"
    ) == pytest.approx(rank2.step_seconds)
    computing = next(p.seconds for p in rank2.phases if p.phase == "computing")
    assert value(
        found, "npu_rank_step_duration_seconds", workload="llama", rank="rank2", stat="computing"
    ) == pytest.approx(computing)
    assert value(found, "npu_profile_bottleneck", workload="llama", kind="pipeline_imbalance") == 1
    assert value(found, "npu_profile_bottleneck", workload="llama", kind="slow_rank") == 0
    hccs = next(x for x in summary.links if x.link_type == "HCCS")
    assert value(
        found,
        "npu_communication_link_bandwidth_bytes_per_second",
        workload="llama",
        link_type="HCCS",
    ) == pytest.approx(hccs.bandwidth_bytes_per_second)
    level1 = replace(analyze_path(tree / "text_level1").summary, workload="llama")
    found = samples(scrape(snapshot(level1)))
    assert value(
        found, "npu_communication_time_ratio", workload="llama", collective="all_reduce"
    ) == pytest.approx(level1.communication[0].ratio)
    times = level1.comm_times
    assert times is not None
    assert value(found, "npu_communication_wait_ratio", workload="llama") == pytest.approx(
        times.wait_seconds / (times.wait_seconds + times.transit_seconds)
    )


def test_sizes_and_the_largest_deltas_are_exported() -> None:
    from npumon.daemon.model.profile import Bottleneck, Comparison, FindingSize, PartDelta

    sized = Bottleneck("communication", "d", "a", 0.4, 0.2, FindingSize(0.12, 0.4, "how"))
    unmeasured = Bottleneck("env_vars", "d", "a", 1.0, 0.0, FindingSize(None, None, "how"))
    summary = replace(GOOD, bottlenecks=(sized, unmeasured))
    deltas = tuple(PartDelta("op_type", f"Op{i}", 0.01 * (7 - i), 0.1) for i in range(7))
    found = samples(scrape(snapshot(summary, comparison=Comparison(None, None, 0.1, deltas))))
    name = "npu_profile_bottleneck_seconds_per_step"
    assert value(found, name, workload="llama", kind="communication") == 0.12
    assert value(found, name, workload="llama", kind="env_vars") is None
    assert value(found, "npu_profile_bottleneck", workload="llama", kind="env_vars") == 1
    exported = {
        labels: v for labels, v in found.items() if labels[0] == "npu_profile_delta_seconds"
    }
    assert len(exported) == 5  # the five largest of seven
    assert value(
        found, "npu_profile_delta_seconds", workload="llama", part_kind="op_type", part="Op0"
    ) == pytest.approx(0.07)
    assert (
        value(found, "npu_profile_delta_seconds", workload="llama", part_kind="op_type", part="Op5")
        is None
    )


def test_the_workload_says_what_named_it_and_its_ranks_their_chips() -> None:
    found = samples(scrape(snapshot(GOOD, source="master_addr", rank_npus=((8, 0), (9, 5)))))
    assert value(found, "npu_workload_info", workload="llama", workload_source="master_addr") == 1
    assert value(found, "npu_rank_npu_info", workload="llama", rank="rank9", npu="5") == 1
    assert sorted(dict(k[1])["rank"] for k in found if k[0] == "npu_rank_npu_info") == [
        "rank8",
        "rank9",
    ]
    assert "npu_workload_info" not in names(samples(scrape(snapshot(GOOD))))  # not discovered yet


def test_a_ranks_hardware_in_the_window_is_served_only_where_something_moved() -> None:
    seen = RankHardware(37, 5, 0, 10, 0.31, "power", errors=(("retransmissions", 1200),))
    quiet = RankHardware(3, 2, 0, 10, 0.0)
    found = samples(scrape(snapshot(GOOD, hardware=(seen, quiet))))
    labels = {"workload": "llama", "rank": "rank37", "npu": "5"}
    assert value(found, "npu_rank_capture_throttled_ratio", **labels, reason="power") == 0.31
    assert value(found, "npu_rank_capture_errors", **labels, kind="retransmissions") == 1200
    assert [k for k in found if dict(k[1]).get("rank") == "rank3"] == []


def test_a_rule_that_did_not_judge_exports_no_bottleneck_value() -> None:
    """Withheld (summary.not_judged): neither 1 (found) nor 0 (judged and cleared)."""
    from npumon.daemon.model.profile import NotJudged

    withheld = NotJudged("compute_bound", "the operator table covers 0.0091% of compute")
    found = samples(scrape(snapshot(replace(GOOD, not_judged=(withheld,)))))
    assert value(found, "npu_profile_bottleneck", workload="llama", kind="compute_bound") is None
    assert value(found, "npu_profile_bottleneck", workload="llama", kind="small_ops") == 0
