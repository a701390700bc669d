"""Profiler.stop() from another thread: the child in flight (here an analysis worker that hangs)
is killed at once, the profiling job returns, the state is saved, nothing new starts."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from profiling_helpers import config_for, profiler_for

from npumon.daemon.profiling.state import STATE_FILE
from tests.helpers.wait import scaled, wait_for

pytestmark = pytest.mark.integration
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "msprof"


def test_stop_kills_the_worker_in_flight_and_saves_the_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "prof"
    out = root / "job" / "node1_1_2025_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    shutil.copyfile(
        FIXTURES / "step_trace_time_torchnpu_2025-01_level1.csv", out / "step_trace_time.csv"
    )
    stamp = time.time() - 3600
    for path in [root, *root.rglob("*")]:
        os.utime(path, (stamp, stamp))
    hang = tmp_path / "hanging-worker"
    hang.write_text("#!/bin/sh\nexec sleep 120\n")
    hang.chmod(0o755)
    profiler, _ = profiler_for(config_for(tmp_path, ingest={"paths": [str(root)], "settle": "1s"}))
    monkeypatch.setattr(sys, "executable", str(hang))  # launch.py starts sys.executable -m ...
    job = threading.Thread(target=profiler.ingest_once)
    job.start()
    wait_for(lambda: bool(profiler.children.running()), 10.0, "the analysis worker")
    [worker] = profiler.children.running()
    assert profiler.stop()
    job.join(timeout=scaled(5.0))  # the worker sleeps 120 s: killed, not waited out
    assert not job.is_alive()
    assert not psutil.pid_exists(worker) or psutil.Process(worker).status() == "zombie"
    assert (tmp_path / "state" / "profiling" / STATE_FILE).is_file()
    assert profiler.children.running() == ()
    assert profiler.ingest_once() == [] and profiler.tick() is None  # nothing new after stop


def test_a_child_started_after_stop_is_refused(tmp_path: Path) -> None:
    profiler, _ = profiler_for(config_for(tmp_path))
    assert profiler.stop()
    result = profiler.host.runner(["sleep", "30"], 30.0)
    assert result.exit_code is None and result.cancelled  # refused before it started
