"""Profiling state: the rolling baseline of judged captures' medians, restart, a full disk, a
corrupt file, and the format released versions wrote (it must still load; its p99s are left)."""

from __future__ import annotations

import os
import shutil
import statistics
from pathlib import Path

import pytest
from profiling_helpers import (
    config_for,
    exposition,
    profiler_for,
    step_summary,
    summary,
    value,
)

from npumon.daemon.model.profile import AnalysisReport, ProfileSummary, StepStats, Thresholds
from npumon.daemon.profiling import ingest
from npumon.daemon.profiling.capture import CaptureOutcome
from npumon.daemon.profiling.state import STATE_FILE, ProfileState

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "state"


def test_baseline_is_the_median_of_the_window_before_the_latest(tmp_path: Path) -> None:
    # summary() captures have 4 steps: enough to vote here
    four = Thresholds(regression_min_steps=4)
    state = ProfileState(tmp_path, window=3, min_captures=2, thresholds=four)
    assert state.record(summary("w", 1.00), 1.0, 0.5).baseline is None  # nothing before it
    assert state.record(summary("w", 1.20), 2.0, 0.5).baseline is None  # one: too young
    verdict = state.record(summary("w", 0.90), 3.0, 0.5)
    assert verdict.baseline is not None
    assert verdict.baseline.median_seconds == pytest.approx(1.10 * 0.9)  # median(1.0, 1.2) p50s
    # the window slides: 1.00 (the first) drops out -> median(1.2, 0.9, 1.0) of the p50s
    state.record(summary("w", 1.00), 4.0, 0.5)
    verdict = state.record(summary("w", 1.10), 5.0, 0.5)
    assert verdict.baseline is not None
    assert verdict.baseline.median_seconds == pytest.approx(
        statistics.median([1.2, 0.9, 1.0]) * 0.9
    )
    assert verdict.baseline.captures == 3


def test_restart_restores_summaries_and_baseline(tmp_path: Path) -> None:
    config = config_for(
        tmp_path,
        baseline={"captures": 5, "min_captures": 2},
        thresholds={"regression_min_steps": 4},  # summary() has 4 steps
    )
    first, _ = profiler_for(config)
    for index, p99 in enumerate((0.40, 0.44, 0.42, 0.50)):
        report = AnalysisReport(summary("llama", p99), (), ())
        first._record(CaptureOutcome("llama", "ok", "", report, 1.5, 1000.0 + index))
    before = exposition(first)
    second, _ = profiler_for(config)  # a new process reading the same state directory
    after = exposition(second)
    for text in (before, after):
        assert value(text, "npu_step_duration_baseline_seconds", workload="llama") == pytest.approx(
            0.42 * 0.9
        )  # median of the p50s of 0.40, 0.44, 0.42; 0.50 is the one judged
        assert value(text, "npu_step_regression_judged", workload="llama") == 1
        # +19 %, but within the band of a baseline that wanders 5 % (3 x 1.4826 x MAD: 21 %)
        assert value(text, "npu_step_regression", workload="llama") == 0
        band = value(text, "npu_step_duration_baseline_band_ratio", workload="llama")
        assert band == pytest.approx(3 * 1.4826 * 0.018 / 0.378)
        assert value(text, "npu_step_duration_seconds", workload="llama", stat="p50") == 0.45
        # 4 steps: no p90 (needs 10) nor p99 (needs 100) is exported
        assert value(text, "npu_step_duration_seconds", workload="llama", stat="p99") is None
        assert value(text, "npu_step_duration_seconds", workload="llama", stat="p90") is None
        assert (
            value(text, "npumon_capture_last_success_timestamp_seconds", workload="llama") == 1003.0
        )
    # counters are since start: the new process starts from 0
    assert value(after, "npumon_captures_total", result="ok") == 0
    assert value(before, "npumon_captures_total", result="ok") == 4


def test_a_full_disk_is_logged_and_counted(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    profiler, _ = profiler_for(config)
    profiler.state.path = tmp_path / "not-a-dir" / "state.json"
    (tmp_path / "not-a-dir").write_text("a file where the directory should be")
    report = AnalysisReport(summary("w", 0.3), (), ())
    profiler._record(CaptureOutcome("w", "ok", "", report, 1.0, 5.0))
    text = exposition(profiler)
    assert value(text, "npumon_state_errors_total", reason="write_failed") == 1
    assert value(text, "npu_step_duration_seconds", workload="w", stat="p50") == pytest.approx(0.27)


@pytest.mark.parametrize("content", [b"{not json", b'{"version": 99}', b"[]"])
def test_corrupt_state_is_reported_and_ignored(tmp_path: Path, content: bytes) -> None:
    state = tmp_path / "state" / "profiling"
    state.mkdir(parents=True)
    (state / "profiling-state.json").write_bytes(content)
    profiler, _ = profiler_for(config_for(tmp_path))
    text = exposition(profiler)
    assert value(text, "npumon_state_errors_total", reason="corrupt") == 1
    assert profiler.view().workloads == ()


def loaded(tmp_path: Path, name: str) -> ProfileState:
    shutil.copyfile(FIXTURE / name, tmp_path / STATE_FILE)
    state = ProfileState(tmp_path, window=20, min_captures=3)
    state.load()
    return state


def test_state_written_by_0_1_0_still_loads(tmp_path: Path) -> None:
    state = loaded(tmp_path, "profiling-state-v0.1.0.json")
    assert not state.errors
    assert sorted(state.workloads) == ["qwen3", "resnet"]
    qwen = state.workloads["qwen3"]
    # 0.1.0 kept p99s (of 2-step captures): left behind, the baseline starts over from medians
    assert qwen.medians == [] and state.baseline("qwen3") is None
    assert (qwen.last_success, qwen.capture_seconds) == (1764248400.0, 3.25)
    summary = qwen.summary
    assert summary is not None and summary.step is not None
    assert summary.step.p99_seconds == pytest.approx(0.81015034)
    assert [b.kind for b in summary.bottlenecks] == ["communication", "dynamic_shape"]
    assert [r.rank for r in summary.ranks] == ["rank0", "rank1", "rank2", "rank3"]
    assert summary.ranks[0].phases and summary.ranks[0].phases[0].phase == "computing"
    spread = {s.phase: s for s in summary.rank_spread}
    assert spread["computing"].flagged and spread["computing"].slowest_rank == "rank3"
    assert summary.op_time_ratio[0].op_type == "FlashAttentionScoreGrad"
    assert summary.op_time_ratio[-1].op_type == "other"
    resnet = state.workloads["resnet"]
    assert resnet.summary is not None and resnet.summary.step is None
    assert resnet.capture_seconds is None and state.baseline("resnet") is None
    assert [b.kind for b in resnet.summary.bottlenecks] == [
        "format_conversion",
        "ai_cpu_fallback",
        "dynamic_shape",
    ]
    assert state.ingested["/data/prof/llama/node1_1000_2025_ascend_pt"] == 1764240000.25


def test_a_loaded_0_1_0_state_saves_and_loads_unchanged(tmp_path: Path) -> None:
    first = loaded(tmp_path, "profiling-state-v0.1.0.json")
    assert first.save()
    again = ProfileState(tmp_path, window=20, min_captures=3)
    again.load()
    assert not again.errors
    assert again.workloads == first.workloads and again.ingested == first.ingested


def test_ingested_dirs_that_are_gone_are_forgotten(tmp_path: Path) -> None:
    root, unmounted = tmp_path / "prof", tmp_path / "nfs"
    kept, removed = root / "job" / "PROF_1", root / "job" / "PROF_2"
    kept.mkdir(parents=True)
    state = ProfileState(tmp_path / "state")
    state.ingested = {str(kept): 1.0, str(removed): 2.0, str(unmounted / "PROF_3"): 3.0}
    assert state.prune_ingested([root, unmounted]) == 1
    # the unmounted ingest path's entry stays: its profiles are not analysed again on return
    assert state.ingested == {str(kept): 1.0, str(unmounted / "PROF_3"): 3.0}
    assert state.save()
    again = ProfileState(tmp_path / "state")
    again.load()
    assert again.ingested == state.ingested


def test_the_ingested_list_is_bounded_and_what_it_drops_counts_as_ingested(
    tmp_path: Path,
) -> None:
    state = ProfileState(tmp_path, ingested_bytes=2_000)
    state.ingested = {f"/data/prof/job/PROF_{i:04d}": float(i) for i in range(100)}
    assert state.save()
    assert 0 < len(state.ingested) < 100
    assert state.path.stat().st_size < 2_000 + 200
    oldest_kept = min(state.ingested.values())
    again = ProfileState(tmp_path, ingested_bytes=2_000)
    again.load()
    assert again.ingested == state.ingested
    assert again.ingested_before == oldest_kept - 1.0  # the newest of those dropped
    # a dropped (older) dir is not found again; a newer one is
    roots = tmp_path / "prof"
    for name, mtime in (("old", oldest_kept - 5.0), ("new", 1000.0)):
        (roots / name / "PROF_1").mkdir(parents=True)
        (roots / name / "PROF_1" / "f").write_text("x")
        for item in (roots / name / "PROF_1" / "f", roots / name / "PROF_1"):
            os.utime(item, (mtime, mtime))
    found = ingest.find_new([roots], again.ingested, 2000.0, 1.0, again.ingested_before)
    assert [g.workload for g in found] == ["new"]


def _paced(workload: str, median: float) -> ProfileSummary:
    """A capture of 30 steps (enough to vote under the default thresholds) at ``median``."""
    return step_summary(StepStats(30, median, median, median * 1.02, median * 1.05), workload)


def test_a_slowdown_held_past_twice_the_window_stays_a_regression(tmp_path: Path) -> None:
    state = ProfileState(tmp_path, window=5, min_captures=3)
    clock = 0.0
    for _ in range(5):
        clock += 600
        assert state.record(_paced("w", 1.00), clock, 1.0).regressed is not True
    reference = state.reference("w")
    for index in range(12):  # 10 % slower for more than twice the window
        clock += 600
        verdict = state.record(_paced("w", 1.10), clock, 1.0)
        assert verdict.regressed is True, index
        assert verdict.baseline is not None
        assert verdict.baseline.median_seconds == pytest.approx(1.00)  # pinned
    assert state.reference("w") is reference  # the deltas stay against the normal pace
    assert state.workloads["w"].regressed_since == 3600.0
    # a restart keeps the regression
    state.save()
    again = ProfileState(tmp_path, window=5, min_captures=3)
    again.load()
    assert again.verdict("w").regressed is True
    # the job recovers: judged against the same baseline, not slower; the regression ends
    verdict = again.record(_paced("w", 1.01), clock + 600, 1.0)
    assert verdict.judged and verdict.regressed is False
    assert again.workloads["w"].regressed_since is None
    assert again.reference("w") == _paced("w", 1.01)


def test_a_regression_held_for_accept_after_becomes_the_baseline(tmp_path: Path) -> None:
    state = ProfileState(tmp_path, window=5, min_captures=3, accept_after=3000.0)
    for index in range(5):
        state.record(_paced("w", 1.00), 600.0 * index, 1.0)
    slow = [state.record(_paced("w", 1.10), 3000.0 + 600 * i, 1.0) for i in range(6)]
    assert [v.regressed for v in slow[:5]] == [True] * 5
    # 3000 s after the first slow capture: accepted, the slow captures are the baseline
    assert slow[5].regressed is not True
    assert state.workloads["w"].medians == pytest.approx([1.10] * 6)
    assert state.next_baseline("w").median_seconds == pytest.approx(1.10)  # type: ignore[union-attr]
    verdict = state.record(_paced("w", 1.11), 7000.0, 1.0)
    assert verdict.judged and verdict.regressed is False


def test_accept_starts_the_baseline_over_from_the_current_pace(tmp_path: Path) -> None:
    state = ProfileState(tmp_path, window=5, min_captures=2)
    for index in range(3):
        state.record(_paced("w", 1.00), 600.0 * index, 1.0)
    assert state.record(_paced("w", 1.20), 2000.0, 1.0).regressed is True
    assert state.accept("w") and not state.accept("other")
    assert state.verdict("w").regressed is None  # a young baseline: one capture at 1.20
    assert state.record(_paced("w", 1.21), 2600.0, 1.0).regressed is None
    assert state.record(_paced("w", 1.22), 3200.0, 1.0).regressed is False


def test_npumon_baseline_accept_is_taken_at_the_next_pass(tmp_path: Path) -> None:
    from npumon.daemon.cli import main

    config = config_for(tmp_path, baseline={"captures": 5, "min_captures": 2})
    profiler, _ = profiler_for(config)
    for index, median in enumerate((1.00, 1.00, 1.00, 1.30)):
        report = AnalysisReport(_paced("llama", median), (), ())
        profiler._record(CaptureOutcome("llama", "ok", "", report, 1.0, 1000.0 + index))
    assert value(exposition(profiler), "npu_step_regression", workload="llama") == 1
    config_file = tmp_path / "npumon.yaml"
    config_file.write_text(f"state_directory: {tmp_path / 'state'}\n", encoding="utf-8")
    assert main(["baseline", "accept", "llama", "--config", str(config_file)]) == 0
    profiler.tick()
    text = exposition(profiler)
    assert value(text, "npu_step_regression_judged", workload="llama") == 0  # starts over
    assert not list((tmp_path / "state" / "profiling" / "accept").iterdir())  # taken once
    assert main(["baseline", "accept", "../x", "--config", str(config_file)]) == 1
