"""Freed heap handed back to the kernel after connection churn (glibc's malloc_trim).

glibc keeps memory freed in the middle of the heap mapped: after 500 TLS connections come and
go, the daemon's RSS stays ~10-30 MB higher although nothing holds it. ``malloc_trim(0)``
returns those pages (a few ms). It runs on its own thread, every TRIM_EVERY_SECONDS, and only
when at least TRIM_AFTER_CLOSES connections have closed since the last trim, so a quiet
exporter never calls it. Elsewhere than glibc (musl) there is no such call and nothing is done.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

TRIM_EVERY_SECONDS = 2.0
TRIM_AFTER_CLOSES = 64


def malloc_trim() -> Callable[[], object] | None:
    """glibc's ``malloc_trim(0)`` (ctypes releases the GIL while it runs), or None."""
    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return lambda: trim(0)


class Trimmer:
    """``closed()`` from the server on each lost connection; ``maybe_trim()`` trims when enough
    have closed. ``start()`` runs ``maybe_trim`` every ``every`` seconds until ``close()``."""

    def __init__(self, trim: Callable[[], object] | None = None, *,
                 every: float = TRIM_EVERY_SECONDS, after: int = TRIM_AFTER_CLOSES) -> None:
        self._trim = trim if trim is not None else malloc_trim()
        self._every, self._after = every, after
        self._closed = 0  # only the event loop thread adds; the trim thread reads
        self._trimmed_at = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def closed(self) -> None:
        self._closed += 1

    def maybe_trim(self) -> bool:
        closed = self._closed
        if self._trim is None or closed - self._trimmed_at < self._after:
            return False
        self._trimmed_at = closed
        self._trim()
        return True

    def start(self) -> None:
        if self._trim is None:
            log.debug("event=malloc_trim_unavailable")
            return
        self._thread = threading.Thread(target=self._run, name="npumon-trim", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.maybe_trim()
