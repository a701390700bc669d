"""The profiling state file on disk: read with a size cap, validate with pydantic, move a bad one
aside (``<name>.corrupt-<UTC time>``, the newest few kept) and write atomically.

Nothing a state file holds can stop the daemon: every problem is a ``StateProblem`` whose reason
the caller counts (`npumon_state_errors_total{reason}`)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import TypeAdapter, ValidationError, with_config

from npumon.daemon.model.profile import FINITE, Comparison, ProfileSummary

FORMAT_VERSION: Literal[1] = 1
# The largest file the settings can write, with room to spare: a summary of up to 64 ranks and
# top_n 100 operators (< 64 KiB), its reference capture's summary and its medians per workload,
# and ~30,000 ingested folders.
# Loading JSON costs ~5x its size in memory, so a file the settings cannot have written (however
# valid) is refused unread rather than loaded.
SUMMARY_BYTES = 64 << 10
MEDIAN_BYTES = 24
INGESTED_BYTES = 4 << 20


def state_file_cap(max_workloads: int, window: int) -> int:
    """Bytes a state file may have for ``max_workloads`` workloads and a baseline ``window``."""
    medians = MEDIAN_BYTES * 2 * (window + 1)  # the baseline's and the slow captures'
    # the latest summary, the reference's and the comparison of the two (under one summary's size)
    return INGESTED_BYTES + max_workloads * (3 * SUMMARY_BYTES + medians)


MAX_STATE_BYTES = state_file_cap(256, 1000)  # the largest settings (config.py's bounds)
KEEP_CORRUPT = 3  # moved-aside files kept for a post-mortem; older ones are deleted
CORRUPT_SUFFIX = ".corrupt-"


@with_config(FINITE)
@dataclass
class WorkloadState:
    summary: ProfileSummary | None = None
    # median step times of the judged captures, oldest first, at most the window + 1; a file
    # of 0.1.0 holds p99s instead, which are left behind (p99s of two steps judged noise)
    medians: list[float] = field(default_factory=list)
    last_success: float | None = None
    capture_seconds: float | None = None
    # added later (defaults keep older files readable):
    # the latest summary's median is the newest of ``medians`` (False: it did not vote, or was
    # judged slow and held out of the baseline)
    entered: bool = True
    # medians of the captures judged slow since ``regressed_since`` (wall time of the first):
    # the new level, should it be accepted (profiling.baseline.accept_regression_after)
    slow: list[float] = field(default_factory=list)
    regressed_since: float | None = None
    # the reference: the newest capture that entered the baseline (deltas are against it), and
    # its raw capture directory when one is kept
    reference: ProfileSummary | None = None
    reference_path: str | None = None
    # msprof attach: the seconds between `start` and `stop` of the latest capture
    attach_seconds: float | None = None
    comparison: Comparison | None = None  # the latest capture against the reference


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class StateFile:
    """The file as JSON; version 1 is what npumon 0.1.0 wrote (a fixture under tests holds one)."""

    version: Literal[1]
    workloads: dict[str, WorkloadState]
    ingested: dict[str, float] = field(default_factory=dict)  # profile dir -> newest mtime
    # profile dirs whose newest mtime is at or before this were dropped from ``ingested`` to
    # keep it within INGESTED_BYTES, and count as ingested (absent from 0.1.0's files)
    ingested_before: float = 0.0


FILE_ADAPTER = TypeAdapter(StateFile)
_ENTRY_OVERHEAD = 32  # an entry's mtime, quotes, colon and comma, over its path


def bound_ingested(
    ingested: dict[str, float], max_bytes: int = INGESTED_BYTES
) -> tuple[dict[str, float], float | None]:
    """The newest entries whose JSON fits in ``max_bytes``, and the newest mtime of those left out
    (None when all fit). Paths are sized as escaped ASCII JSON, never smaller than written."""
    sizes = [(m, len(json.dumps(path)) + _ENTRY_OVERHEAD, path) for path, m in ingested.items()]
    if sum(size for _, size, _ in sizes) <= max_bytes:
        return ingested, None
    kept: dict[str, float] = {}
    total = 0
    for mtime, size, path in sorted(sizes, reverse=True):
        if total + size > max_bytes:
            return kept, mtime  # the newest of those left out: sorted newest first
        kept[path] = mtime
        total += size
    return kept, None


class StateProblem(Exception):
    """A state file that cannot be used; ``reason`` is the counter label."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        self.message = message
        super().__init__(f"{reason}: {message}")


def read_state(path: Path, max_bytes: int = MAX_STATE_BYTES) -> StateFile | None:
    """The validated file, None when there is none; StateProblem for anything else."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise StateProblem("unreadable", f"cannot stat: {error.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise StateProblem("corrupt", f"not a regular file (mode {stat.filemode(info.st_mode)})")
    if info.st_size > max_bytes:
        raise StateProblem(
            "corrupt",
            f"{info.st_size} bytes, over the {max_bytes} byte cap for profiling.max_workloads"
            " and profiling.baseline.captures (not read)",
        )
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as error:
        raise StateProblem("unreadable", f"cannot read: {error.strerror}") from None
    if len(data) > max_bytes:
        raise StateProblem("corrupt", f"grew over the {max_bytes} byte cap while read")
    try:
        return FILE_ADAPTER.validate_json(data)
    except ValidationError as error:
        raise StateProblem("corrupt", first_problem(error)) from None
    except (ValueError, RecursionError, MemoryError) as error:  # belt and braces: never fatal
        raise StateProblem("corrupt", f"{type(error).__name__}") from None


def first_problem(error: ValidationError) -> str:
    """Where and what, never the offending input (the file's content stays out of the log)."""
    first = error.errors(include_input=False, include_url=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "(top level)"
    return f"{error.error_count()} problem(s), first at {where}: {first['msg']}"


def move_aside(path: Path, now: float, keep: int = KEEP_CORRUPT) -> Path | None:
    """Rename a bad file (or directory) to ``<name>.corrupt-<UTC>``; None if that failed."""
    stamp = datetime.fromtimestamp(now, UTC).strftime("%Y%m%dT%H%M%S%fZ")
    target = path.with_name(f"{path.name}{CORRUPT_SUFFIX}{stamp}")
    if target.exists():  # the same microsecond twice: leave the first one
        return None
    try:
        os.replace(path, target)
    except OSError:
        return None
    _prune(path, keep)
    return target


def _prune(path: Path, keep: int) -> None:
    aside = sorted(path.parent.glob(f"{path.name}{CORRUPT_SUFFIX}*"))
    for old in aside[: max(0, len(aside) - keep)]:
        with contextlib.suppress(OSError):
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old, ignore_errors=True)
            else:
                old.unlink()


def write_state(path: Path, file: StateFile) -> None:
    """Atomic write of the whole state; OSError for the caller to count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, FILE_ADAPTER.dump_json(file))


def atomic_write(path: Path, data: bytes) -> None:
    """Readers see the old file or the new one, never half of one."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
