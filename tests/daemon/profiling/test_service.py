"""Persistence and restart, baseline regression math, discovery, busy detection, quota, config."""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path

import pytest
from cap_helpers import config_for, exposition, profiler_for, value

from npumon.daemon.analysis.diagnosis import Thresholds, is_regression
from npumon.daemon.analysis.worker import thresholds_from
from npumon.daemon.config import Config, ConfigError, load_config, parse_config
from npumon.daemon.containers import container_id
from npumon.daemon.model.npu_smi import TableProcess
from npumon.daemon.model.profile import AnalysisReport, ProfileSummary, StepStats
from npumon.daemon.profiling.busy import other_profiler
from npumon.daemon.profiling.capture import CaptureOutcome
from npumon.daemon.profiling.diskquota import make_room
from npumon.daemon.profiling.state import ProfileState
from npumon.daemon.profiling.workloads import ProcessInfo, discover

ROOT = Path(__file__).resolve().parents[2]


def summary(workload: str, p99: float) -> ProfileSummary:
    return ProfileSummary(
        workload=workload, layout="torch_npu", capture_time_seconds=None,
        step=StepStats(4, p99 * 0.9, p99 * 0.9, p99 * 0.95, p99), phases=(),
        op_total_seconds=None, op_time_ratio=(), core_type_time_ratio=(), ai_cpu_seconds=None,
        ai_cpu_count=None, format_conversion_seconds=None, format_conversion_ratio=None,
        dynamic_shape_op_count=None, op_types_inferred=False, ranks=(), rank_spread=(),
        bottlenecks=(),
    )


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


def test_regression_uses_the_configured_ratio() -> None:
    t = thresholds_from({"regression_ratio": 0.2, "warmup_steps": 5})
    assert t.warmup_steps == 5 and isinstance(t.warmup_steps, int)
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
        assert value(text, "npu_step_duration_baseline_seconds", workload="llama") == \
            pytest.approx(0.42)  # median(0.40, 0.44, 0.42); 0.50 is the one judged
        assert value(text, "npu_step_duration_seconds", workload="llama", stat="p99") == 0.50
        assert value(text, "npumon_capture_last_success_timestamp_seconds",
                     workload="llama") == 1003.0
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


def test_due_workload_respects_the_interval_and_persisted_success(tmp_path: Path) -> None:
    from npumon.daemon.profiling.workloads import Workload

    profiler, _ = profiler_for(config_for(tmp_path, interval="10m"))
    a = Workload("a", (1,), "msprof_attach", frozenset())
    b = Workload("b", (2,), "msprof_attach", frozenset(), interval_seconds=60.0)
    profiler.state.record(summary("a", 0.1), 1000.0, 1.0)
    profiler.state.record(summary("b", 0.1), 1000.0, 1.0)
    assert profiler.due((a, b), 1059.0) is None
    assert profiler.due((a, b), 1061.0) == b
    assert profiler.due((a, b), 1700.0) == b  # both late: b by 640 s, a by 100 s


def info(pid: int, name: str, *cmd: str, mode: str | None = "") -> ProcessInfo:
    return ProcessInfo(pid, name, tuple(cmd) or (name,), mode)


def test_discovery_names_by_config_then_process_name_bounded() -> None:
    table = [TableProcess(npu=0, chip=0, pid=10, name="python3", memory_bytes=1),
             TableProcess(npu=1, chip=0, pid=11, name="python3", memory_bytes=1),
             TableProcess(npu=2, chip=None, pid=12, name="VLLMWorker", memory_bytes=1),
             TableProcess(npu=3, chip=0, pid=99, name="gone", memory_bytes=1)]
    procs = {10: info(10, "python3", "python3", "train.py", mode="dynamic"),
             11: info(11, "python3", "python3", "train.py", mode="dynamic"),
             12: info(12, "VLLMWorker", mode=None),
             50: info(50, "python", "python", "bert_pretrain.py", mode="")}
    targets = parse_config({"profiling": {"targets": [
        {"workload": "bert", "cmdline": r"bert_\w+\.py"}]}}).profiling.targets
    found = discover(table, targets, procs.get, procs.values)
    assert [w.name for w in found] == ["VLLMWorker", "bert", "python3"]
    by = {w.name: w for w in found}
    assert by["python3"].pids == (10, 11) and by["python3"].chips == {(0, 0), (1, 0)}
    assert by["python3"].attachable is True
    assert by["VLLMWorker"].attachable is None and by["VLLMWorker"].chips == {(2, 0)}
    assert by["bert"].attachable is False and by["bert"].chips == frozenset()
    assert len(discover(table, targets, procs.get, procs.values, max_workloads=2)) == 2
    assert [w.name for w in discover(table, targets, procs.get, procs.values,
                                     discover_unmatched=False)] == ["bert"]


def test_container_id_from_cgroup(tmp_path: Path) -> None:
    cid = "4f2c" * 16
    cgroup = tmp_path / "cgroup"
    cgroup.write_text(f"0::/system.slice/docker-{cid}.scope\n")
    assert container_id(cgroup) == cid
    cgroup.write_text("0::/user.slice/user-1000.slice/session-3.scope\n")
    assert container_id(cgroup) is None
    assert container_id(tmp_path / "missing") is None


def test_other_profilers_are_recognised() -> None:
    msprof = info(7, "python", "/usr/bin/python3", "/opt/bin/msprof", "--dynamic=on",
                  "--pid=10,11", "--output=/tmp/x")
    assert other_profiler([11], [msprof]) is not None
    assert other_profiler([12], [msprof]) is None
    assert other_profiler([11], [msprof], own=[7]) is None
    export = info(8, "msprof", "msprof", "--export=on", "--output=/tmp/x")
    assert other_profiler([11], [export]) is None
    dyno = info(9, "dyno", "dyno", "--certs-dir", "NO_CERTS", "nputrace", "--start-step", "-1")
    assert other_profiler([1], [dyno]) is not None


def test_make_room_deletes_oldest_first(tmp_path: Path) -> None:
    import os

    for index, name in enumerate(("c", "a", "b")):  # mtime order: c, a, b
        (tmp_path / name).mkdir()
        (tmp_path / name / "f").write_bytes(b"x" * 100)
        os.utime(tmp_path / name, (1000 + index, 1000 + index))
    assert make_room(tmp_path, 150, 300)
    # 300 used + 150 needed: c (oldest) then a go, b (newest) stays
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]
    assert not make_room(tmp_path, 400, 300)
    assert list(tmp_path.iterdir()) == []


def test_documented_config_has_the_profiling_defaults() -> None:
    assert load_config(ROOT / "config" / "npumon.yaml").profiling == Config().profiling
    demo = load_config(ROOT / "config" / "demo.yaml").profiling
    assert demo.enabled and demo.interval < Config().profiling.interval and demo.targets


def test_profiling_config_problems_are_listed() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"profiling": {
            "thresholds": {"free_ratio": 0.3, "bogus": 1},
            "disk_quota": "lots",
            "targets": [{"workload": "a b", "cmdline": "("},
                        {"workload": "t", "process_name": "x", "mode": "torch_npu_config"}],
        }})
    problems = "\n".join(caught.value.problems)
    assert "profiling.thresholds: unknown threshold(s) bogus" in problems
    assert "profiling.disk_quota" in problems
    assert "profiling.targets.0.workload" in problems
    assert "profiling.targets.0.cmdline: not a valid regular expression" in problems
    assert "mode torch_npu_config needs config_dir" in problems
    assert parse_config({"profiling": {"disk_quota": "512MiB"}}).profiling.disk_quota == 512 << 20
    only_ingest = parse_config({"profiling": {"ingest": {"paths": ["/data/prof"]}}}).profiling
    assert only_ingest.active() and not only_ingest.enabled


def test_renderer_gives_nothing_when_profiling_is_off(tmp_path: Path) -> None:
    from npumon.daemon.model.snapshot import EMPTY_SNAPSHOT
    from npumon.daemon.profiling.metrics import render_profiles

    assert list(render_profiles(EMPTY_SNAPSHOT)) == []
    profiler, _ = profiler_for(config_for(tmp_path))
    view = replace(profiler.view())
    assert dict(view.captures)["skipped_not_attachable"] == 0


def test_a_target_npus_mark_their_chips_when_npu_smi_cannot_see_the_pid() -> None:
    from npumon.daemon.config import ProfilingTarget
    from npumon.daemon.profiling.workloads import ProcessInfo, discover

    job = ProcessInfo(pid=4242, name="python3", cmdline=("python3", "train.py"),
                      profiling_mode="dynamic")
    target = ProfilingTarget(workload="train", cmdline="train\\.py", npus=(1,))
    found = discover(
        (), [target], lambda pid: None, lambda: [job], discover_unmatched=False,
        table_chips=[(0, 0), (1, 0), (1, 1), (2, 0)],
    )
    assert [(w.name, sorted(w.chips)) for w in found] == [("train", [(1, 0), (1, 1)])]
