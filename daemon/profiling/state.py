"""Profiling state that survives a restart: latest summary per workload, the rolling baseline of
its judged captures' median step times (gate.py judges against it; a capture judged slow stays
out of it), the reference capture the deltas are computed against,
and the profile directories already ingested. Atomic writes; a bad file is moved aside, counted
and replaced by an empty state, never fatal (the file itself: statefile.py)."""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from npumon.daemon.model.profile import Comparison, ProfileSummary, Thresholds
from npumon.daemon.profiling.gate import Baseline, Verdict, baseline_of, judge, votes
from npumon.daemon.profiling.statefile import (
    FORMAT_VERSION,
    INGESTED_BYTES,
    StateFile,
    StateProblem,
    WorkloadState,
    atomic_write,
    bound_ingested,
    move_aside,
    read_state,
    state_file_cap,
    write_state,
)

__all__ = [
    "STATE_FILE",
    "ProfileState",
    "WorkloadState",
    "atomic_write",
]

log = logging.getLogger(__name__)

STATE_FILE = "profiling-state.json"


class ProfileState:
    """In-memory state plus its JSON file under the state directory (one writer: the profiler)."""

    def __init__(
        self,
        directory: Path,
        window: int = 20,
        min_captures: int = 5,
        clock: Callable[[], float] = time.time,
        thresholds: Thresholds | None = None,
        max_workloads: int = 256,
        ingested_bytes: int = INGESTED_BYTES,
        accept_after: float | None = None,
    ) -> None:
        self.path = directory / STATE_FILE
        self.max_workloads = max_workloads  # beyond: the least recently analysed is dropped
        self.clock = clock
        self.window = window
        self.min_captures = min_captures
        self.thresholds = thresholds or Thresholds()
        self.accept_after = accept_after  # seconds a regression lasts before it is the new level
        self.workloads: dict[str, WorkloadState] = {}
        self.ingested: dict[str, float] = {}  # profile dir -> newest mtime when analysed
        self.ingested_before = 0.0  # dirs this old count as ingested (statefile.StateFile)
        self.ingested_bytes = ingested_bytes  # the bound of ``ingested`` as JSON
        self.errors: Counter[str] = Counter()

    def record(
        self,
        summary: ProfileSummary,
        ended_at: float,
        capture_seconds: float | None,
        raw_path: str | None = None,
        attach_seconds: float | None = None,
        comparison: Comparison | None = None,
    ) -> Verdict:
        """Store a new summary; returns the gate's verdict on it (against the judged captures
        before it). A capture too short to judge is kept as the latest, out of the baseline; so
        is one judged slow: the baseline stays pinned at the pace before the regression until
        the job recovers (a capture within the band) or the new level is accepted (after
        ``accept_after`` seconds of regression, or ``accept``)."""
        state = self.workloads.setdefault(summary.workload, WorkloadState())
        before = baseline_of(state.medians[-self.window :], self.min_captures, self.thresholds)
        state.summary = summary
        state.last_success = ended_at
        state.capture_seconds = capture_seconds
        state.attach_seconds = attach_seconds
        state.comparison = comparison
        step = summary.step
        state.entered = False
        if step is not None and votes(step, self.thresholds):
            if judge(step, before, self.thresholds).regressed:
                state.slow = (state.slow + [step.p50_seconds])[-(self.window + 1) :]
                if state.regressed_since is None:
                    state.regressed_since = ended_at
                held = ended_at - state.regressed_since
                if self.accept_after is not None and held >= self.accept_after:
                    log.warning(
                        "event=step_regression_accepted workload=%s seconds=%.0f "
                        "median_seconds=%.6f",
                        summary.workload,
                        held,
                        step.p50_seconds,
                    )
                    self._enter(state, state.slow, raw_path)
            else:
                self._enter(state, state.medians + [step.p50_seconds], raw_path)
        self._keep_newest()
        return self.verdict(summary.workload)

    def _enter(self, state: WorkloadState, medians: list[float], raw_path: str | None) -> None:
        """The latest capture enters the baseline (one extra slot: the newest median is judged
        against the ``window`` before it) and becomes the reference; a regression ends."""
        state.medians = medians[-(self.window + 1) :]
        state.entered = True
        state.slow = []
        state.regressed_since = None
        state.reference = state.summary
        state.reference_path = raw_path

    def accept(self, workload: str) -> bool:
        """Accept the workload's current pace: its baseline starts over from the next captures
        (the latest, if judged slow, is the first); False when the workload is unknown."""
        state = self.workloads.get(workload)
        if state is None:
            return False
        state.medians = state.slow[-1:] if state.regressed_since is not None else []
        state.entered = bool(state.medians)
        state.slow = []
        state.regressed_since = None
        if state.entered:
            state.reference = state.summary
        return True

    def _keep_newest(self) -> None:
        """At most ``max_workloads``: the least recently analysed go, their baselines too."""
        if len(self.workloads) > self.max_workloads:
            newest = sorted(self.workloads.items(), key=lambda item: item[1].last_success or 0.0)
            self.workloads = dict(newest[-self.max_workloads :])

    def baseline(self, workload: str) -> Baseline | None:
        """The judged captures before the latest one (the latest is what is judged)."""
        state = self.workloads.get(workload)
        if state is None:
            return None
        latest = state.summary.step if state.summary is not None else None
        entered = state.entered and votes(latest, self.thresholds)
        before = state.medians[:-1] if entered else state.medians
        return baseline_of(before[-self.window :], self.min_captures, self.thresholds)

    def next_baseline(self, workload: str) -> Baseline | None:
        """What the workload's next capture will be judged against: its judged captures so far."""
        state = self.workloads.get(workload)
        if state is None:
            return None
        return baseline_of(state.medians[-self.window :], self.min_captures, self.thresholds)

    def verdict(self, workload: str) -> Verdict:
        state = self.workloads.get(workload)
        step = state.summary.step if state is not None and state.summary is not None else None
        return judge(step, self.baseline(workload), self.thresholds)

    def reference(self, workload: str) -> ProfileSummary | None:
        """The summary the workload's captures are compared with (deltas), if any."""
        state = self.workloads.get(workload)
        return None if state is None else state.reference

    def load(self) -> None:
        """Read the file if there is one; a bad one is moved aside, logged and counted."""
        try:
            loaded = read_state(self.path, state_file_cap(self.max_workloads, self.window))
        except StateProblem as problem:
            self.workloads.clear()
            self.ingested.clear()
            self.ingested_before = 0.0
            aside = move_aside(self.path, self.clock())
            self._error(
                problem.reason,
                f"starting empty, moved aside to "
                f"{aside.name if aside else '(could not move it)'}: {problem.message}",
            )
            return
        if loaded is None:
            return
        for item in loaded.workloads.values():
            item.medians = item.medians[-(self.window + 1) :]  # the window may have shrunk
            item.slow = item.slow[-(self.window + 1) :]
        self.workloads, self.ingested = loaded.workloads, loaded.ingested
        self.ingested_before = loaded.ingested_before
        self._keep_newest()  # the cap may have shrunk

    def prune_ingested(self, roots: Sequence[Path]) -> int:
        """Forget ingested dirs that no longer exist, so the list does not grow for ever; the
        number forgotten. Entries under an ingest path that is itself missing (a storage not
        mounted right now) are kept, so its profiles are not all analysed again on its return."""
        missing_roots = [root for root in roots if not os.path.lexists(root)]
        gone = [
            path
            for path in self.ingested
            if not os.path.lexists(path)
            and not any(Path(path).is_relative_to(root) for root in missing_roots)
        ]
        for path in gone:
            del self.ingested[path]
        return len(gone)

    def _bound_ingested(self) -> None:
        """Within ``ingested_bytes``: the oldest entries go, and every dir at least as old
        counts as ingested from then on (else the oldest would be analysed again each pass)."""
        self.ingested, dropped_before = bound_ingested(self.ingested, self.ingested_bytes)
        if dropped_before is not None:
            self.ingested_before = max(self.ingested_before, dropped_before)

    def save(self) -> bool:
        """Write atomically (temp file, fsync, rename); a full disk is logged and counted."""
        self._bound_ingested()
        file = StateFile(
            FORMAT_VERSION,
            dict(sorted(self.workloads.items())),
            dict(sorted(self.ingested.items())),
            self.ingested_before,
        )
        try:
            write_state(self.path, file)
        except OSError as error:
            self._error("write_failed", f"cannot write: {error.strerror or error}")
            return False
        return True

    def _error(self, reason: str, message: str) -> None:
        self.errors[reason] += 1
        log.warning("event=state_%s path=%s message=%r", reason, self.path, message)
