"""Jobs run every N seconds on the monotonic clock, so a wall-clock step moves no run."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

log = logging.getLogger(__name__)


class Clock(Protocol):
    """What the scheduler reads time from and waits on (tests: a clock they advance)."""

    def now(self) -> float: ...

    def wait(self, event: threading.Event, seconds: float) -> None:
        """Return once ``event`` is set or ``seconds`` have passed on this clock."""


class MonotonicClock:
    def now(self) -> float:
        return time.monotonic()

    def wait(self, event: threading.Event, seconds: float) -> None:
        event.wait(seconds)  # a monotonic wait in CPython (sem_clockwait on CLOCK_MONOTONIC)


@dataclass
class _Job:
    func: Callable[[], object]
    every: float
    offset: float
    wake: threading.Event = field(default_factory=threading.Event)


def next_slot(due: float, every: float, now: float) -> float:
    """The first run time of the grid ``due + k * every`` after ``now``: the slots an
    overrunning run missed are dropped, not run back to back (as a Go ticker drops ticks)."""
    return due + (max(math.floor((now - due) / every), 0) + 1) * every


class Scheduler:
    """One thread per job, as Prometheus runs one loop per scrape target: a job is never in
    flight twice, and a slow one delays no other. ``run_now`` runs a job at once and its next
    runs follow from then."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock = clock or MonotonicClock()
        self._jobs: dict[str, _Job] = {}
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []

    def add(self, func: Callable[[], object], every: float, offset: float) -> None:
        """``func`` every ``every`` s, the first run ``offset`` s after start; named by
        ``func.__name__``."""
        self._jobs[func.__name__] = _Job(func, every, offset)

    def start(self) -> None:
        started = self._clock.now()
        for name, job in self._jobs.items():
            thread = threading.Thread(
                target=self._loop,
                args=(name, job, started + job.offset),
                name=f"npumon-{name}",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)

    def run_now(self, name: str) -> None:
        job = self._jobs.get(name)
        if job is not None:
            job.wake.set()

    def running(self) -> bool:
        return bool(self._threads) and not self._stopped.is_set()

    def stop(self) -> None:
        """No new runs; a run in flight finishes (or is killed by the runner) on its own."""
        self._stopped.set()
        for job in self._jobs.values():
            job.wake.set()

    def _loop(self, name: str, job: _Job, due: float) -> None:
        while True:
            left = due - self._clock.now()
            if left > 0:
                self._clock.wait(job.wake, left)
            if self._stopped.is_set():
                return
            job.wake.clear()
            due = min(due, self._clock.now())  # woken early by run_now: the grid starts here
            try:
                job.func()
            except Exception:  # the loop outlives a failing run, as the next run may succeed
                log.exception("event=job_failed job=%s", name)
            due = next_slot(due, job.every, self._clock.now())
