"""The last exposition per format, reused while the snapshot it was rendered from is unchanged,
and rendered again ahead of the next scrape when a new snapshot is published."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

Key = tuple[str, bool]  # (content type, gzip)
# A format scraped once (no gap to go by) is rendered ahead after each publish for this long
# (a curl by hand should not cost a render per publish for an hour).
PRERENDER_WINDOW_SECONDS = 600.0
# Publishes come in bursts (the table, detail and health runs start on the same second): the
# render waits this long after the first, so one render covers the burst.
PRERENDER_DELAY_SECONDS = 0.25
# A scrape gets the previous body while a publish waits for its render, at most this long after
# the publish (then it renders itself: a stuck prerenderer cannot make data stale).
PENDING_MAX_SECONDS = 2.0
# Prometheus scrapes a target at a fixed interval, while npumon publishes every few seconds (the
# table every 5 s): a format is rendered ahead this long before its next expected scrape (the
# last one plus the shortest recent gap between scrapes), not after every publish.
PRERENDER_LEAD_SECONDS = 1.0
GAPS_KEPT = 4  # recent gaps between scrapes of a format (two replicas: two gaps alternate)
SAME_ROUND_SECONDS = 0.1  # scrapes closer than this are one round (replicas in step, a retry)
# Its scrapes stopped: no gap since the last scrape has lasted more than this many of the longest
# recent gaps. It is no longer rendered ahead (its next scrape renders, and resumes it).
OVERDUE_GAPS = 2.0


@dataclass
class _Asked:
    """A format's render and its scrapes: the last one and the recent gaps between them."""

    render: Callable[[], bytes]
    last: float
    gaps: deque[float] = field(default_factory=lambda: deque(maxlen=GAPS_KEPT))

    def ask(self, now: float) -> None:
        if now - self.last >= SAME_ROUND_SECONDS:
            self.gaps.append(now - self.last)
        self.last = now

    def due(self, now: float) -> float | None:
        """When to render it ahead of its next scrape (maybe now or past); None: not at all."""
        if not self.gaps:  # scraped once: rendered ahead while in the window
            return now if now - self.last <= PRERENDER_WINDOW_SECONDS else None
        if now - self.last > OVERDUE_GAPS * max(self.gaps) + PRERENDER_LEAD_SECONDS:
            return None
        return self.last + min(self.gaps) - PRERENDER_LEAD_SECONDS


class RenderCache:
    """The last exposition per (content type, gzip), reused while ``version()`` is unchanged.

    ``version`` returns the immutable snapshot the collector renders (compared with ``is``), so
    repeated scrapes of an unchanged snapshot (a hung npu-smi, several Prometheus replicas) cost
    a dictionary lookup instead of formatting every sample again. ``refresh()`` renders the
    current version of each format whose next scrape is near (PRERENDER_LEAD_SECONDS before the
    last scrape plus the shortest recent gap; ``next_due()`` says when the next deferred one is
    due), so that a scrape does not pay for the render either (Prerenderer calls it), while a
    format scraped every 15 s costs one render per scrape, not one per 5 s publish. A scrape
    that lands while that render runs, or before a deferred one, gets the body before it
    (``peek``), at most PENDING_MAX_SECONDS after the publish.
    """

    def __init__(self, version: Callable[[], object],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._version = version
        self._clock = clock
        self._lock = threading.Lock()
        self._render_lock = threading.Lock()
        self._entries: dict[Key, tuple[object, bytes]] = {}
        self._renders: dict[Key, _Asked] = {}
        self._next_due: float | None = None
        self._rendering: set[Key] = set()
        self._pending_since: float | None = None  # a publish waiting for its render
        self._publishes = 0

    def peek(self, key: Key) -> bytes | None:
        """The cached body when it is still current, or the previous one while the current one
        is being rendered (stale by less than one render, as a scrape a moment earlier would
        have been); else None (never renders). A body served counts as a scrape of the format."""
        version = self._version()
        with self._lock:
            body = self._servable(key, version)
            if body is not None and key in self._renders:
                self._renders[key].ask(self._clock())
            return body

    def ready(self, key: Key) -> bool:
        """``peek`` would serve a body (not counted as a scrape of the format)."""
        version = self._version()
        with self._lock:
            return self._servable(key, version) is not None

    def _servable(self, key: Key, version: object) -> bytes | None:
        hit = self._entries.get(key)  # (under the lock)
        if hit is None:
            return None
        pending = (self._pending_since is not None
                   and self._clock() - self._pending_since <= PENDING_MAX_SECONDS)
        fresh = hit[0] is version or key in self._rendering or pending
        return hit[1] if fresh else None

    def get(self, key: Key, render: Callable[[], bytes]) -> bytes:
        """The cached body when current, else ``render()``'s, which is kept. One render at a
        time: scrapes that missed while another rendered the same snapshot reuse its body."""
        now = self._clock()
        with self._lock:
            asked = self._renders.get(key)
            if asked is None:
                self._renders[key] = _Asked(render, now)
            else:
                asked.render = render
                asked.ask(now)
        return self._get(key, render)

    def published(self) -> None:
        """A new snapshot waits for ``refresh()``: until then (at most PENDING_MAX_SECONDS)
        ``peek`` serves the bodies before it."""
        with self._lock:
            self._publishes += 1
            if self._pending_since is None:
                self._pending_since = self._clock()

    def refresh(self) -> int:
        """Render, for the current version, the formats whose next scrape is near (``_Asked.due``);
        how many were rendered. ``next_due()`` then says when the next deferred one is due."""
        now = self._clock()
        with self._lock:
            publishes = self._publishes
            plan = [(key, asked.render, asked.due(now)) for key, asked in self._renders.items()]
        rendered, later = 0, math.inf
        try:
            for key, render, due in plan:
                if due is None or self._lookup(key, self._version()) is not None:
                    continue
                if due > now:
                    later = min(later, due - now)
                    continue
                self._get(key, render)
                rendered += 1
        finally:
            with self._lock:  # a publish during the render waits for the next refresh
                if self._publishes != publishes:
                    self._pending_since = self._clock()
                elif later == math.inf:
                    self._pending_since = None
                # else deferred: scrapes before it get the previous body, PENDING_MAX at most
                self._next_due = None if later == math.inf else later
        return rendered

    def next_due(self) -> float | None:
        """Seconds from the last ``refresh()`` until a format it deferred is due; None: none."""
        with self._lock:
            return self._next_due

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
    """A thread that calls ``cache.refresh()`` ``delay`` s after a ``changed()`` (a publish), and
    again when a format it deferred falls due, so scrapes find the new snapshot already rendered.
    Publishes within the delay, or while it renders, are folded into one refresh, never queued
    one by one."""

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
        deferred: float | None = None
        while True:
            woken = self._wake.wait(deferred)  # a publish, or a deferred format falls due
            if self._closing.wait(self._delay if woken else 0.0):  # the delay folds a burst
                return
            self._wake.clear()
            try:
                self._cache.refresh()
                deferred = self._cache.next_due()
            except Exception:  # a failing render is the scrape's to report (a 500), not ours
                log.debug("event=prerender_failed", exc_info=True)
                deferred = None
