"""One daemon per state directory: an flock on its `lock` file, held for the process's life."""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

LOCK_FILE = "lock"  # as Prometheus locks its data directory


class StateLockError(Exception):
    """The state directory cannot be locked: another daemon holds it (``held``), or it is not
    writable or cannot be made."""

    def __init__(self, message: str, *, held: bool = False) -> None:
        super().__init__(message)
        self.held = held


def hold_state_lock(directory: Path, *, create: bool) -> int | None:
    """Lock ``directory``/lock and return its descriptor, kept open by nobody's close: the
    kernel drops the lock when the process ends, however it ends, and children do not
    inherit it (a hung npu-smi cannot keep it). None when the directory does not exist and
    ``create`` is false (profiling off: nothing is written there)."""
    path = directory / LOCK_FILE
    try:
        if create:
            directory.mkdir(parents=True, exist_ok=True)
        elif not directory.is_dir():
            return None
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as error:
        raise StateLockError(
            f"cannot lock {path}: {error.strerror}; make state_directory writable by npumon's "
            "user, or point it elsewhere"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        pid = os.read(fd, 32).strip()  # the holder's pid; anything else is not repeated
        holder = pid.decode() if pid.isdigit() else "unknown"
        os.close(fd)
        if error.errno not in (errno.EWOULDBLOCK, errno.EACCES):
            raise
        raise StateLockError(
            f"another npumon (pid {holder}) holds {path}: two daemons on one state directory "
            "would overwrite each other's profiling state; stop that one, or give this one its "
            "own state_directory",
            held=True,
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd
