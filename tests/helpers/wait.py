"""Waiting on a real subprocess' side effect, where there is no clock to advance."""

from __future__ import annotations

import time
from collections.abc import Callable

POLL_SECONDS = 0.02


def wait_for(
    check: Callable[[], bool],
    timeout: float = 10.0,
    what: str = "condition",
    *,
    tolerate: tuple[type[BaseException], ...] = (),
    poll: float = POLL_SECONDS,
) -> None:
    """Return once ``check()`` is true; AssertionError naming ``what`` after ``timeout`` s.

    ``tolerate`` lists exceptions that mean "not yet" (e.g. OSError while a server starts).
    ``poll`` is the pause between checks: raise it when a check is itself costly (a query to
    a live Prometheus).
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except tolerate:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(poll)
