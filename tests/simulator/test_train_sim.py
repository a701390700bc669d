"""`npumon-sim-train`: lifecycle, the torch_npu config-file trigger, and what its profiles show."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.profiling import steplog
from npumon.simulator.attach import socket_path, tell, told
from npumon.simulator.prof_dir import CaptureMeta
from npumon.simulator.profiles import simulate
from npumon.simulator.torch_profile import Plan, plan_from, write_ascend_pt
from tests.helpers.wait import scaled, wait_for
from tests.simulator.simjobs import DIAGNOSES, TRAIN, child_env, train_job

FIXTURES = Path(__file__).parent.parent / "fixtures" / "msprof"


def _config(prof_dir: Path, active: int, **extra: object) -> dict[str, object]:
    return {
        "activities": ["CPU", "NPU"],
        "prof_dir": str(prof_dir),
        "analyse": True,
        "active": active,
        "start_step": 0,
        "warmup": 0,
        "is_rank": False,
        "rank_list": [],
        "experimental_config": {"profiler_level": "Level1"},
        "is_valid": True,
        **extra,
    }


def _parses(path: Path) -> bool:
    try:
        json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return False
    return True


def _write(path: Path, text: str) -> None:
    """Replace atomically, as a careful writer (the daemon) does."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)


@pytest.mark.integration
def test_config_file_trigger_writes_a_finished_profile(tmp_path: Path) -> None:
    config_dir, out, log = tmp_path / "cfg", tmp_path / "out", tmp_path / "train.err"
    with train_job(
        tmp_path,
        "--profile",
        "communication_bound",
        "--step-seconds",
        "0.05",
        "--dynamic-config-dir",
        str(config_dir),
        dynamic=False,
        stderr=log,
    ) as job:
        config = config_dir / "profiler_config.json"
        # the simulated job writes the template in place: it may be seen half-written
        wait_for(lambda: _parses(config), what="the template config dynamic_profile.init writes")
        assert json.loads(config.read_text())["is_valid"] is False
        _write(config, "{not json")
        wait_for(lambda: "ignoring" in log.read_text(), what="the invalid config to be logged")
        # from step 3 at the earliest: the analysis counts steps <= warmup_steps (2) as warm-up
        _write(config, json.dumps(_config(out, active=3, start_step=3)))
        wait_for(lambda: any(out.glob("*_ascend_pt/ASCEND_PROFILER_OUTPUT")), what="the profile")
        assert job.poll() is None  # the bad config did not kill it
    assert job.returncode == 0
    (run,) = out.glob("*_ascend_pt")
    host, pid, stamp, _, _ = run.name.rsplit("_", 4)
    assert pid == str(job.pid) and len(stamp) == 17 and host
    assert not list(out.glob(".*"))  # no temp dir left behind
    tables = run / "ASCEND_PROFILER_OUTPUT"
    assert sorted(p.name for p in tables.iterdir()) == [
        "communication.json",
        "kernel_details.csv",
        "op_statistic.csv",
        "step_trace_time.csv",
        "trace_view.json",
    ]
    assert (run / "profiler_metadata.json").is_file()
    info = json.loads((run / "profiler_info.json").read_text())
    assert info["cann_version"] == "8.3.RC1"
    report = analyze_path(run)
    assert report.summary.layout == "torch_npu"
    assert report.summary.step is not None and report.summary.step.count == 3
    assert "communication" in {b.kind for b in report.summary.bottlenecks}


@pytest.mark.parametrize("kind", sorted(DIAGNOSES))
def test_each_workload_shows_its_diagnosis(tmp_path: Path, kind: str) -> None:
    steps = simulate(kind, first_step=10, steps=4, step_seconds=0.5, start_seconds=1.7e9, seed=3)
    meta = CaptureMeta(kind, 99, 2, 0.5, 1.7e9, 1.7e9 + 2, 10, 4, 3)
    run = write_ascend_pt(Plan(10, 4, tmp_path, True, {}), steps, meta, 0, "node")
    assert run.name == "node_99_" + run.name.split("_")[2] + "_ascend_pt"
    report = analyze_path(run)
    found = {b.kind for b in report.summary.bottlenecks}
    assert found & set().union(*DIAGNOSES.values()) == DIAGNOSES[kind]
    if kind == "balanced":
        assert found == set()
    (rank,) = report.summary.ranks
    assert rank.rank == "rank0" and rank.device_id == 2 and rank.steps == 4


@pytest.mark.parametrize("table", ["kernel_details", "op_statistic", "step_trace_time"])
def test_headers_are_the_real_cann8_ones(tmp_path: Path, table: str) -> None:
    steps = simulate("balanced", 1, 2, 0.1, 1.7e9, seed=1)
    meta = CaptureMeta("balanced", 1, 0, 0.1, 1.7e9, 1.7e9 + 0.2, 1, 2, 1)
    run = write_ascend_pt(Plan(1, 2, tmp_path, True, {}), steps, meta, None, "h")
    real = next(FIXTURES.glob(f"{table}_torchnpu_cann8.3rc1*.csv"))
    ours = run / "ASCEND_PROFILER_OUTPUT" / f"{table}.csv"
    assert ours.read_text().splitlines()[0] == real.read_text().splitlines()[0]


def test_analyse_false_leaves_only_raw_data(tmp_path: Path) -> None:
    steps = simulate("balanced", 1, 2, 0.1, 1.7e9, seed=1)
    meta = CaptureMeta("balanced", 1, 0, 0.1, 1.7e9, 1.7e9 + 0.2, 1, 2, 1)
    run = write_ascend_pt(Plan(1, 2, tmp_path, False, {}), steps, meta, None, "h")
    assert not (run / "ASCEND_PROFILER_OUTPUT").exists()
    assert len(list(run.glob("PROF_*/device_0"))) == 1


def test_plan_from_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    plan = plan_from({"is_valid": True, "start_step": 5, "active": 2, "prof_dir": "p"}, 9, 0)
    assert plan is not None and (plan.first_step, plan.last_step) == (10, 11)  # 5 is past
    assert plan.prof_dir == tmp_path / "p"  # relative to the job's cwd, not to the json
    later = plan_from({"is_valid": True, "start_step": 20, "active": 1}, 9, 0)
    assert later is not None and later.first_step == 20 and later.prof_dir == tmp_path
    assert plan_from({"is_valid": False, "active": 2}, 9, 0) is None
    assert plan_from({"is_valid": True, "is_rank": True, "rank_list": [1]}, 9, 0) is None
    with pytest.raises(ValueError, match="active"):
        plan_from({"is_valid": True, "active": "2"}, 9, 0)


@pytest.mark.integration
def test_sigterm_exits_zero_and_removes_the_socket_marker(tmp_path: Path) -> None:
    with train_job(tmp_path, "--profile", "balanced", "--step-seconds", "600") as job:
        marker = tmp_path / f"dynamic_profiling_socket_{job.pid}"
        wait_for(marker.exists, what="the socket marker")
        job.send_signal(signal.SIGTERM)
        assert job.wait(timeout=scaled(5)) == 0  # the step is 600 s: the signal ended it
    assert not marker.exists()


@pytest.mark.integration
def test_steps_option_ends_the_job(tmp_path: Path) -> None:
    proc = subprocess.run(
        [TRAIN, "--profile", "input_bound", "--step-seconds", "0.01", "--steps", "3"],
        env=child_env(tmp_path),
        timeout=scaled(20),
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0
    bad = subprocess.run(
        [TRAIN, "--profile", "nonsense"],
        env=child_env(tmp_path),
        timeout=scaled(20),
        capture_output=True,
        check=False,
    )
    assert bad.returncode == 2
    assert os.listdir(tmp_path) == []  # no marker without PROFILING_MODE=dynamic


def test_same_seed_same_steps() -> None:
    first = simulate("aicpu_fallback", 5, 3, 0.2, 1.7e9, seed=11)
    assert first == simulate("aicpu_fallback", 5, 3, 0.2, 1.7e9, seed=11)
    assert first != simulate("aicpu_fallback", 5, 3, 0.2, 1.7e9, seed=12)
    assert [s.step_id for s in first] == [5, 6, 7]


@pytest.mark.integration
def test_the_step_log_holds_megatron_lines_in_cri_form(tmp_path: Path) -> None:
    log = tmp_path / "pods" / "ml_train-0_uid" / "trainer" / "0.log"
    argv = [TRAIN, "--profile", "balanced", "--step-seconds", "0.01", "--steps", "6"]
    run = subprocess.run(
        [*argv, "--step-log", str(log), "--log-interval", "2"],
        env=child_env(tmp_path),
        timeout=scaled(20),
        capture_output=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    lines = steplog.parse(log.read_bytes(), whole=True)  # the daemon's own reader
    assert [s.iteration for s in lines.steps] == [2, 4, 6] and not lines.skipped
    assert all(s.seconds > 0 for s in lines.steps)
    assert [s.at for s in lines.steps] == sorted(s.at for s in lines.steps)
    first = log.read_text().splitlines()[0]
    assert first.split(" ", 3)[1:3] == ["stdout", "F"]
    assert " iteration        2/       6 | consumed samples:          256 |" in first
    for bad in (["--capture-inflation", "-0.1"], ["--log-interval", "0"]):
        refused = subprocess.run(
            [*argv, *bad], env=child_env(tmp_path), timeout=scaled(20), capture_output=True
        )
        assert refused.returncode == 2 and b"--capture-inflation" in refused.stderr


def test_msprof_tells_the_job_through_its_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    tell(4242, "start")
    assert not socket_path(4242).exists()  # a job without a marker is told nothing
    socket_path(4242).touch()
    assert told(4242) == ""
    tell(4242, "start")
    assert told(4242) == "start"
    tell(4242, "stop")
    assert told(4242) == "stop"
