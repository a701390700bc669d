"""The only place npumon starts a command: argv list, timeout, whole process group killed."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class CommandResult:
    argv: tuple[str, ...]
    stdout: str
    stderr: str
    exit_code: int | None  # None when the command timed out or could not start
    duration_seconds: float
    timed_out: bool = False
    not_found: bool = False


class CommandRunner(Protocol):
    """run_command's seam for callers that may feed the command's stdin."""

    def __call__(
        self, argv: Sequence[str], timeout: float, *, stdin: str | None = None
    ) -> CommandResult: ...


def resolve_command(argv: Sequence[str]) -> tuple[str, ...]:
    """A bare program name is looked up on PATH, then beside our own interpreter (a venv's bin),
    so `npumon-sim-npu-smi` works from an unactivated virtualenv."""
    program = argv[0]
    if os.sep not in program and shutil.which(program) is None:
        sibling = os.path.join(os.path.dirname(sys.executable), program)
        if os.access(sibling, os.X_OK):
            return (sibling, *argv[1:])
    return tuple(argv)


def _kill_group(process: subprocess.Popen[str]) -> None:
    # npu-smi may fork helpers; killing only the child would leave them holding the pipes.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def run_command(
    argv: Sequence[str],
    timeout: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
) -> CommandResult:
    """Run argv with a deadline; on timeout kill its process group and return what was read.

    ``stdin`` is written to the command's standard input (else it reads /dev/null)."""
    started = clock()
    try:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
            env=env,
        )
    except (FileNotFoundError, PermissionError, NotADirectoryError) as error:
        return CommandResult(tuple(argv), "", str(error), None, clock() - started, not_found=True)
    try:
        stdout, stderr = process.communicate(input=stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        stdout, stderr = process.communicate()
        return CommandResult(tuple(argv), stdout, stderr, None, clock() - started, timed_out=True)
    finally:
        if process.poll() is None:
            _kill_group(process)
            process.wait()
    return CommandResult(tuple(argv), stdout, stderr, process.returncode, clock() - started)
