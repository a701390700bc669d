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
) -> None:
    """Return once ``check()`` is true; AssertionError naming ``what`` after ``timeout`` s.

    ``tolerate`` lists exceptions that mean "not yet" (e.g. OSError while a server starts).
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
        time.sleep(POLL_SECONDS)
