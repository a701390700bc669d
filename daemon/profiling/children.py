"""The capture's child processes, so that ``Profiler.stop`` can kill them from another thread.

Every child (the msprof prompt, msprof --export, the analysis worker) runs in its own process
group, registered in this capture side's own ``ProcessGroups`` (the runner's mechanism) while
it runs; ``stop`` kills every registered group, refuses new ones and ends the capture's waits.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from npumon.daemon.runner import CommandResult, ProcessGroups, kill_group, run_command


class Children:
    def __init__(self) -> None:
        self._groups = ProcessGroups()
        self.stopped = threading.Event()

    def track(self, pid: int) -> None:
        """Register a child started elsewhere (the msprof prompt); killed at once after stop."""
        if not self._groups.add(pid):
            kill_group(pid)

    def untrack(self, pid: int) -> None:
        self._groups.remove(pid)

    def running(self) -> tuple[int, ...]:
        return tuple(sorted(self._groups.live()))

    def stop(self) -> None:
        """Refuse new children, kill every running one's process group, end every wait."""
        self.stopped.set()
        self._groups.terminate_all()

    def kill_running(self) -> int:
        """Kill every running child's process group (their commands return ``cancelled``);
        later children still start. How many."""
        return self._groups.terminate_all(refuse_new=False)

    def sleep(self, seconds: float) -> None:
        """time.sleep that stop() cuts short."""
        self.stopped.wait(seconds)

    def run(
        self, argv: Sequence[str], timeout: float, *, stdin: str | None = None
    ) -> CommandResult:
        """run_command (deadline that holds, output cap, group killed), reachable by stop()."""
        return run_command(argv, timeout, stdin=stdin, groups=self._groups)
