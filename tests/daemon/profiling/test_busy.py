"""Someone else's profiler on the job (msprof attached, dyno nputrace) is recognised."""

from __future__ import annotations

from npumon.daemon.profiling.busy import other_profiler
from npumon.daemon.profiling.workloads import ProcessInfo


def info(pid: int, name: str, *cmd: str, mode: str | None = "") -> ProcessInfo:
    return ProcessInfo(pid, name, tuple(cmd) or (name,), mode)


def test_other_profilers_are_recognised() -> None:
    msprof = info(
        7,
        "python",
        "/usr/bin/python3",
        "/opt/bin/msprof",
        "--dynamic=on",
        "--pid=10,11",
        "--output=/tmp/x",
    )
    assert other_profiler([11], [msprof]) is not None
    assert other_profiler([12], [msprof]) is None
    assert other_profiler([11], [msprof], own=[7]) is None
    export = info(8, "msprof", "msprof", "--export=on", "--output=/tmp/x")
    assert other_profiler([11], [export]) is None
    dyno = info(9, "dyno", "dyno", "--certs-dir", "NO_CERTS", "nputrace", "--start-step", "-1")
    assert other_profiler([1], [dyno]) is not None


def test_an_msprof_older_than_the_process_holding_the_pid_is_not_on_it() -> None:
    """PIDs are reused: an msprof left attached to a dead process whose PID a new job now holds
    started before that job, so it cannot be attached to it."""
    argv = ("msprof", "--dynamic=on", "--pid=11", "--output=/tmp/x")
    job = ProcessInfo(11, "python", ("python", "train.py"), "dynamic", started=2000.0)
    stale = ProcessInfo(7, "msprof", argv, "", started=1000.0)
    assert other_profiler([11], [stale, job]) is None
    attached = ProcessInfo(7, "msprof", argv, "", started=2000.5)
    assert other_profiler([11], [attached, job]) is not None
    same_tick = ProcessInfo(7, "msprof", argv, "", started=2000.0)  # create_time has 10 ms steps
    assert other_profiler([11], [same_tick, job]) is not None
    # a start time unknown on either side: counted, as before
    assert other_profiler([11], [ProcessInfo(7, "msprof", argv, ""), job]) is not None
    unknown_job = ProcessInfo(11, "python", ("python", "train.py"), "dynamic")
    assert other_profiler([11], [stale, unknown_job]) is not None
