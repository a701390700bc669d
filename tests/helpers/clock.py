"""A scheduler clock the test advances; job threads wait on it instead of on real time."""

from __future__ import annotations

import threading

from tests.helpers.wait import wait_for


class SteppedClock:
    """``advance`` moves time; ``settle`` returns once every job thread waits again."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._cond = threading.Condition()
        self._waiting: dict[int, float] = {}  # thread id -> the time it waits for

    def now(self) -> float:
        with self._cond:
            return self._now

    def wait(self, event: threading.Event, seconds: float) -> None:
        me = threading.get_ident()
        with self._cond:
            self._waiting[me] = self._now + seconds
            while not event.is_set() and self._now < self._waiting[me]:
                self._cond.wait(0.005)  # event.set() does not notify this condition
            del self._waiting[me]

    def advance(self, seconds: float, threads: int) -> None:
        """Move time on, then wait until ``threads`` job threads wait for a later time."""
        with self._cond:
            self._now += seconds
            self._cond.notify_all()
        self.settle(threads)

    def settle(self, threads: int) -> None:
        def waiting() -> bool:
            with self._cond:
                return sum(t > self._now for t in self._waiting.values()) >= threads

        wait_for(waiting, 10.0, f"{threads} job threads waiting")
