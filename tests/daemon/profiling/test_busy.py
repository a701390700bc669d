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
