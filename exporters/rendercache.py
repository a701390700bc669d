"""The last exposition per format, reused while the snapshot it was rendered from is unchanged,
and rendered again ahead of the next scrape when a new snapshot is published."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

Key = tuple[str, bool]  # (content type, gzip)
# A format nobody scraped for this long is no longer rendered ahead (Prometheus scrapes every
# 15 s to 5 min; a curl by hand should not cost a render per publish for an hour).
PRERENDER_WINDOW_SECONDS = 600.0
# Publishes come in bursts (the table, detail and health runs start on the same second): the
# render waits this long after the first, so one render covers the burst.
PRERENDER_DELAY_SECONDS = 0.25
# A scrape gets the previous body while a publish waits for its render, at most this long after
# the publish (then it renders itself: a stuck prerenderer cannot make data stale).
PENDING_MAX_SECONDS = 2.0


class RenderCache:
    """The last exposition per (content type, gzip), reused while ``version()`` is unchanged.

    ``version`` returns the immutable snapshot the collector renders (compared with ``is``), so
    repeated scrapes of an unchanged snapshot (a hung npu-smi, several Prometheus replicas) cost
    a dictionary lookup instead of formatting every sample again. ``refresh()`` renders the
    formats scraped in the last PRERENDER_WINDOW_SECONDS for the current version, so that the
    first scrape after a publish does not pay for the render either (Prerenderer calls it), and
    a scrape that lands while that render runs gets the body before it (``peek``).
    """

    def __init__(self, version: Callable[[], object],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._version = version
        self._clock = clock
        self._lock = threading.Lock()
        self._render_lock = threading.Lock()
        self._entries: dict[Key, tuple[object, bytes]] = {}
        self._renders: dict[Key, tuple[Callable[[], bytes], float]] = {}  # (render, last asked)
        self._rendering: set[Key] = set()
        self._pending_since: float | None = None  # a publish waiting for its render
        self._publishes = 0

    def peek(self, key: Key) -> bytes | None:
        """The cached body when it is still current, or the previous one while the current one
        is being rendered (stale by less than one render, as a scrape a moment earlier would
        have been); else None (never renders)."""
        version = self._version()
        with self._lock:
            hit = self._entries.get(key)
            pending = (self._pending_since is not None
                       and self._clock() - self._pending_since <= PENDING_MAX_SECONDS)
            if hit is None or (hit[0] is not version and key not in self._rendering
                               and not pending):
                return None
            if key in self._renders:
                self._renders[key] = (self._renders[key][0], self._clock())
            return hit[1]

    def get(self, key: Key, render: Callable[[], bytes]) -> bytes:
        """The cached body when current, else ``render()``'s, which is kept. One render at a
        time: scrapes that missed while another rendered the same snapshot reuse its body."""
        with self._lock:
            self._renders[key] = (render, self._clock())
        return self._get(key, render)

    def published(self) -> None:
        """A new snapshot waits for ``refresh()``: until then (at most PENDING_MAX_SECONDS)
        ``peek`` serves the bodies before it."""
        with self._lock:
            self._publishes += 1
            if self._pending_since is None:
                self._pending_since = self._clock()

    def refresh(self) -> int:
        """Render the recently scraped formats of the current version; how many were rendered."""
        now = self._clock()
        with self._lock:
            publishes = self._publishes
            wanted = [(key, render) for key, (render, asked) in self._renders.items()
                      if now - asked <= PRERENDER_WINDOW_SECONDS]
        rendered = 0
        try:
            for key, render in wanted:
                if self._lookup(key, self._version()) is None:
                    self._get(key, render)
                    rendered += 1
        finally:
            with self._lock:  # a publish during the render waits for the next refresh
                self._pending_since = None if self._publishes == publishes else self._clock()
        return rendered

    def _get(self, key: Key, render: Callable[[], bytes]) -> bytes:
        version = self._version()
        body = self._lookup(key, version)
        if body is not None:
            return body
        with self._render_lock:
            body = self._lookup(key, version)
            if body is None:
                with self._lock:
                    self._rendering.add(key)
                try:
                    body = render()
                finally:
                    with self._lock:
                        self._rendering.discard(key)
                with self._lock:
                    self._entries[key] = (version, body)
        return body

    def _lookup(self, key: Key, version: object) -> bytes | None:
        with self._lock:
            hit = self._entries.get(key)
        return hit[1] if hit is not None and hit[0] is version else None


class Prerenderer:
    """A thread that calls ``cache.refresh()`` ``delay`` s after a ``changed()`` (a publish), so
    scrapes find the new snapshot already rendered. Publishes within the delay, or while it
    renders, are folded into one refresh, never queued one by one."""

    def __init__(self, cache: RenderCache, delay: float = PRERENDER_DELAY_SECONDS) -> None:
        self._cache, self._delay = cache, delay
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._run, name="npumon-prerender", daemon=True)
        self._thread.start()

    def changed(self) -> None:
        self._cache.published()
        self._wake.set()

    def close(self) -> None:
        self._closing.set()
        self._wake.set()
        self._thread.join(timeout=5.0)

    def _run(self) -> None:
        while True:
            self._wake.wait()
            if self._closing.wait(self._delay):  # the delay folds a burst of publishes
                return
            self._wake.clear()
            try:
                self._cache.refresh()
            except Exception:  # a failing render is the scrape's to report (a 500), not ours
                log.debug("event=prerender_failed", exc_info=True)
