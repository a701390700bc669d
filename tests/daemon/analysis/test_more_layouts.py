"""MindSpore profiler output, PROF folders never exported and lone timelines (fixtures in
tests/fixtures/msprof/trees, see SOURCES.md); expected values read here with csv."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from analysis_helpers import FIXTURES

from npumon.daemon.analysis.analysis import NoProfileData, analyze_path
from npumon.daemon.model.profile import AnalysisJob, Thresholds, job_adapter, report_adapter
from tests.helpers.wait import scaled

TREES = FIXTURES / "trees"


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("tree", ["mindspore22_run1", "mindspore22_run2"])
def test_mindspore_22_profiler_output(tree: str) -> None:
    """aicore_intermediate_1_type.csv: ms per op type; step_trace_raw_1_detail_time.csv: 10 ns
    ticks per step, a '-' average row, steps of total 0 are none; warm-up steps left out."""
    root = TREES / tree / "profiler"
    types = _csv(root / "aicore_intermediate_1_type.csv")
    kind = "op_type" if "op_type" in types[0] else "kernel_type"
    time = "execution_time" if "execution_time" in types[0] else "total_time"
    total_ms = sum(float(r[time]) for r in types)
    top = max(types, key=lambda r: float(r[time]))
    steps = [
        r
        for r in _csv(root / "step_trace_raw_1_detail_time.csv")
        if r["step_num"].isdigit() and float(r["total"])
    ]
    warm = Thresholds().warmup_steps
    judged = [r for r in steps if int(r["step_num"]) > warm] or steps
    summary = analyze_path(TREES / tree).summary
    assert summary.layout == "mindspore" and summary.mode == "graph"
    assert summary.op_total_seconds == pytest.approx(total_ms / 1e3)
    first = summary.op_time_ratio[0]
    assert (first.op_type, first.core_type) == (top[kind], "ai_core")
    assert first.ratio == pytest.approx(float(top[time]) / total_ms)
    assert first.count == int(top["execution_frequency"])
    assert summary.step is not None and summary.step.count == len(judged)
    assert summary.step.mean_seconds == pytest.approx(
        sum(float(r["total"]) for r in judged) / len(judged) / 1e8
    )
    phases = {p.phase: p.ratio for p in summary.phases}
    iteration = sum(float(r["total"]) for r in judged)
    assert phases["fp_bp"] == pytest.approx(sum(float(r["fp_and_bp"]) for r in judged) / iteration)
    assert phases["iteration_refresh"] == pytest.approx(
        sum(float(r["tail"]) for r in judged) / iteration
    )


def test_mindspore_23_ascend_ms_reads_like_torch_npu(tmp_path: Path) -> None:
    """SYNTHETIC: MindSpore >= 2.3 writes ``rank-N_<host>_<ts>_ascend_ms/ASCEND_PROFILER_OUTPUT``
    with torch_npu's tables; a real torch_npu rank copied under that name."""
    target = tmp_path / "rank-0_host_20250109_ascend_ms"
    shutil.copytree(TREES / "text_level1" / "rank0_ascend_pt", target)
    ours = analyze_path(tmp_path).summary
    torch = analyze_path(TREES / "text_level1" / "rank0_ascend_pt").summary
    assert ours.layout == "mindspore"
    assert ours.op_time_ratio == torch.op_time_ratio
    assert ours.step == torch.step and ours.links == torch.links


def test_prof_folder_never_exported_names_the_command() -> None:
    prof = TREES / "prof_not_exported" / "PROF_000001_20230818142704322_COJGGGCANRMICFBC"
    assert not list(prof.rglob("summary")) and list(prof.glob("device_0/timeline/*.json"))
    for path in (prof, prof.parent):
        with pytest.raises(NoProfileData) as caught:
            analyze_path(path)
        assert f"run `msprof --export=on --output={prof}`" in str(caught.value)


def test_an_unexported_prof_beside_a_readable_one_is_noted(tmp_path: Path) -> None:
    shutil.copytree(TREES / "prof_not_exported", tmp_path / "job")
    shutil.copytree(TREES / "text_level1" / "rank0_ascend_pt", tmp_path / "job" / "rank0_ascend_pt")
    report = analyze_path(tmp_path / "job")
    assert report.summary.op_total_seconds
    (hint,) = [p for p in report.problems if "never exported" in p]
    assert "msprof --export=on --output=" in hint


def test_lone_trace_view_says_what_it_holds(tmp_path: Path) -> None:
    alone = tmp_path / "trace_view.json"
    shutil.copyfile(FIXTURES / "trace_view_torchnpu_2025-01_level1_excerpt.jsonl", alone)
    out = tmp_path / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    shutil.copyfile(alone, out / "trace_view.json")
    for path in (alone, tmp_path / "rank0_ascend_pt"):
        with pytest.raises(NoProfileData) as caught:
            analyze_path(path)
        message = str(caught.value)
        assert "torch_npu timeline" in message and "kernel_details.csv" in message
        assert "torch_npu.profiler.profiler.analyse(" in message


@pytest.mark.integration
@pytest.mark.parametrize(
    "tree", ["db_level0", "db_level1", "mindspore22_run1", "mindspore22_cluster"]
)
def test_ingest_worker_gives_what_analyze_gives(tree: str) -> None:
    """The daemon's ingest runs the analysis worker: the same report as `npumon analyze`."""
    job = AnalysisJob(TREES / tree, "w", 10, Thresholds())
    done = subprocess.run(
        [sys.executable, "-m", "npumon.daemon.analysis.worker"],
        input=job_adapter().dump_json(job),
        capture_output=True,
        timeout=scaled(120),
    )
    assert done.returncode == 0, done.stderr
    report = report_adapter().validate_json(done.stdout)
    assert report == analyze_path(TREES / tree, Thresholds(), 10, "w")
    # mindspore22_run1's operator findings are withheld (not_judged, with why): it travels too
    assert report.summary.bottlenecks or report.summary.not_judged


def test_mindspore_22_op_statistic_wins_and_hccl_raw_is_named(tmp_path: Path) -> None:
    """SYNTHETIC placement: MindSpore copies msprof's op_statistic into profiler/ as
    op_statistic_N.csv (a real torch_npu op_statistic stands in); it is read in preference to
    aicore_intermediate_N_type.csv. An hccl_raw_N.csv with the header of MindInsight's
    cluster_propose/hccl_raw_0.csv and no rows gives no communication figures, and a problem
    line says so (test_mindspore_comm.py reads whole ones)."""
    root = tmp_path / "profiler"
    shutil.copytree(TREES / "mindspore22_run2" / "profiler", root)
    stat = FIXTURES / "op_statistic_torchnpu_2025-01_level1.csv"
    shutil.copyfile(stat, root / "op_statistic_1.csv")
    (root / "hccl_raw_1.csv").write_text(
        "step_num,communication_cost,wait_cost,link_info,communication_operator_cost\n"
    )
    report = analyze_path(tmp_path)
    expected = sum(float(r["Total Time(us)"]) for r in _csv(stat))
    assert report.summary.op_total_seconds == pytest.approx(expected / 1e6)
    assert str(root / "op_statistic_1.csv") in report.sources
    assert not any("aicore_intermediate" in s for s in report.sources)
    (note,) = [p for p in report.problems if "hccl_raw_1.csv" in p]
    assert "no step rows, not read" in note
    assert report.summary.comm_times is None
