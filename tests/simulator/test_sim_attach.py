"""The msprof session (simulator/attach.py) in process: a fake clock moves the capture window."""

from __future__ import annotations

import csv
import time
from pathlib import Path

import psutil
import pytest

from npumon.daemon.analysis.analysis import analyze_path
from npumon.simulator import prof_dir
from npumon.simulator.attach import Session, Target
from tests.simulator.simjobs import DIAGNOSES, MSPROF_KINDS, WATCHED


class FakeClock:
    """Wall-clock seconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("kind", MSPROF_KINDS)
def test_capture_window_export_analyze(tmp_path: Path, kind: str) -> None:
    """In process, with a fake clock: the window start..stop covers 5 steps of 0.05 s."""
    me = psutil.Process()  # the target must be a live process; this one will do
    target = Target(me.pid, me.create_time(), kind, step_seconds=0.05, device_id=0)
    clock = FakeClock()
    session = Session([target], tmp_path / "out", clock=clock)
    assert "Start profiling" in session.start()
    clock.now += 0.25
    assert "Data saved in" in session.stop()
    (prof,) = (tmp_path / "out").iterdir()
    assert prof.name.startswith("PROF_000001_") and len(prof.name) == len("PROF_") + 6 + 1 + 17 + 17
    assert (prof / "device_0").is_dir() and (prof / "host").is_dir()
    assert not (prof / "mindstudio_profiler_output").exists()  # raw until exported
    prof_dir.export(prof, clock.now)
    report = analyze_path(prof)
    assert report.summary.layout == "msprof"
    assert {b.kind for b in report.summary.bottlenecks} & WATCHED == DIAGNOSES[kind]
    if kind == "balanced":
        assert report.summary.bottlenecks == ()
    # one step_trace row per covered step (counted off the file itself)
    (trace,) = (prof / "mindstudio_profiler_output").glob("step_trace_*.csv")
    rows = list(csv.reader(trace.read_text().splitlines()))[1:]
    assert report.summary.step is not None and report.summary.step.count == len(rows) == 5
