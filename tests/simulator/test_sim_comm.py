"""npumon-sim-train's communication.json and profiler_metadata.json: the schema of the real
exports, and the figures `npumon analyze` reads from them are the ones the scenario was built
with."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.analysis.evidence import Evidence
from npumon.daemon.analysis.readers import environment, layout, replicas
from npumon.daemon.analysis.report import format_report
from npumon.daemon.analysis.rules import env_vars
from npumon.daemon.model.profile import ProfilingView, Thresholds, WorkloadProfile
from npumon.daemon.model.snapshot import EMPTY_SNAPSHOT
from npumon.exporters.collector import NpuCollector
from npumon.simulator.prof_dir import CaptureMeta
from npumon.simulator.profiles import PROFILES, simulate
from npumon.simulator.torch_comm import IDLE_SHARE
from npumon.simulator.torch_profile import Plan, write_ascend_pt
from tests.helpers.exposition import samples, value

TREES = Path(__file__).parent.parent / "fixtures" / "msprof" / "trees"
REAL = TREES / "text_level1" / "rank0_ascend_pt"
OUT = "ASCEND_PROFILER_OUTPUT"


def capture(tmp: Path, kind: str, step_seconds: float = 0.5, **kwargs: Any) -> Path:
    steps = simulate(
        kind, first_step=10, steps=4, step_seconds=step_seconds, start_seconds=1.7e9, seed=3
    )
    meta = CaptureMeta(kind, 99, 2, step_seconds, 1.7e9, 1.7e9 + 4 * step_seconds, 10, 4, 3)
    return write_ascend_pt(
        Plan(10, 4, tmp, True, {}), steps, meta, kwargs.pop("rank", 0), "node", **kwargs
    )


def _keys(data: dict[str, Any]) -> dict[str, Any]:
    """The nested key structure of one step (op names and sizes reduced to placeholders)."""
    (step,) = list(data.values())[:1]
    shape: dict[str, Any] = {"steps": set(step)}
    ops = step["collective"]
    name = next(n for n in ops if n != "Total Op Info")
    for label, op in (("op", ops[name]), ("total", ops["Total Op Info"])):
        shape[label] = set(op)
        shape[f"{label} time"] = list(op["Communication Time Info"])
        links = op["Communication Bandwidth Info"]
        shape[f"{label} links"] = set(links)
        shape[f"{label} link keys"] = {k: set(v) for k, v in links.items()}
    return shape


def test_communication_json_has_the_real_exports_schema(tmp_path: Path) -> None:
    ours = json.loads((capture(tmp_path, "balanced") / OUT / "communication.json").read_text())
    real = json.loads((REAL / OUT / "communication.json").read_text())
    assert _keys(ours) == _keys(real)
    assert list(ours) == ["step10", "step11", "step12", "step13"]


@pytest.mark.parametrize("kind", ["balanced", "communication_bound", "slow_link"])
def test_analysis_reads_the_scenarios_communication(tmp_path: Path, kind: str) -> None:
    """Wait share, HCCS bandwidth and collective time as the scenario set them; slow_link only
    where the HCCS bandwidth is under 60 % of the expected 18 GB/s."""
    profile = PROFILES[kind]
    run = capture(tmp_path, kind)
    summary = analyze_path(run).summary
    times = summary.comm_times
    assert times is not None
    # every all-reduce task of kernel_details.csv is one collective of communication.json
    with (run / OUT / "kernel_details.csv").open() as handle:
        hcom_us = sum(
            float(row["Duration(us)"])
            for row in csv.DictReader(handle)
            if row["Type"] == "hcom_allReduce_"
        )
    assert times.elapse_seconds == pytest.approx(hcom_us / 1e6, rel=1e-6)
    # the step table's not-overlapped communication: the collective minus its overlapped 30 %
    communication = next(p for p in summary.phases if p.phase == "communication")
    assert times.elapse_seconds / 4 == pytest.approx(communication.seconds * 1.3, rel=1e-3)
    assert times.wait_seconds == pytest.approx(times.elapse_seconds * profile.comm_wait)
    assert times.idle_seconds == pytest.approx(times.elapse_seconds * IDLE_SHARE, rel=1e-3)
    wait_ratio = profile.comm_wait / (1 - IDLE_SHARE)
    assert times.wait_seconds / (times.wait_seconds + times.transit_seconds) == pytest.approx(
        wait_ratio, rel=1e-4
    )
    links = {link.link_type: link for link in summary.links}
    assert set(links) == {"HCCS", "SDMA"}  # a one-node job: nothing over RDMA or PCIe
    hccs = links["HCCS"]
    assert hccs.bandwidth_bytes_per_second == pytest.approx(profile.hccs_gbps * 1e9)
    assert hccs.transit_seconds == pytest.approx(times.transit_seconds)
    found = {b.kind for b in summary.bottlenecks}
    assert ("slow_link" in found) == (kind == "slow_link")
    assert not found & {"small_packets", "env_vars", "slow_rank"}


def test_slow_link_names_hccs_and_its_share_of_the_expected_bandwidth(tmp_path: Path) -> None:
    summary = analyze_path(capture(tmp_path, "slow_link")).summary
    (slow,) = [b for b in summary.bottlenecks if b.kind == "slow_link"]
    assert slow.value == pytest.approx(3.0 / 18.0)
    assert slow.threshold == Thresholds().slow_link_ratio
    assert (
        slow.detail.startswith("HCCS moved ")
        and "at 3.0 GB/s, 17% of the expected 18 GB/s" in slow.detail
    )
    assert {"communication", "slow_link"} <= {b.kind for b in summary.bottlenecks}


def test_balanced_job_is_in_the_attention_tier_without_a_finding(tmp_path: Path) -> None:
    """The balanced job moves data 7.7 % of the step (5-20 %: the checklist's attention tier)
    with 7 % exposed: the report states the tier, no rule fires."""
    report = analyze_path(capture(tmp_path, "balanced"))
    ratio = report.summary.comm_transfer_ratio
    assert ratio is not None and 0.05 < ratio <= 0.20
    assert report.summary.bottlenecks == ()
    assert f"is {ratio:.1%} of the step (attention: checklist > 5% attention" in format_report(
        report
    )


def test_the_exporter_serves_the_simulated_link_bandwidth_and_wait(tmp_path: Path) -> None:
    summary = replace(analyze_path(capture(tmp_path, "slow_link")).summary, workload="train")
    view = ProfilingView(workloads=(WorkloadProfile("train", summary),))
    snap = replace(EMPTY_SNAPSHOT, profiles=view)
    found = samples(NpuCollector(lambda: snap, "test").exposition())
    link = "npu_communication_link_bandwidth_bytes_per_second"
    assert value(found, link, workload="train", link_type="HCCS") == pytest.approx(3e9)
    assert value(found, link, workload="train", link_type="SDMA") == pytest.approx(3e9)
    assert value(found, link, workload="train", link_type="RDMA") is None
    assert value(found, "npu_communication_wait_ratio", workload="train") == pytest.approx(
        0.10 / 0.95, rel=1e-4
    )
    assert value(found, "npu_profile_bottleneck", workload="train", kind="slow_link") == 1


def test_small_steps_move_small_packets(tmp_path: Path) -> None:
    """The volume follows the step: a 5 ms step's all-reduce moves about 8 MB over SDMA, under
    the 16 MB msprof-analyze's packet rule calls small; a 50 ms step's (the fleet test's) 77 MB."""
    small = analyze_path(capture(tmp_path / "small", "balanced", step_seconds=0.005)).summary
    assert "small_packets" in {b.kind for b in small.bottlenecks}
    fleet = analyze_path(capture(tmp_path / "fleet", "balanced", step_seconds=0.05)).summary
    assert "small_packets" not in {b.kind for b in fleet.bottlenecks}


def test_metadata_holds_the_data_parallel_group_and_the_environment(tmp_path: Path) -> None:
    run = capture(
        tmp_path,
        "balanced",
        rank=2,
        world_size=4,
        environ={"ASCEND_LAUNCH_BLOCKING": "1", "UNRELATED": "x"},
    )
    assert replicas.dp_ranks(layout.metadata(run)) == (0, 1, 2, 3)
    env = environment.recorded(layout.metadata(run))
    assert env is not None and set(env) == set(
        json.loads(
            (TREES / "pp2dp2_level2" / "rank_2_ascend_pt" / "profiler_metadata.json").read_text()
        )["ENV_VARIABLES"]
    )
    assert env["ASCEND_LAUNCH_BLOCKING"] == "1" and env["ACLNN_CACHE_LIMIT"] == "100000"
    (finding,) = env_vars.judge(Evidence(env=(("rank2", env),)), Thresholds())
    assert "ASCEND_LAUNCH_BLOCKING=1" in finding.detail and finding.value == 1.0
    assert analyze_path(run).summary.ranks[0].rank == "rank2"


def test_default_environment_is_the_recommended_one(tmp_path: Path) -> None:
    env = environment.recorded(layout.metadata(capture(tmp_path, "balanced")))
    assert env is not None
    assert env_vars.judge(Evidence(env=(("rank0", env),)), Thresholds()) == ()
    assert replicas.dp_ranks(layout.metadata(capture(tmp_path / "one", "balanced"))) == (0,)
