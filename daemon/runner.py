"""The only place npumon starts a command: argv list, deadline, bounded output, process group.

Every command runs in its own process group (session). ``run_command`` reads its pipes itself,
with a hard deadline and a cap on the bytes it keeps: a command that prints without end, or a
helper that keeps the pipe open after the command exited, costs at most the cap and the
deadline. Live groups are registered in a ``ProcessGroups`` so shutdown can kill them all at once
(``terminate_all``).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024  # stdout and stderr together, for any command
_CHUNK = 65536
_TICK = 0.1  # the longest a read waits before looking at the deadline and at terminate_all
_PIPE_BUF = 512  # a write to a pipe select() called writable never blocks at this size


@dataclass(frozen=True, slots=True)
class CommandResult:
    argv: tuple[str, ...]
    stdout: str
    stderr: str
    exit_code: int | None  # None when the command did not finish by itself, or could not start
    duration_seconds: float
    timed_out: bool = False
    not_found: bool = False
    output_too_large: bool = False  # killed once its output passed max_output_bytes
    cancelled: bool = False  # killed by ProcessGroups.terminate_all (shutdown)


class CommandRunner(Protocol):
    """run_command's seam for callers that may feed the command's stdin."""

    def __call__(
        self, argv: Sequence[str], timeout: float, *, stdin: str | None = None
    ) -> CommandResult: ...


def kill_group(pgid: int) -> None:
    """SIGKILL a whole process group (gone already: nothing to do)."""
    # npu-smi may fork helpers; killing only the child would leave them holding the pipes.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class ProcessGroups:
    """The process groups of the commands in flight.

    A group is registered from its start until its leader is reaped, so its id can never be a
    recycled one when ``terminate_all`` kills it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: set[int] = set()
        self._killed: set[int] = set()  # live groups terminate_all killed
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def live(self) -> frozenset[int]:
        with self._lock:
            return frozenset(self._live)

    def add(self, pgid: int) -> bool:
        """Register a new group; False once terminate_all was called (the caller kills it)."""
        with self._lock:
            if self._closed:
                return False
            self._live.add(pgid)
            return True

    def remove(self, pgid: int) -> bool:
        """Unregister a group; True when terminate_all killed it."""
        with self._lock:
            self._live.discard(pgid)
            killed = pgid in self._killed
            self._killed.discard(pgid)
            return killed

    def terminate_all(self, *, refuse_new: bool = True) -> int:
        """SIGKILL every live group at once; how many. Their run_command calls return
        ``cancelled`` within a tick, and with ``refuse_new`` every later call is cancelled
        before it starts (so no command outlives a daemon that is shutting down)."""
        with self._lock:
            self._closed = self._closed or refuse_new
            groups = sorted(self._live)
            for pgid in groups:
                kill_group(pgid)
            self._killed.update(groups)
        return len(groups)


PROCESS_GROUPS = ProcessGroups()

# How the daemon starts a Python child of its own (the analysis worker, the DCMI helper): -P, so
# no module is taken from the working directory, while the rest of sys.path (PYTHONPATH, the
# user site) is the daemon's own, so what the daemon finds installed, the child imports.
CHILD_PYTHON = (sys.executable, "-P")


def terminate_all() -> int:
    """Kill every command npumon has in flight and refuse new ones: for SIGTERM handling."""
    return PROCESS_GROUPS.terminate_all()


def resolve_command(argv: Sequence[str]) -> tuple[str, ...]:
    """A bare program name is looked up on PATH, then beside our own interpreter (a venv's bin),
    so `npumon-sim-npu-smi` works from an unactivated virtualenv."""
    program = argv[0]
    if os.sep not in program and shutil.which(program) is None:
        sibling = os.path.join(os.path.dirname(sys.executable), program)
        if os.access(sibling, os.X_OK):
            return (sibling, *argv[1:])
    return tuple(argv)


class _Pipes:
    """Reads stdout and stderr (and feeds stdin) of one process until EOF or a stop."""

    def __init__(self, process: subprocess.Popen[bytes], stdin: bytes | None, limit: int):
        self.process = process
        self.limit = limit
        self.size = 0
        self.out: dict[str, list[bytes]] = {"stdout": [], "stderr": []}
        self._names: dict[int, str] = {}
        self._input = memoryview(stdin or b"")
        self._fed = 0

    def pump(self, deadline: float, groups: ProcessGroups) -> str:
        """ "eof", "timeout", "too_large" or "cancelled": why the reading stopped."""
        with selectors.DefaultSelector() as selector:
            for name, stream in (("stdout", self.process.stdout), ("stderr", self.process.stderr)):
                if stream is not None:
                    selector.register(stream, selectors.EVENT_READ)
                    self._names[stream.fileno()] = name
            if self.process.stdin is not None:
                selector.register(self.process.stdin, selectors.EVENT_WRITE)
            while selector.get_map():
                if groups.closed:
                    return "cancelled"
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return "timeout"
                for key, _ in selector.select(min(remaining, _TICK)):
                    if not self._service(selector, key):
                        return "too_large"
        return "eof"

    def _service(self, selector: selectors.BaseSelector, key: selectors.SelectorKey) -> bool:
        if key.fileobj is self.process.stdin:
            self._feed(selector, key)
            return True
        data = os.read(key.fd, _CHUNK)
        if not data:
            selector.unregister(key.fileobj)
            return True
        self.size += len(data)
        self.out[self._names[key.fd]].append(data)
        return self.size <= self.limit

    def _feed(self, selector: selectors.BaseSelector, key: selectors.SelectorKey) -> None:
        chunk = self._input[self._fed : self._fed + _PIPE_BUF]
        try:
            self._fed += os.write(key.fd, chunk) if chunk else 0
        except BrokenPipeError:
            chunk = memoryview(b"")  # the command stopped reading: that is its business
        if not chunk or self._fed >= len(self._input):
            selector.unregister(key.fileobj)
            key.fileobj.close()  # type: ignore[union-attr]

    def text(self, name: str) -> str:
        return b"".join(self.out[name]).decode("utf-8", errors="replace")


def _exited(pid: int, deadline: float, groups: ProcessGroups) -> bool:
    """Wait (without reaping) for the leader to exit; False at the deadline or on shutdown."""
    pause = 0.001
    while True:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:
            return True  # reaped elsewhere: it has exited
        if groups.closed or time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, _TICK)


def _finish(process: subprocess.Popen[bytes], groups: ProcessGroups) -> bool:
    """Kill what is left of the group, then unregister it, then reap the leader: in that
    order, so the group id is never recycled while it is registered. True when
    terminate_all had killed it."""
    kill_group(process.pid)
    killed = groups.remove(process.pid)
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    process.wait()
    return killed


def _start(
    argv: Sequence[str], env: dict[str, str] | None, stdin: str | None
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: killed whole, never alone
        env=env,
    )


def run_command(
    argv: Sequence[str],
    timeout: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    groups: ProcessGroups = PROCESS_GROUPS,
) -> CommandResult:
    """Run argv with a deadline that holds; kill its process group whenever it ends.

    ``stdin`` is written to the command's standard input (else it reads /dev/null). Output is
    complete only once both pipes closed and the command exited, all before the deadline:
    else the result is ``timed_out``. Past ``max_output_bytes`` the command is killed and the
    result is ``output_too_large`` with its stdout dropped."""
    started = clock()
    deadline = time.monotonic() + timeout
    argv = tuple(argv)
    if groups.closed:
        return CommandResult(argv, "", "", None, clock() - started, cancelled=True)
    try:
        process = _start(argv, env, stdin)
    except (FileNotFoundError, PermissionError, NotADirectoryError) as error:
        return CommandResult(argv, "", str(error), None, clock() - started, not_found=True)
    pipes = _Pipes(process, None if stdin is None else stdin.encode(), max_output_bytes)
    ending = "cancelled"
    try:
        if groups.add(process.pid):
            ending = pipes.pump(deadline, groups)
        if ending == "eof" and not _exited(process.pid, deadline, groups):
            ending = "cancelled" if groups.closed else "timeout"
    finally:
        if _finish(process, groups):
            ending = "cancelled"  # its EOF, or its death, was terminate_all's doing
    return _result(argv, pipes, ending, process.returncode, clock() - started)


def _result(
    argv: tuple[str, ...], pipes: _Pipes, ending: str, code: int, duration: float
) -> CommandResult:
    stderr = pipes.text("stderr")
    if ending == "too_large":
        return CommandResult(argv, "", stderr, None, duration, output_too_large=True)
    stdout = pipes.text("stdout")
    if ending == "eof":
        return CommandResult(argv, stdout, stderr, code, duration)
    return CommandResult(
        argv,
        stdout,
        stderr,
        None,
        duration,
        timed_out=ending == "timeout",
        cancelled=ending == "cancelled",
    )
