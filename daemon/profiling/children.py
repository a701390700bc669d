"""The capture's child processes, so that ``Profiler.stop`` can kill them from another thread.

Every child (the msprof prompt, msprof --export, the analysis worker) runs in its own process
group and is registered here while it runs; ``stop`` kills every registered group and refuses
new ones, and interrupts the capture's waits."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence

from npumon.daemon.runner import CommandResult


class Children:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: set[int] = set()
        self.stopped = threading.Event()

    def track(self, pid: int) -> None:
        """Register a process group; killed at once when stop() came first."""
        with self._lock:
            self._groups.add(pid)
            late = self.stopped.is_set()
        if late:
            _kill(pid)

    def untrack(self, pid: int) -> None:
        with self._lock:
            self._groups.discard(pid)

    def running(self) -> tuple[int, ...]:
        with self._lock:
            return tuple(sorted(self._groups))

    def stop(self) -> None:
        """Refuse new children, kill every running one's process group, end every wait."""
        with self._lock:
            self.stopped.set()
            groups = tuple(self._groups)
        for pid in groups:
            _kill(pid)

    def sleep(self, seconds: float) -> None:
        """time.sleep that stop() cuts short."""
        self.stopped.wait(seconds)

    def run(
        self, argv: Sequence[str], timeout: float, *, stdin: str | None = None
    ) -> CommandResult:
        """run_command's contract (argv, deadline, group killed), reachable by stop()."""
        started = time.monotonic()
        if self.stopped.is_set():
            return CommandResult(tuple(argv), "", "npumon is stopping", None, 0.0)
        process = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
            start_new_session=True,
        )
        self.track(process.pid)
        try:
            stdout, stderr = process.communicate(input=stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(process.pid)
            stdout, stderr = process.communicate()
            return CommandResult(tuple(argv), stdout, stderr, None,
                                 time.monotonic() - started, timed_out=True)
        finally:
            if process.poll() is None:
                _kill(process.pid)
                process.wait()
            self.untrack(process.pid)
        return CommandResult(tuple(argv), stdout, stderr, process.returncode,
                             time.monotonic() - started)


def _kill(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
