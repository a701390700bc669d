"""Captures against the real simulators: attach, start, stop, export, analyse, metrics, cleanup,
and the ways a capture ends early (hang, target gone, disk quota, not attachable, busy)."""

from __future__ import annotations

import logging
import os
import subprocess
import time
from pathlib import Path

import pytest
from profiling_helpers import (
    SIM_MSPROF,
    config_for,
    exposition,
    msprof_children,
    profiler_for,
    promtool_ok,
    train_job,
    value,
)

from npumon.daemon.model.profile import report_adapter
from npumon.daemon.profiling.workloads import Workload
from tests.helpers.wait import scaled, wait_for

pytestmark = pytest.mark.integration  # real msprof and training-job simulators

CHIPS = frozenset({(3, 0), (3, 1)})


def job_workload(pid: int, attachable: bool | None = True) -> Workload:
    return Workload("trainer", (pid,), "msprof_attach", CHIPS, attachable=attachable)


def test_full_cycle_ends_ok_with_the_jobs_diagnosis(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    profiler, recorder = profiler_for(config)
    seen_during: list[frozenset[tuple[int, int]]] = []

    def wait(seconds: float) -> None:
        seen_during.append(recorder.held())
        time.sleep(seconds)

    profiler.host = profiler.capturer.host = type(profiler.host)(
        profiler.host.alive, profiler.host.processes, recorder, wait=wait
    )
    with train_job(tmp_path, "conversion_bound") as job:
        outcome = profiler.capture(job_workload(job.pid))
    assert outcome.result == "ok", outcome.message
    assert seen_during == [CHIPS]  # npu_profiling_active while capturing ...
    assert recorder.calls[-1] == frozenset() and recorder.held() == frozenset()
    text = exposition(profiler)
    promtool_ok(text)
    assert value(text, "npumon_captures_total", result="ok") == 1
    assert value(text, "npumon_captures_total", result="timeout") == 0
    assert value(text, "npu_profile_bottleneck", workload="trainer", kind="format_conversion") == 1
    assert value(text, "npu_profile_bottleneck", workload="trainer", kind="ai_cpu_fallback") == 0
    p50 = value(text, "npu_step_duration_seconds", workload="trainer", stat="p50")
    assert p50 is not None and p50 > 0
    assert value(text, "npumon_capture_last_success_timestamp_seconds", workload="trainer")
    assert value(text, "npumon_capture_duration_seconds", workload="trainer")
    transdata = [
        k
        for k in text.splitlines()
        if k.startswith("npu_op_time_ratio{") and 'op_type="TransData"' in k
    ]
    assert transdata, "the conversion op must be among the top operators"
    # the summary is persisted; the raw data stays (keep_raw "last", the default) and the
    # report beside the state names it
    assert (tmp_path / "state" / "profiling" / "profiling-state.json").is_file()
    (kept,) = (tmp_path / "state" / "captures").iterdir()
    assert kept.name.startswith("trainer-")
    page = (tmp_path / "state" / "reports" / "trainer.html").read_text(encoding="utf-8")
    assert f"<code>{kept}</code>" in page and "MindStudio Insight" in page
    assert "TransData" in page
    saved = (tmp_path / "state" / "reports" / "trainer.json").read_text(encoding="utf-8")
    assert report_adapter().validate_json(saved) == outcome.report


def test_keep_raw_last_keeps_one_capture_per_workload(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    captures = tmp_path / "state" / "captures"
    other = _old_capture(captures, "trainer2-20250101T000000000000Z", 10, 50)  # another job's
    profiler, _ = profiler_for(config_for(tmp_path))
    with caplog.at_level(logging.INFO), train_job(tmp_path, "balanced") as job:
        first = profiler.capture(job_workload(job.pid))
        (before,) = [p for p in captures.iterdir() if p != other]
        second = profiler.capture(job_workload(job.pid))
    assert first.result == second.result == "ok", (first.message, second.message)
    (after,) = [p for p in captures.iterdir() if p != other]
    assert after != before and not before.exists() and other.exists()
    kept = [r.getMessage() for r in caplog.records if "event=capture_kept" in r.getMessage()]
    report = tmp_path / "state" / "reports" / "trainer.html"
    assert kept[-1] == f"event=capture_kept workload=trainer path={after} result=ok report={report}"
    assert f"<code>{after}</code>" in report.read_text(encoding="utf-8")


def test_keep_raw_none_deletes_and_the_page_names_no_capture(tmp_path: Path) -> None:
    profiler, _ = profiler_for(config_for(tmp_path, keep_raw=False))  # false: "none"
    assert profiler.settings.keep_raw == "none"
    with train_job(tmp_path, "balanced") as job:
        outcome = profiler.capture(job_workload(job.pid))
    assert outcome.result == "ok", outcome.message
    assert list((tmp_path / "state" / "captures").iterdir()) == []
    page = (tmp_path / "state" / "reports" / "trainer.html").read_text(encoding="utf-8")
    assert "Capture:" not in page and "npumon analysis: trainer" in page


@pytest.mark.parametrize("phase", ["start", "stop", "export"])
def test_a_hung_phase_times_out_and_the_group_is_killed(
    tmp_path: Path, phase: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NPUMON_SIM_MSPROF_HANG", phase)
    config = config_for(tmp_path, timeouts={"start": "4s", "stop": "1500ms", "export": "1500ms"})
    if phase == "start":
        config = config_for(tmp_path, timeouts={"start": "1500ms"})
    profiler, recorder = profiler_for(config)
    with train_job(tmp_path, "balanced") as job:
        outcome = profiler.capture(job_workload(job.pid))
    assert outcome.result == "timeout", outcome.message
    assert phase in outcome.message
    assert msprof_children(tmp_path) == []  # the hung msprof (and its group) is gone
    assert CHIPS in recorder.calls and recorder.held() == frozenset()
    assert value(exposition(profiler), "npumon_captures_total", result="timeout") == 1


def test_target_exiting_mid_capture(tmp_path: Path) -> None:
    holder: list[subprocess.Popen[bytes]] = []

    def wait(seconds: float) -> None:  # the job ends while the capture runs
        holder[0].kill()
        holder[0].wait(timeout=scaled(10))

    profiler, recorder = profiler_for(config_for(tmp_path), wait=wait)
    with train_job(tmp_path, "balanced") as job:
        holder.append(job)
        outcome = profiler.capture(job_workload(job.pid))
    assert outcome.result == "target_exited", outcome.message
    assert msprof_children(tmp_path) == []
    assert recorder.held() == frozenset()
    assert value(exposition(profiler), "npumon_captures_total", result="target_exited") == 1


def _old_capture(captures: Path, name: str, size: int, age: float) -> Path:
    path = captures / name
    path.mkdir(parents=True)
    (path / "raw.bin").write_bytes(b"\0" * size)
    stamp = time.time() - age
    os.utime(path, (stamp, stamp))
    return path


def test_disk_quota_cleans_oldest_first_then_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mib = 1024 * 1024
    monkeypatch.setenv("NPUMON_SIM_MSPROF_RAW_MB", "2")
    captures = tmp_path / "state" / "captures"
    oldest = _old_capture(captures, "old-a", mib // 2, 300)
    middle = _old_capture(captures, "old-b", mib // 2, 200)
    newest = _old_capture(captures, "old-c", mib // 2, 100)
    profiler, _ = profiler_for(config_for(tmp_path, disk_quota="3MiB", keep_raw=True))
    with train_job(tmp_path, "balanced") as job:
        first = profiler.capture(job_workload(job.pid))
        # 1.5 MiB kept + a 2 MiB capture > 3 MiB: the two oldest go, the newest stays
        assert first.result == "ok", first.message
        assert not oldest.exists() and not middle.exists() and newest.exists()
        kept = [p for p in captures.iterdir() if p.name.startswith("trainer-")]
        assert len(kept) == 1  # keep_raw: this capture's raw data stays
        profiler.capturer.settings = config_for(
            tmp_path, disk_quota="1MiB", keep_raw=True
        ).profiling
        second = profiler.capture(job_workload(job.pid))
    assert second.result == "disk_quota", second.message
    assert msprof_children(tmp_path) == []
    # cleanup could not make room for ~2 MiB under 1 MiB: everything older went, nothing new
    assert list(captures.iterdir()) == []
    text = exposition(profiler)
    assert value(text, "npumon_captures_total", result="disk_quota") == 1
    assert value(text, "npumon_captures_total", result="ok") == 1


def test_job_without_dynamic_mode_is_skipped_not_attachable(tmp_path: Path) -> None:
    # a target that matches this job alone: a cmdline of every npumon-sim-train on the machine
    # also took other tests' jobs, with their msprof attached (skipped_busy)
    steps = 10**9 + os.getpid()
    config = config_for(
        tmp_path,
        targets=[{"workload": "plain", "cmdline": f"--steps {steps}$", "process_name": "."}],
    )
    profiler, recorder = profiler_for(config)
    with train_job(tmp_path, "balanced", dynamic=False, steps=steps) as job:
        found = [w for w in profiler.workloads() if job.pid in w.pids]
        assert found and found[0].attachable is False
        by_environ = profiler.capture(found[0])
        # environ unreadable (another user, no root): msprof itself says so
        by_msprof = profiler.capture(job_workload(job.pid, attachable=None))
    assert by_environ.result == by_msprof.result == "skipped_not_attachable"
    assert "PROFILING_MODE=dynamic" in by_environ.message
    assert "PROFILING_MODE=dynamic" in by_msprof.message
    assert recorder.held() == frozenset()
    assert (
        value(exposition(profiler), "npumon_captures_total", result="skipped_not_attachable") == 2
    )


def test_another_msprof_on_the_job_means_skipped_busy(tmp_path: Path) -> None:
    profiler, recorder = profiler_for(config_for(tmp_path))
    with train_job(tmp_path, "balanced") as job:
        other = subprocess.Popen(
            [SIM_MSPROF, "--dynamic=on", f"--pid={job.pid}", f"--output={tmp_path / 'user'}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for(
                lambda: any("--dynamic=on" in " ".join(p) for p in _cmdlines(other.pid)),
                10.0,
                "the other msprof to start",
            )
            outcome = profiler.capture(job_workload(job.pid))
        finally:
            other.kill()
            other.wait(timeout=scaled(10))
    assert outcome.result == "skipped_busy", outcome.message
    assert recorder.calls == []  # nothing was started, no chip marked


def _cmdlines(pid: int) -> list[list[str]]:
    import psutil

    try:
        return [psutil.Process(pid).cmdline()]
    except psutil.Error:
        return []


def test_kept_captures_are_readable_by_npumons_user_only(tmp_path: Path) -> None:
    # the chart's host directory is 0755: the captures folder itself must close the raw data
    profiler, _ = profiler_for(config_for(tmp_path, keep_raw=True))
    with train_job(tmp_path, "conversion_bound") as job:
        outcome = profiler.capture(job_workload(job.pid))
    assert outcome.result == "ok", outcome.message
    captures = tmp_path / "state" / "captures"
    (kept,) = captures.iterdir()
    assert [oct(p.stat().st_mode & 0o777) for p in (captures, kept)] == ["0o700", "0o700"]


def test_keep_raw_last_also_keeps_the_reference_capture(tmp_path: Path) -> None:
    from npumon.daemon.profiling.capture import CaptureOutcome, Capturer, Host

    captures = tmp_path / "captures"
    older = _old_capture(captures, "trainer-20250101T000000000000Z", 10, 300)
    reference = _old_capture(captures, "trainer-20250101T001000000000Z", 10, 200)
    latest = _old_capture(captures, "trainer-20250101T002000000000Z", 10, 100)
    settings = config_for(tmp_path).profiling
    host = Host(lambda pid: True, lambda: (), lambda chips: None)
    capturer = Capturer(settings, captures, host, reference=lambda w: (None, str(reference)))
    capturer._keep_or_drop("trainer", latest, CaptureOutcome("trainer", "ok", ""))
    assert latest.exists() and reference.exists() and not older.exists()
    # once the reference moves on, the old one goes like any older capture
    capturer = Capturer(settings, captures, host, reference=lambda w: (None, str(latest)))
    newest = _old_capture(captures, "trainer-20250101T003000000000Z", 10, 0)
    capturer._keep_or_drop("trainer", newest, CaptureOutcome("trainer", "ok", ""))
    assert newest.exists() and latest.exists() and not reference.exists()
