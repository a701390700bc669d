"""msprof attach lasts long enough for the regression gate's steps at the job's own pace: a job
of 2 s steps and one of 10 s steps are judged with the shipped settings."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from profiling_helpers import config_for, profiler_for, train_job, worker_in_process

from npumon.daemon.config import ConfigError, load_config, parse_config
from npumon.daemon.model.profile import StepStats, Thresholds
from npumon.daemon.profiling.capture_msprof import attach_duration
from npumon.daemon.profiling.gate import JUDGED, TOO_SHORT
from npumon.daemon.profiling.workloads import Workload
from npumon.simulator.msprof import CLOCK_ENV

SHIPPED = Path(__file__).resolve().parents[3] / "config" / "npumon.yaml"


def _step(median: float, count: int = 3) -> StepStats:
    return StepStats(count, median, median, median, median)


def test_the_duration_follows_the_previous_captures_pace() -> None:
    t = Thresholds(regression_min_steps=20)
    assert attach_duration(None, None, 5.0, 300.0, t) == 5.0  # first capture: the configured one
    # 2 s steps: 20 counted + 2 edge steps, with 25 % to spare
    assert attach_duration(_step(2.0), 5.0, 5.0, 300.0, t) == pytest.approx(2.0 * 22 * 1.25)
    assert attach_duration(_step(10.0), 5.0, 5.0, 300.0, t) == pytest.approx(275.0)
    assert attach_duration(_step(60.0), 5.0, 5.0, 300.0, t) == 300.0  # bounded
    assert attach_duration(_step(0.01), 5.0, 5.0, 300.0, t) == 5.0  # never under the first
    # no whole step seen: the steps are longer than the capture; the next is 4x longer
    assert attach_duration(None, 5.0, 5.0, 300.0, t) == 20.0
    assert attach_duration(StepStats(0, 0, 0, 0, 0), 200.0, 5.0, 300.0, t) == 300.0


def test_max_duration_under_duration_is_refused() -> None:
    with pytest.raises(ConfigError, match="max_duration"):
        parse_config({"profiling": {"duration": "10m", "max_duration": "5m"}})


@pytest.mark.parametrize("step_seconds", ["2", "10"])
def test_a_job_of_long_steps_is_judged_with_the_shipped_durations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step_seconds: str
) -> None:
    shipped = load_config(SHIPPED).profiling
    assert shipped.thresholds.regression_min_steps == 20
    clock = tmp_path / "clock"
    clock.write_text(repr(time.time()))
    monkeypatch.setenv(CLOCK_ENV, str(clock))  # the simulated msprof's time: advanced by wait

    def wait(seconds: float) -> None:
        clock.write_text(repr(float(clock.read_text()) + seconds))

    config = config_for(
        tmp_path,
        duration=f"{shipped.duration}s",
        max_duration=f"{shipped.max_duration}s",
        baseline={"min_captures": 1},
    )
    profiler, _ = profiler_for(config, wait=wait, runner=worker_in_process)
    statuses = []
    with train_job(tmp_path, "balanced", step_seconds=step_seconds) as job:
        workload = Workload("trainer", (job.pid,), "msprof_attach", frozenset())
        for _ in range(4):
            outcome = profiler.capture(workload)
            assert outcome.result == "ok", outcome.message
            statuses.append(profiler.state.verdict("trainer").status)
            if statuses[-1] == JUDGED:
                break
    # the first capture (5 s) is too short for steps this long; the ones after it are not
    assert statuses[0] == TOO_SHORT
    assert statuses[-1] == JUDGED and len(statuses) <= 4, statuses
    # the judged capture says what changed against the one before it (the reference)
    assert outcome.report is not None and outcome.report.comparison is not None
    assert {d.part_kind for d in outcome.report.comparison.deltas} >= {"phase", "op_type"}
    step = profiler.state.workloads["trainer"].summary.step  # type: ignore[union-attr]
    assert step is not None and step.count >= 20
    assert step.p50_seconds == pytest.approx(float(step_seconds), rel=0.1)
