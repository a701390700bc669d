"""Back off when someone else's profiler is already on the job (one interactive user per job)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from npumon.daemon.profiling.workloads import ProcessInfo

_PID_LIST = re.compile(r"--pid[= ]([\d,]+)")


def other_profiler(
    pids: Sequence[int], processes: Iterable[ProcessInfo], own: Iterable[int] = ()
) -> str | None:
    """A description of another profiler targeting one of ``pids``, or None.

    An msprof attached with ``--pid`` to one of them, or a `dyno ... nputrace` request (msMonitor
    traces every job that registered with dynolog, so any one counts). An msprof can only have
    attached to a process that existed before it started: one older than the process now holding
    the PID was attached to an earlier process of that PID (PIDs are reused) and does not count.
    """
    targets = set(pids)
    mine = set(own)
    processes = list(processes)
    started = {i.pid: i.started for i in processes if i.pid in targets}
    for info in processes:
        if info.pid in mine:
            continue
        argv = " ".join(info.cmdline)
        # the program, or the script an interpreter runs (`python .../msprof`)
        programs = [a.rsplit("/", 1)[-1] for a in info.cmdline[:2]] or [info.name]
        if any("msprof" in p for p in programs):
            found = _PID_LIST.search(argv)
            attached = {int(p) for p in found.group(1).split(",") if p} if found else set()
            on_ours = sorted(p for p in attached & targets if _could_attach(info, started.get(p)))
            if "--dynamic=on" in argv and on_ours:
                return f"msprof pid {info.pid} is attached to pid {on_ours}"
        if "dyno" in programs and "nputrace" in argv:
            return f"dyno nputrace pid {info.pid} is tracing"
    return None


def _could_attach(profiler: ProcessInfo, target_started: float | None) -> bool:
    """False only when both start times are known and the profiler is the older one."""
    return profiler.started is None or target_started is None or profiler.started >= target_started
