"""The profiler service: which workload is due, and what it publishes when nothing ran."""

from __future__ import annotations

import os
from pathlib import Path

from profiling_helpers import config_for, profiler_for, summary

from npumon.daemon.model.snapshot import EMPTY_SNAPSHOT
from npumon.daemon.profiling.workloads import Workload
from npumon.exporters.profiles import write


def test_due_workload_respects_the_interval_and_persisted_success(tmp_path: Path) -> None:
    profiler, _ = profiler_for(
        config_for(tmp_path, interval="10m"), clock=lambda: 1000.0, monotonic=lambda: 1000.0
    )  # the two clocks agree at start
    a = Workload("a", (1,), "msprof_attach", frozenset())
    b = Workload("b", (2,), "msprof_attach", frozenset(), interval_seconds=60.0)
    profiler.state.record(summary("a", 0.1), 1000.0, 1.0)
    profiler.state.record(summary("b", 0.1), 1000.0, 1.0)
    assert profiler.due((a, b), 1059.0) is None
    assert profiler.due((a, b), 1061.0) == b
    assert profiler.due((a, b), 1700.0) == b  # both late: b by 640 s, a by 100 s


def test_nothing_rendered_when_profiling_is_off_every_result_counted_when_on(
    tmp_path: Path,
) -> None:
    assert write(EMPTY_SNAPSHOT, False) == []
    profiler, _ = profiler_for(config_for(tmp_path))
    captures = dict(profiler.view().captures)
    assert captures["skipped_too_large"] == 0 and len(captures) == 8


def test_a_wall_clock_step_moves_no_capture(tmp_path: Path) -> None:
    wall, mono = [1000.0], [1000.0]
    config = config_for(tmp_path, interval="10m", msprof={"command": ["/nonexistent/msprof"]})
    profiler, _ = profiler_for(config, clock=lambda: wall[0], monotonic=lambda: mono[0])
    a = Workload("a", (os.getpid(),), "msprof_attach", frozenset())
    profiler.state.record(summary("a", 0.1), 1000.0, 1.0)  # persisted: due at 1600
    wall[0] -= 3600.0
    assert profiler.due((a,), 1599.0) is None and profiler.due((a,), 1601.0) == a
    mono[0] = 1601.0
    assert profiler.capture(a).result == "failed"  # an attempt (msprof is missing)
    wall[0] += 7200.0
    assert profiler.due((a,), 2200.0) is None  # the next is 10 min after the attempt
    assert profiler.due((a,), 2201.0) == a
