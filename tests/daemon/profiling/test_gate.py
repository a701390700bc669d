"""The step-time regression gate on synthetic jobs: a capture's median step time against the
median of the judged captures before it, with a noise band from their own spread.

Steps are drawn with a seeded generator (Gaussian noise around the job's pace), as many as a
default torch_npu_config capture keeps (50 active steps). Over 200 seeds, a simulation of this
gate gave: 5 % step noise, 30 steady captures: a false vote in 2.5 % of the runs (a page needs
two in a row); a 5 % regression voted on its first capture in 97.5 % (1 % noise: 100 %)."""

from __future__ import annotations

import logging
import random
from pathlib import Path

import pytest
from profiling_helpers import config_for, exposition, profiler_for, step_summary, value

from npumon.daemon.analysis.readers.steptime import percentile
from npumon.daemon.model.profile import AnalysisReport, StepStats, Thresholds
from npumon.daemon.profiling import gate
from npumon.daemon.profiling.capture import CaptureOutcome
from npumon.daemon.profiling.state import ProfileState

PACE = 0.2  # seconds per step
STEPS = 50  # the default profiling.steps
SEEDS = range(5)


def stats(rng: random.Random, pace: float, noise: float, steps: int = STEPS) -> StepStats:
    seconds = [pace * (1 + rng.gauss(0, noise)) for _ in range(steps)]
    return StepStats(
        steps,
        sum(seconds) / steps,
        percentile(seconds, 50),
        percentile(seconds, 90),
        percentile(seconds, 99),
    )


def steady(tmp_path: Path, rng: random.Random, noise: float, captures: int) -> ProfileState:
    state = ProfileState(tmp_path, window=20, min_captures=5)
    for i in range(captures):
        verdict = state.record(step_summary(stats(rng, PACE, noise)), float(i), 1.0)
        assert verdict.regressed is not True, f"capture {i} flagged at {noise:.0%} noise"
    return state


@pytest.mark.parametrize("noise", [0.01, 0.05])
@pytest.mark.parametrize("seed", SEEDS)
def test_a_steady_job_never_flags(tmp_path: Path, noise: float, seed: int) -> None:
    state = steady(tmp_path, random.Random(seed), noise, 40)
    verdict = state.verdict("w")
    assert verdict.judged and verdict.baseline is not None
    assert verdict.baseline.median_seconds == pytest.approx(PACE, rel=0.01)
    # the band: the 3 % floor, or 3 robust deviations of the medians when they wander more
    assert 0.03 <= verdict.baseline.band_ratio < 0.05


@pytest.mark.parametrize("regression", [0.05, 0.10, 0.20])
@pytest.mark.parametrize("noise", [0.01, 0.05])
@pytest.mark.parametrize("seed", SEEDS)
def test_a_regression_flags(tmp_path: Path, regression: float, noise: float, seed: int) -> None:
    rng = random.Random(seed)
    state = steady(tmp_path, rng, noise, 20)
    slower = PACE * (1 + regression)
    verdicts = [
        state.record(step_summary(stats(rng, slower, noise)), 100.0 + i, 1.0) for i in range(2)
    ]
    assert [v.regressed for v in verdicts] == [True, True]  # two in a row: what pages


def test_a_jobs_own_wander_widens_the_band() -> None:
    """Medians that move 4 % between captures: a 5 % step is within their noise."""
    wandering = [PACE * (1 + d) for d in (-0.04, 0.0, 0.04, -0.04, 0.0, 0.04, 0.0)]
    baseline = gate.baseline_of(wandering, 5, Thresholds())
    assert baseline is not None and baseline.band_ratio == pytest.approx(3 * 1.4826 * 0.04)
    step = StepStats(STEPS, PACE * 1.05, PACE * 1.05, PACE * 1.1, PACE * 1.2)
    assert gate.judge(step, baseline, Thresholds()).regressed is False


def test_a_two_step_capture_does_not_vote(tmp_path: Path) -> None:
    """The issue's case: a constant 0.2 s job whose 2-step capture read +5.1 % (the slower of
    two steps as "p99"): too short to judge, it neither votes nor enters the baseline."""
    state = steady(tmp_path, random.Random(0), 0.01, 10)
    before = list(state.workloads["w"].medians)
    two = StepStats(2, 0.2043, 0.2043, 0.2083, 0.2094)
    verdict = state.record(step_summary(two), 50.0, 1.0)
    assert verdict.status == gate.TOO_SHORT and verdict.steps == 2
    assert verdict.regressed is None and not verdict.judged
    assert state.workloads["w"].medians == before
    assert state.baseline("w") is not None  # the judged captures before it still stand


def test_the_exposition_says_what_the_gate_did(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    profiler, _ = profiler_for(config_for(tmp_path))
    rng = random.Random(1)

    def record(step: StepStats, at: float) -> str:
        report = AnalysisReport(step_summary(step, "llama"), (), ())
        profiler._record(CaptureOutcome("llama", "ok", "", report, 1.0, at))
        return exposition(profiler)

    for i in range(6):
        text = record(stats(rng, PACE, 0.01), float(i))
    assert value(text, "npu_step_regression_judged", workload="llama") == 1
    assert value(text, "npu_step_regression", workload="llama") == 0
    assert value(text, "npu_step_captured_steps", workload="llama") == STEPS
    baseline = value(text, "npu_step_duration_baseline_seconds", workload="llama")
    assert baseline == pytest.approx(PACE, rel=0.01)
    assert value(text, "npu_step_duration_baseline_band_ratio", workload="llama") == 0.03
    with caplog.at_level(logging.INFO, logger="npumon.daemon.profiling.service"):
        text = record(StepStats(2, 0.2043, 0.2043, 0.2083, 0.2094), 10.0)
        assert value(text, "npu_step_regression_judged", workload="llama") == 0
        assert value(text, "npu_step_regression", workload="llama") is None  # no verdict
        assert "event=step_capture_too_short workload=llama steps=2" in caplog.text
        text = record(stats(rng, PACE * 1.10, 0.01), 11.0)
    assert value(text, "npu_step_regression", workload="llama") == 1
    assert "event=step_regression workload=llama" in caplog.text
