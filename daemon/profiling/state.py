"""Profiling state that survives a restart: latest summary per workload, rolling p99 baseline,
and the profile directories already ingested. Atomic writes; a bad file is reported, not fatal."""

from __future__ import annotations

import logging
import os
import statistics
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import TypeAdapter, ValidationError

from npumon.daemon.model.profile import ProfileSummary, Thresholds

log = logging.getLogger(__name__)

STATE_FILE = "profiling-state.json"
FORMAT_VERSION: Literal[1] = 1


@dataclass
class WorkloadState:
    summary: ProfileSummary | None = None
    p99s: list[float] = field(default_factory=list)  # oldest first, at most the window
    last_success: float | None = None
    capture_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class StateFile:
    """The file as JSON; version 1 is what npumon 0.1.0 wrote (a fixture under tests holds one)."""

    version: Literal[1]
    workloads: dict[str, WorkloadState]
    ingested: dict[str, float] = field(default_factory=dict)  # profile dir -> newest mtime


_FILE = TypeAdapter(StateFile)


def baseline_of(p99s: list[float], min_captures: int) -> float | None:
    """Median of the window's p99 step times: one slow capture does not move it (None if young)."""
    if len(p99s) < min_captures:
        return None
    return float(statistics.median(p99s))


DEFAULT_THRESHOLDS = Thresholds()


def is_regression(
    p99_seconds: float, baseline_seconds: float | None, thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> bool:
    """A p99 step time more than ``regression_ratio`` above the workload's baseline."""
    if baseline_seconds is None or baseline_seconds <= 0:
        return False
    return p99_seconds > baseline_seconds * (1.0 + thresholds.regression_ratio)


class ProfileState:
    """In-memory state plus its JSON file under the state directory (one writer: the profiler)."""

    def __init__(self, directory: Path, window: int = 20, min_captures: int = 3) -> None:
        self.path = directory / STATE_FILE
        self.window = window
        self.min_captures = min_captures
        self.workloads: dict[str, WorkloadState] = {}
        self.ingested: dict[str, float] = {}  # profile dir -> newest mtime when analysed
        self.errors: Counter[str] = Counter()

    def record(
        self, summary: ProfileSummary, ended_at: float, capture_seconds: float | None
    ) -> float | None:
        """Store a new summary; returns the baseline it is judged against (None while young)."""
        state = self.workloads.setdefault(summary.workload, WorkloadState())
        state.summary = summary
        state.last_success = ended_at
        state.capture_seconds = capture_seconds
        if summary.step is not None:
            # one extra slot: the newest p99 is judged against the `window` before it
            state.p99s = (state.p99s + [summary.step.p99_seconds])[-(self.window + 1) :]
        return self.baseline(summary.workload)

    def baseline(self, workload: str) -> float | None:
        """Median p99 of the captures before the latest one (the latest is what is judged)."""
        state = self.workloads.get(workload)
        if state is None:
            return None
        latest_has_step = state.summary is not None and state.summary.step is not None
        before = state.p99s[:-1] if latest_has_step else state.p99s
        return baseline_of(before[-self.window :], self.min_captures)

    def load(self) -> None:
        """Read the file if there is one; a corrupt or unreadable file is logged and counted."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as error:
            self._error("unreadable", f"cannot read: {error}")
            return
        try:
            loaded = _FILE.validate_json(data)
        except ValidationError as error:
            self.workloads.clear()
            self.ingested.clear()
            self._error("corrupt", f"ignored, starting empty: {_first_problem(error)}")
            return
        for item in loaded.workloads.values():
            item.p99s = item.p99s[-(self.window + 1) :]  # the window may have shrunk
        self.workloads, self.ingested = loaded.workloads, loaded.ingested

    def save(self) -> bool:
        """Write atomically (temp file, fsync, rename); a full disk is logged and counted."""
        file = StateFile(FORMAT_VERSION, dict(sorted(self.workloads.items())),
                         dict(sorted(self.ingested.items())))
        data = _FILE.dump_json(file)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, data)
        except OSError as error:
            self._error("write_failed", f"cannot write: {error}")
            return False
        return True

    def _error(self, reason: str, message: str) -> None:
        self.errors[reason] += 1
        log.warning("event=state_%s path=%s message=%r", reason, self.path, message)


def _first_problem(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "(top level)"
    return f"{error.error_count()} problem(s), first at {where}: {first['msg']}"


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
