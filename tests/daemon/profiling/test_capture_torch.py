"""torch_npu config-file trigger: the job's profiler_config.json written for N steps and
restored after; someone else's pending trigger is left alone; the wait loop on a fake clock."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from profiling_helpers import config_for, exposition, profiler_for, promtool_ok, train_job, value

from npumon.daemon.profiling.capture_torch import CONFIG_FILE, POLL_SECONDS, torch_config_capture
from npumon.daemon.profiling.captureerror import CaptureError
from npumon.daemon.profiling.workloads import Workload
from tests.helpers.wait import scaled


@pytest.mark.integration
def test_torch_npu_config_trigger_end_to_end(tmp_path: Path) -> None:
    config_dir = tmp_path / "job-config"
    config = config_for(
        tmp_path,
        targets=[
            {
                "workload": "torchjob",
                "cmdline": f"--dynamic-config-dir {config_dir}",
                "mode": "torch_npu_config",
                "config_dir": str(config_dir),
            }
        ],
    )
    profiler, recorder = profiler_for(config)
    with train_job(tmp_path, "input_bound", dynamic=False, config_dir=config_dir) as job:
        original = (config_dir / "profiler_config.json").read_bytes()
        (workload,) = profiler.workloads()
        assert workload.name == "torchjob" and workload.pids == (job.pid,)
        outcome = profiler.capture(workload)
        assert outcome.result == "ok", outcome.message
        # the job's config is back as it was: no second capture is triggered
        assert (config_dir / "profiler_config.json").read_bytes() == original
    text = exposition(profiler)
    promtool_ok(text)
    assert value(text, "npu_profile_bottleneck", workload="torchjob", kind="input_pipeline") == 1
    assert value(text, "npu_step_phase_ratio", workload="torchjob", phase="computing")
    assert recorder.calls == [workload.chips, frozenset()]
    (kept,) = (tmp_path / "state" / "captures").iterdir()  # keep_raw "last"
    assert kept.name.startswith("torchjob-")


def test_a_pending_trigger_of_someone_else_is_left_alone(tmp_path: Path) -> None:
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    theirs = json.dumps({"is_valid": True, "prof_dir": "/their/dir", "active": 1}).encode()
    (config_dir / "profiler_config.json").write_bytes(theirs)
    config = config_for(
        tmp_path,
        targets=[
            {
                "workload": "w",
                "cmdline": "x",
                "mode": "torch_npu_config",
                "config_dir": str(config_dir),
            }
        ],
    )
    profiler, _ = profiler_for(config)
    outcome = profiler.capture(
        Workload("w", (os.getpid(),), "torch_npu_config", frozenset(), config_dir=config_dir)
    )
    assert outcome.result == "skipped_busy"
    assert (config_dir / "profiler_config.json").read_bytes() == theirs


class FakeTime:
    """monotonic + wait for torch_config_capture: waiting advances the clock, never sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.on_wait: list[Callable[[], None]] = []

    def monotonic(self) -> float:
        return self.now

    def wait(self, seconds: float) -> None:
        self.now += seconds
        if self.on_wait:
            self.on_wait.pop(0)()


def capture(tmp_path: Path, clock: FakeTime, alive: bool = True) -> Path:
    (tmp_path / "cfg").mkdir(exist_ok=True)  # the job's dynamic_profile.init() dir
    return torch_config_capture(
        tmp_path / "cfg",
        tmp_path / "out",
        [4242],
        steps=2,
        timeout=scaled(30.0),
        wait=clock.wait,
        alive=lambda pid: alive,
        monotonic=clock.monotonic,
    )


def test_the_trigger_returns_the_new_run_once_it_stops_changing(tmp_path: Path) -> None:
    clock = FakeTime()
    run = tmp_path / "out" / "host_4242_20250101_ascend_pt" / "ASCEND_PROFILER_OUTPUT"

    def job_writes() -> None:  # what torch_npu does when it reads the trigger
        trigger = json.loads((tmp_path / "cfg" / CONFIG_FILE).read_text())
        assert trigger["is_valid"] and trigger["active"] == 2
        run.mkdir(parents=True)
        (run / "step_trace_time.csv").write_text("Step,Computing\n")

    clock.on_wait = [lambda: None, job_writes]
    assert capture(tmp_path, clock) == run.parent
    assert clock.now == pytest.approx(3 * POLL_SECONDS)  # written, then unchanged for one poll
    assert json.loads((tmp_path / "cfg" / CONFIG_FILE).read_text())["is_valid"] is False


def test_no_output_within_the_timeout(tmp_path: Path) -> None:
    clock = FakeTime()
    with pytest.raises(CaptureError) as caught:
        capture(tmp_path, clock)
    assert caught.value.result == "timeout" and clock.now >= 30.0


def test_the_job_ending_before_it_wrote_anything(tmp_path: Path) -> None:
    clock = FakeTime()
    with pytest.raises(CaptureError) as caught:
        capture(tmp_path, clock, alive=False)
    assert caught.value.result == "target_exited" and clock.now == 0.0
