"""Open a profile's files without following links: the worker runs as root, the files are a job's.

A path checked and then opened by name can be swapped for a symlink in between (to a file only
root may read, which the analysis would then report). Here every directory below the analysis
root and the file itself are opened with O_NOFOLLOW, each relative to its parent's descriptor,
and the descriptor that is read is the one checked (a regular file). The roots are the paths
``layout.find_units`` was given in this process and the trusted folder above them the worker
was told (the ingest path: the job's own folders below it are not trusted), the outermost one
that holds a file counting; a file outside every root is confined to its own folder (its last
component is never a link).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import IO

from npumon.daemon.nofollow import FILE_FLAGS, open_below

_ROOTS: set[Path] = set()  # absolute, as given (a link in the root's own path is the caller's)


def add_root(root: Path) -> None:
    """Files under ``root`` are opened from ``root`` down, no link followed below it."""
    _ROOTS.add(Path(os.path.abspath(root)))


def forget_roots() -> None:
    _ROOTS.clear()


def _root_of(path: Path) -> Path:
    roots = [r for r in _ROOTS if path.is_relative_to(r) and path != r]
    return min(roots, key=lambda r: len(r.parts)) if roots else path.parent


def open_fd(path: Path) -> int:
    """A descriptor of the regular file ``path``; OSError (strerror says why) when a link
    stands anywhere below its root, or it is not a regular file."""
    path = Path(os.path.abspath(path))
    file = open_below(_root_of(path), path, FILE_FLAGS)
    info = os.fstat(file)
    if not stat.S_ISREG(info.st_mode):
        os.close(file)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    os.set_blocking(file, True)
    return file


def open_binary(path: Path) -> IO[bytes]:
    return open(open_fd(path), "rb")


def open_text(path: Path, *, newline: str | None = None) -> IO[str]:
    """UTF-8, undecodable bytes replaced (as every profiler table is read)."""
    return open(open_fd(path), encoding="utf-8", errors="replace", newline=newline)


def read_text(path: Path) -> str:
    with open_text(path) as handle:
        return handle.read()
