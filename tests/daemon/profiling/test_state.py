"""Profiling state: the rolling p99 baseline, restart, a full disk, a corrupt file, and the format
released versions wrote (it must still load, with its baselines)."""

from __future__ import annotations

import shutil
import statistics
from pathlib import Path

import pytest
from profiling_helpers import config_for, exposition, profiler_for, summary, value

from npumon.daemon.model.profile import AnalysisReport, Thresholds
from npumon.daemon.profiling.capture import CaptureOutcome
from npumon.daemon.profiling.state import STATE_FILE, ProfileState, is_regression

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "state"


def test_baseline_is_the_median_of_the_window_before_the_latest(tmp_path: Path) -> None:
    state = ProfileState(tmp_path, window=3, min_captures=2)
    assert state.record(summary("w", 1.00), 1.0, 0.5) is None  # nothing before it
    assert state.record(summary("w", 1.20), 2.0, 0.5) is None  # one capture: too young
    assert state.record(summary("w", 0.90), 3.0, 0.5) == pytest.approx(1.10)  # median(1.0,1.2)
    assert state.record(summary("w", 1.00), 4.0, 0.5) == pytest.approx(1.00)  # (1.0,1.2,0.9)
    # the window slides: 1.00 (the first) drops out -> median(1.2, 0.9, 1.0)
    baseline = state.record(summary("w", 1.10), 5.0, 0.5)
    assert baseline == pytest.approx(statistics.median([1.2, 0.9, 1.0]))
    t = Thresholds()
    assert is_regression(1.10, baseline, t)  # 10 % above the median 1.0
    assert not is_regression(1.04, baseline, t)
    assert is_regression(1.051, 1.0, t) and not is_regression(1.049, 1.0, t)


def test_regression() -> None:
    assert is_regression(1.06, 1.0)
    assert not is_regression(1.05, 1.0)
    assert not is_regression(2.0, None)


def test_regression_uses_the_configured_ratio(tmp_path: Path) -> None:
    t = config_for(tmp_path, thresholds={"regression_ratio": 0.2}).profiling.thresholds
    assert t == Thresholds(regression_ratio=0.2)
    assert not is_regression(1.19, 1.0, t) and is_regression(1.21, 1.0, t)


def test_restart_restores_summaries_and_baseline(tmp_path: Path) -> None:
    config = config_for(tmp_path, baseline={"captures": 5, "min_captures": 2})
    first, _ = profiler_for(config)
    for index, p99 in enumerate((0.40, 0.44, 0.42, 0.50)):
        report = AnalysisReport(summary("llama", p99), (), ())
        first._record(CaptureOutcome("llama", "ok", "", report, 1.5, 1000.0 + index))
    before = exposition(first)
    second, _ = profiler_for(config)  # a new process reading the same state directory
    after = exposition(second)
    for text in (before, after):
        assert value(text, "npu_step_duration_baseline_seconds", workload="llama") == pytest.approx(
            0.42
        )  # median(0.40, 0.44, 0.42); 0.50 is the one judged
        assert value(text, "npu_step_duration_seconds", workload="llama", stat="p99") == 0.50
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
    assert value(text, "npu_step_duration_seconds", workload="w", stat="p99") == 0.3


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
    assert qwen.p99s == [0.40, 0.44, 0.42, 0.41, pytest.approx(0.81015034)]
    assert state.baseline("qwen3") == pytest.approx(0.415)  # the latest p99 is judged, not used
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
