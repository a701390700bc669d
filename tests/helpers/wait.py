"""Waiting on a real subprocess' side effect, where there is no clock to advance.

Every deadline a test waits under is ``scaled``: its figure (what a quiet machine needs, with
room) times one factor, ``NPUMON_TEST_TIMEOUT_FACTOR`` (default 4, so a 2-core machine at a load
average of 13 still passes). A slower or busier machine raises the factor; no test tunes its own
figure. A deadline only bounds a wait on a condition: a test that passes never waits it out.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

POLL_SECONDS = 0.02
FACTOR_ENV = "NPUMON_TEST_TIMEOUT_FACTOR"
DEFAULT_FACTOR = 4.0


def timeout_factor() -> float:
    """``NPUMON_TEST_TIMEOUT_FACTOR`` (a positive number), else the default."""
    said = os.environ.get(FACTOR_ENV, "").strip()
    if not said:
        return DEFAULT_FACTOR
    try:
        factor = float(said)
    except ValueError:
        raise ValueError(f"{FACTOR_ENV}={said!r} is not a number") from None
    if not factor > 0:
        raise ValueError(f"{FACTOR_ENV}={said!r} must be positive")
    return factor


def scaled(seconds: float) -> float:
    """A test's deadline of ``seconds`` on this machine: times ``timeout_factor()``."""
    return seconds * timeout_factor()


def wait_for(
    check: Callable[[], bool],
    timeout: float = 10.0,
    what: str = "condition",
    *,
    tolerate: tuple[type[BaseException], ...] = (),
    poll: float = POLL_SECONDS,
) -> None:
    """Return once ``check()`` is true; AssertionError naming ``what`` after ``scaled(timeout)``.

    ``tolerate`` lists exceptions that mean "not yet" (e.g. OSError while a server starts).
    ``poll`` is the pause between checks: raise it when a check is itself costly (a query to
    a live Prometheus).
    """
    limit = scaled(timeout)
    deadline = time.monotonic() + limit
    while True:
        try:
            if check():
                return
        except tolerate:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {limit:g}s waiting for {what}")
        time.sleep(poll)
