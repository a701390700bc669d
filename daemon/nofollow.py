"""Open and copy files below a trusted directory without following links: a job can swap any
of its files or folders for a symlink (to a file only root may read) between a check by path and
an open by path. Here every component below the trusted root is opened with O_NOFOLLOW relative
to its parent's descriptor, and what is read is the descriptor whose type was checked."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from pathlib import Path

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO planted in a profile must not block; fstat refuses it after
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
MAX_COPY_DEPTH = 16  # a profile is a few levels deep (PROF_*/device_0/data, *_ascend_pt/...)


def open_below(root: Path, path: Path, flags: int) -> int:
    """``path`` opened with ``flags``, every component below ``root`` opened with O_NOFOLLOW
    relative to its parent's descriptor."""
    parts = path.relative_to(root).parts
    if ".." in parts or not parts:
        raise OSError(errno.EINVAL, "not a path below its root", str(path))
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            fd, parent = _at(part, DIR_FLAGS, fd), fd
            os.close(parent)
        return _at(parts[-1], flags, fd)
    finally:
        os.close(fd)


def write_in(directory: Path, name: str, data: bytes, mode: int = 0o644) -> None:
    """``data`` written whole as ``directory/name`` without following a link: ``directory`` is
    opened with O_NOFOLLOW (a symlink in its place is refused with ELOOP), the data goes to a new
    random name created in it with O_CREAT|O_EXCL|O_NOFOLLOW, which is then renamed over
    ``name`` within it: a link planted at either name is never written through (one at
    ``name`` is replaced). A reader sees the old file or the new one, never half."""
    dir_fd = _at(str(directory), DIR_FLAGS, None)
    try:
        partial = f".{name}.{secrets.token_hex(8)}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(partial, flags, mode, dir_fd=dir_fd)
        try:
            with open(fd, "wb") as out:
                out.write(data)
            os.replace(partial, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(partial, dir_fd=dir_fd)
            raise
    finally:
        os.close(dir_fd)


def copy_tree(source: Path, target: Path, root: Path) -> None:
    """Copy the directory ``source`` (below the trusted ``root``) to a new ``target`` without
    following a link anywhere below ``root``: each entry is opened with O_NOFOLLOW relative to
    its directory's descriptor and copied from the descriptor whose type was checked, so an
    entry swapped for a link after the listing is left out, as are links, FIFOs and devices,
    and directories deeper than MAX_COPY_DEPTH. Files and folders are created 0600 / 0700."""
    source, root = Path(os.path.abspath(source)), Path(os.path.abspath(root))
    _copy_dir(open_below(root, source, DIR_FLAGS), target, MAX_COPY_DEPTH)


def _copy_dir(fd: int, target: Path, depth: int) -> None:
    try:
        info = os.fstat(fd)
        os.mkdir(target, 0o700)
        with os.scandir(fd) as entries:
            names = [entry.name for entry in entries]
        for name in names:
            try:
                child = _at(name, FILE_FLAGS, fd)
            except OSError:  # a link (ELOOP), or gone since the listing
                continue
            mode = os.fstat(child).st_mode
            if stat.S_ISDIR(mode) and depth > 0:
                _copy_dir(child, target / name, depth - 1)  # closes child
            elif stat.S_ISREG(mode):
                _copy_file(child, target / name)
            else:
                os.close(child)
        os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
    finally:
        os.close(fd)


def _copy_file(fd: int, target: Path) -> None:
    """Copy the open regular file ``fd`` (closed after) to a new file ``target``."""
    os.set_blocking(fd, True)
    with open(fd, "rb") as source:
        info = os.fstat(fd)
        with open(
            os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), "wb"
        ) as out:
            shutil.copyfileobj(source, out)
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))


def _at(name: str, flags: int, dir_fd: int | None) -> int:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as error:  # O_NOFOLLOW met a link: ELOOP, or ENOTDIR with O_DIRECTORY
        if error.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(name, dir_fd):
            raise OSError(error.errno, f"{name} is a symlink (not followed)") from None
        raise


def _is_link(name: str, dir_fd: int | None) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False
