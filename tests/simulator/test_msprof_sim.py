"""`npumon-sim-msprof`: attach prompt, export, failure injection; read back by the daemon."""

from __future__ import annotations

import csv
import subprocess
import time
from pathlib import Path

import pytest

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.analysis.readers import layout
from npumon.daemon.analysis.readers.tables import read_kernels
from npumon.simulator import prof_dir
from tests.helpers.wait import scaled, wait_for
from tests.simulator.simjobs import MSPROF, Interactive, child_env, train_job

PROMPT = "(msprof) "
PROF_NAME = r"PROF_\d{6}_\d{17}_[A-Z]{16}"
pytestmark = pytest.mark.integration  # every test runs the console scripts


def _msprof(
    home: Path, *args: str, timeout: float = 20.0, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MSPROF, *args],
        env=child_env(home, **env),
        capture_output=True,
        text=True,
        timeout=scaled(timeout),
        check=False,
    )


def _attach(home: Path, pid: int, out: Path, **env: str) -> Interactive:
    return Interactive(
        [
            MSPROF,
            "--dynamic=on",
            f"--pid={pid}",
            f"--output={out}",
            "--aic-metrics=PipeUtilization",
        ],
        child_env(home, **env),
    )


def _raw(out: Path, kind: str, steps: int, seed: int = 7) -> Path:
    now = time.time()
    meta = prof_dir.CaptureMeta(kind, 4242, 0, 0.05, now - 1, now, 40, steps, seed)
    return prof_dir.write_raw(out, meta, 1)


def test_attach_export_analyze_round_trip(tmp_path: Path) -> None:
    """The console scripts as the daemon drives them: a real job, the prompt, --export=on.
    Which steps a window covers is test_sim_attach.py's (a fake clock, no waiting here)."""
    marker_dir = tmp_path
    with train_job(tmp_path, "--profile", "input_bound", "--step-seconds", "0.05") as job:
        wait_for(
            lambda: (marker_dir / f"dynamic_profiling_socket_{job.pid}").exists(),
            what="the dynamic profiling socket",
        )
        session = _attach(tmp_path, job.pid, tmp_path / "out")
        session.expect(PROMPT)
        session.send("start")
        assert "Start profiling" in session.expect(PROMPT)
        session.send("stop")
        session.expect(PROMPT)
        session.send("quit")
        code, text = session.finish()
    assert code == 0, text
    (prof,) = (tmp_path / "out").iterdir()
    assert prof.name.startswith("PROF_000001_")
    assert str(prof) in text  # the prompt says where the data went
    assert not (prof / "mindstudio_profiler_output").exists()  # raw until exported
    export = _msprof(tmp_path, "--export=on", f"--output={tmp_path / 'out'}")
    assert export.returncode == 0, export.stdout
    report = analyze_path(prof)
    assert report.summary.layout == "msprof"
    (trace,) = (prof / "mindstudio_profiler_output").glob("step_trace_*.csv")
    rows = list(csv.reader(trace.read_text().splitlines()))[1:]
    assert report.summary.step is not None and report.summary.step.count == len(rows) >= 1


def test_job_without_profiling_mode_is_refused(tmp_path: Path) -> None:
    config_dir, log = tmp_path / "cfg", tmp_path / "train.err"
    with train_job(
        tmp_path,
        "--profile",
        "balanced",
        "--step-seconds",
        "0.05",
        "--dynamic-config-dir",
        str(config_dir),
        dynamic=False,
        stderr=log,
    ) as job:
        # no sleep: a config the job logs as invalid shows it is in its step loop, past the
        # point where a job started with PROFILING_MODE=dynamic creates its socket marker
        config = config_dir / "profiler_config.json"
        wait_for(config.exists, what="the template config dynamic_profile.init writes")
        config.write_text("{not json")
        wait_for(lambda: "ignoring" in log.read_text(), what="the job to poll its config")
        assert not list(tmp_path.glob("dynamic_profiling_socket_*"))
        proc = _msprof(tmp_path, "--dynamic=on", f"--pid={job.pid}", f"--output={tmp_path}")
    assert proc.returncode == 1
    assert "export PROFILING_MODE=dynamic" in proc.stdout
    assert f"dynamic_profiling_socket_{job.pid}" in proc.stdout
    assert PROMPT not in proc.stdout


def test_nonexistent_pid(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait(timeout=scaled(10))
    proc = _msprof(tmp_path, "--dynamic=on", f"--pid={gone.pid}", f"--output={tmp_path}")
    assert proc.returncode == 1
    assert f"The process {gone.pid} does not exist" in proc.stdout


def test_target_killed_during_capture(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with train_job(tmp_path, "--profile", "input_bound", "--step-seconds", "0.05") as job:
        wait_for(lambda: (tmp_path / f"dynamic_profiling_socket_{job.pid}").exists())
        session = _attach(tmp_path, job.pid, out)
        session.expect(PROMPT)
        session.send("start")
        session.expect(PROMPT)
        job.kill()
        job.wait(timeout=scaled(10))
        session.send("stop")
        code, text = session.finish()
    assert code == 2
    assert f"process {job.pid} exited" in text
    assert not list(out.glob("PROF_*/device_*"))  # nothing that looks like a finished capture
    for prof in out.glob("PROF_*"):  # and export refuses what is there
        refused = _msprof(tmp_path, "--export=on", f"--output={prof}")
        assert refused.returncode == 1 and "device_" in refused.stdout


def _fake_dynamic_job(home: Path) -> int:
    """The test process itself poses as a job started with PROFILING_MODE=dynamic."""
    import os

    pid = os.getpid()
    (home / f"dynamic_profiling_socket_{pid}").touch()
    return pid


def test_two_captures_and_raw_size_injection(tmp_path: Path) -> None:
    pid = _fake_dynamic_job(tmp_path)
    session = _attach(tmp_path, pid, tmp_path / "out", NPUMON_SIM_MSPROF_RAW_MB="3")
    for _ in range(2):
        session.expect(PROMPT)
        session.send("start")
        session.expect(PROMPT)
        session.send("stop")
    session.expect(PROMPT)
    code, text = session.finish()  # EOF at the prompt is quit
    assert code == 0, text
    profs = sorted((tmp_path / "out").glob("PROF_*"))
    assert [p.name[:11] for p in profs] == ["PROF_000001", "PROF_000002"]
    for prof in profs:
        size = sum(f.stat().st_size for f in prof.rglob("*") if f.is_file())
        assert size >= 3 * 2**20


def test_hang_at_start_blocks_until_killed(tmp_path: Path) -> None:
    pid = _fake_dynamic_job(tmp_path)
    session = _attach(tmp_path, pid, tmp_path / "out", NPUMON_SIM_MSPROF_HANG="start")
    session.expect(PROMPT)
    session.send("start")
    with pytest.raises(TimeoutError):
        session.expect(PROMPT, timeout=1.0)
    assert session.proc.poll() is None
    session.kill()


def test_hang_at_export_blocks(tmp_path: Path) -> None:
    prof = _raw(tmp_path, "balanced", 3)
    with pytest.raises(subprocess.TimeoutExpired):
        _msprof(
            tmp_path,
            "--export=on",
            f"--output={prof}",
            timeout=1.0,
            NPUMON_SIM_MSPROF_HANG="export",
        )
    assert not (prof / "mindstudio_profiler_output").exists()


def test_large_export_is_sliced_and_read_whole(tmp_path: Path) -> None:
    prof = _raw(tmp_path, "aicpu_fallback", steps=100)  # ~6,600 tasks: over 5,000 rows
    proc = _msprof(tmp_path, "--export=on", f"--output={prof}")
    assert proc.returncode == 0, proc.stdout
    out = prof / "mindstudio_profiler_output"
    slices = sorted(out.glob("op_summary_slice_*_*.csv"))
    assert [s.name.split("_")[3] for s in slices] == ["0", "1"]
    assert not list(out.glob("op_summary_2*.csv"))  # no un-sliced file beside them
    rows = [r for s in slices for r in csv.DictReader(s.open(newline=""))]
    assert all(sum(1 for _ in s.open()) - 1 <= 5000 for s in slices)
    ai_cpu = [r for r in rows if r["Task Type"] == "AI_CPU" and float(r["Task Duration(us)"]) >= 20]
    (unit,) = layout.find_units(prof)
    assert len(read_kernels(unit.tables[layout.KERNEL]).frame) == len(rows)
    report = analyze_path(prof)
    assert report.summary.ai_cpu_count == len(ai_cpu) > 0
    assert "ai_cpu_fallback" in {b.kind for b in report.summary.bottlenecks}


def test_exported_tables_keep_the_real_quirks(tmp_path: Path) -> None:
    prof = _raw(tmp_path, "balanced", 4)
    assert _msprof(tmp_path, "--export=on", f"--output={tmp_path}").returncode == 0
    out = prof / "mindstudio_profiler_output"
    (summary,) = out.glob("op_summary_*.csv")
    table = list(csv.reader(summary.open(newline="")))
    header = table[0]
    assert header[:11] == [
        "Device_id",
        "Model ID",
        "Task ID",
        "Stream ID",
        "Op Name",
        "OP Type",
        "OP State",
        "Task Type",
        "Task Start Time(us)",
        "Task Duration(us)",
        "Task Wait Time(us)",
    ]
    start = header.index("Task Start Time(us)")
    assert all(row[start].endswith("\t") for row in table[1:])
    comm = [row for row in table[1:] if row[7] == "COMMUNICATION"]
    assert comm and all(row[2] == "N/A" and row[3] == "N/A" for row in comm)
    assert any("," in row[header.index("Input Shapes")] for row in table[1:])  # quoted shapes
    (trace,) = out.glob("step_trace_*.csv")
    trace_rows = list(csv.reader(trace.open(newline="")))
    assert trace_rows[0].count("Reduce Start(us)") == 2
    assert trace_rows[1][trace_rows[0].index("Data Aug Bound(us)")] == "N/A"
    assert trace_rows[2][trace_rows[0].index("FP Start(us)")].endswith("\t")


def test_export_leaves_exported_dirs_and_refuses_incomplete_ones(tmp_path: Path) -> None:
    prof = _raw(tmp_path, "balanced", 3)
    assert _msprof(tmp_path, "--export=on", f"--output={prof}").returncode == 0
    files = {p: p.stat().st_mtime_ns for p in (prof / "mindstudio_profiler_output").iterdir()}
    again = _msprof(tmp_path, "--export=on", f"--output={prof}")
    assert again.returncode == 0 and "exported already" in again.stdout
    assert {p: p.stat().st_mtime_ns for p in files} == files
    broken = tmp_path / "PROF_000009_20260101000000000_ABCDEFGHIJKLMNOP"
    (broken / "host" / "data").mkdir(parents=True)
    refused = _msprof(tmp_path, "--export=on", f"--output={broken}")
    assert refused.returncode == 1 and "[ERROR]" in refused.stdout


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("--dynamic=on",),
        ("--export=off", "--output=x"),
        ("train.py",),
        ("--query=on", "--output=x"),
    ],
)
def test_usage_errors(tmp_path: Path, args: tuple[str, ...]) -> None:
    proc = _msprof(tmp_path, *args)
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: npumon-sim-msprof")


def test_several_pids_give_one_prof_dir_each(tmp_path: Path) -> None:
    import json

    pid = _fake_dynamic_job(tmp_path)
    other = subprocess.Popen(["sleep", "30"])
    try:
        (tmp_path / f"dynamic_profiling_socket_{other.pid}").touch()
        session = Interactive(
            [MSPROF, "--dynamic=on", f"--pid={pid},{other.pid}", f"--output={tmp_path / 'out'}"],
            child_env(tmp_path),
        )
        session.expect(PROMPT)
        session.send("start")
        session.expect(PROMPT)
        session.send("stop")
        session.expect(PROMPT)
        session.send("quit")
        code, text = session.finish()
    finally:
        other.kill()
        other.wait(timeout=scaled(10))
    assert code == 0, text
    metas = [json.loads(p.read_text()) for p in (tmp_path / "out").glob("PROF_*/host/data/*.json")]
    assert sorted(m["pid"] for m in metas) == sorted([pid, other.pid])
