"""Profiling state that survives a restart: latest summary per workload, rolling p99 baseline,
and the profile directories already ingested. Atomic writes; a bad file is reported, not fatal."""

from __future__ import annotations

import json
import logging
import os
import statistics
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npumon.daemon.model.profile import ProfileSummary

log = logging.getLogger(__name__)

STATE_FILE = "profiling-state.json"
FORMAT_VERSION = 1


@dataclass
class WorkloadState:
    summary: ProfileSummary | None = None
    p99s: list[float] = field(default_factory=list)  # oldest first, at most the window
    last_success: float | None = None
    capture_seconds: float | None = None


def baseline_of(p99s: list[float], min_captures: int) -> float | None:
    """Median of the window's p99 step times: one slow capture does not move it (None if young)."""
    if len(p99s) < min_captures:
        return None
    return float(statistics.median(p99s))


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
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        except OSError as error:
            self._error("unreadable", f"cannot read: {error}")
            return
        try:
            self._from_dict(json.loads(text))
        except (ValueError, KeyError, TypeError) as error:
            self.workloads.clear()
            self.ingested.clear()
            self._error("corrupt", f"ignored, starting empty: {type(error).__name__}: {error}")

    def save(self) -> bool:
        """Write atomically (temp file, fsync, rename); a full disk is logged and counted."""
        data = json.dumps(self._to_dict(), sort_keys=True).encode()
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

    def _to_dict(self) -> dict[str, Any]:
        return {
            "version": FORMAT_VERSION,
            "workloads": {
                name: {
                    "summary": s.summary.to_dict() if s.summary else None,
                    "p99s": s.p99s,
                    "last_success": s.last_success,
                    "capture_seconds": s.capture_seconds,
                }
                for name, s in sorted(self.workloads.items())
            },
            "ingested": dict(sorted(self.ingested.items())),
        }

    def _from_dict(self, data: Any) -> None:
        if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
            raise ValueError(f"not a version {FORMAT_VERSION} npumon profiling state")
        workloads = {}
        for name, item in data["workloads"].items():
            summary = item.get("summary")
            workloads[str(name)] = WorkloadState(
                summary=ProfileSummary.from_dict(summary) if summary else None,
                p99s=[float(v) for v in item.get("p99s", [])][-(self.window + 1) :],
                last_success=_float(item.get("last_success")),
                capture_seconds=_float(item.get("capture_seconds")),
            )
        ingested = {str(k): float(v) for k, v in data.get("ingested", {}).items()}
        self.workloads, self.ingested = workloads, ingested


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


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
