"""RenderCache: an unchanged snapshot is formatted once; a new one, or another format, again."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from npumon.exporters.http import RenderCache
from npumon.exporters.rendercache import Prerenderer


def test_reuses_the_body_while_the_snapshot_is_the_same_object() -> None:
    snapshot: list[object] = [object()]
    renders: list[int] = []

    def render() -> bytes:
        renders.append(1)
        return f"body {len(renders)}".encode()

    cache = RenderCache(lambda: snapshot[0])
    assert cache.get(("text/plain", False), render) == b"body 1"
    assert cache.get(("text/plain", False), render) == b"body 1"
    assert cache.get(("text/plain", True), render) == b"body 2"  # gzip is its own entry
    snapshot[0] = object()  # the store published a new snapshot
    assert cache.get(("text/plain", False), render) == b"body 3"
    assert len(renders) == 3


def test_equal_but_distinct_snapshots_are_not_confused() -> None:
    versions = iter([[1], [1]])  # equal lists, different objects -> must render twice
    cache = RenderCache(lambda: next(versions))
    bodies = iter([b"a", b"b"])
    assert cache.get(("x", False), lambda: next(bodies)) == b"a"
    assert cache.get(("x", False), lambda: next(bodies)) == b"b"


def test_refresh_renders_the_recently_scraped_formats_of_a_new_snapshot() -> None:
    from npumon.exporters.rendercache import PRERENDER_WINDOW_SECONDS

    snapshot, now = [object()], [0.0]
    renders: list[tuple[str, bool]] = []

    def renderer(key: tuple[str, bool]) -> Callable[[], bytes]:
        def render() -> bytes:
            renders.append(key)
            return repr((key, len(renders))).encode()
        return render

    cache = RenderCache(lambda: snapshot[0], clock=lambda: now[0])
    text, om = ("text/plain", True), ("application/openmetrics-text", False)
    cache.get(text, renderer(text))
    now[0] = 100.0
    cache.get(om, renderer(om))
    assert cache.refresh() == 0  # both current
    snapshot[0] = object()
    assert cache.refresh() == 2 and renders[-2:] == [text, om]
    body = cache.peek(text)
    assert body is not None and cache.get(text, renderer(text)) == body  # no scrape renders
    assert len(renders) == 4
    now[0] = 100.0 + PRERENDER_WINDOW_SECONDS + 1  # both were last asked at 100 s
    snapshot[0] = object()
    assert cache.refresh() == 0  # nobody scraped either format lately
    cache.get(om, renderer(om))  # Prometheus is back (OpenMetrics); the text client is not
    snapshot[0] = object()
    # its last gap was 601 s: rendered 1 s before the next expected scrape, not now
    assert cache.refresh() == 0 and cache.next_due() == 600.0
    now[0] += 600.0
    assert cache.refresh() == 1 and renders[-1] == om and cache.next_due() is None


def test_a_format_is_rendered_just_before_its_next_expected_scrape() -> None:
    from npumon.exporters.rendercache import PRERENDER_LEAD_SECONDS as LEAD

    snapshot, now, renders = [object()], [0.0], [0]

    def render() -> bytes:
        renders[0] += 1
        return b"body %d" % renders[0]

    key = ("text/plain", True)
    cache = RenderCache(lambda: snapshot[0], clock=lambda: now[0])

    def scrape(at: float) -> bytes:
        now[0] = at
        return cache.peek(key) or cache.get(key, render)

    def publish(at: float) -> int:  # what the prerenderer does: publish, then refresh
        now[0] = at
        snapshot[0] = object()
        cache.published()
        return cache.refresh()

    for at in (0.0, 15.0, 30.0):  # Prometheus every 15 s
        scrape(at)
    # npumon publishes every 5 s: one render per scrape, due 1 s before it, not one per publish
    assert [publish(at) for at in (32.0, 37.0, 42.0)] == [0, 0, 0]
    assert cache.next_due() == 45.0 - LEAD - 42.0
    now[0] = 45.0 - LEAD
    assert cache.refresh() == 1 and renders[0] == 2  # (the first scrape rendered body 1)
    assert scrape(45.0) == b"body 2"  # the newest snapshot, already rendered
    # the scrapers stop: after twice the longest recent gap, nothing is rendered ahead
    assert publish(50.0) == 0 and cache.next_due() == 59.0 - 50.0
    assert publish(45.0 + 2 * 15.0 + LEAD + 0.5) == 0 and cache.next_due() is None
    assert scrape(100.0) == b"body 3"  # a scrape renders, and resumes it
    assert publish(101.0) == 0 and cache.next_due() == 114.0 - 101.0


def test_with_two_scrapers_out_of_phase_the_shortest_gap_counts() -> None:
    snapshot, now = [object()], [0.0]
    key = ("text/plain", False)
    cache = RenderCache(lambda: snapshot[0], clock=lambda: now[0])
    for at in (0.0, 3.0, 15.0, 18.0, 30.0, 33.0):  # two replicas, 3 s apart, every 15 s
        now[0] = at
        if cache.peek(key) is None:
            cache.get(key, lambda: b"body")
    now[0], snapshot[0] = 36.0, object()
    assert cache.refresh() == 1  # the next scrape may come 3 s after the last: render now


def test_the_prerenderer_renders_after_each_change_and_folds_a_burst() -> None:
    snapshot = [object()]
    rendering, release = threading.Event(), threading.Event()
    renders: list[object] = []

    def render() -> bytes:
        renders.append(snapshot[0])
        rendering.set()
        assert release.wait(10)
        return b"body"

    cache = RenderCache(lambda: snapshot[0])
    release.set()
    cache.get(("t", False), render)
    release.clear()
    rendering.clear()
    prerenderer = Prerenderer(cache, delay=0.0)
    try:
        snapshot[0] = object()
        prerenderer.changed()
        assert rendering.wait(10)  # it renders the new snapshot (and waits on release)
        for _ in range(5):  # a burst of publishes while it renders
            snapshot[0] = object()
            prerenderer.changed()
        rendering.clear()
        release.set()
        assert rendering.wait(10)  # one more render, for the newest snapshot
        latest = snapshot[0]
        prerenderer.close()
        assert renders[-1] is latest and len(renders) == 3
    finally:
        release.set()
        prerenderer.close()


def test_while_a_new_snapshot_renders_peek_serves_the_previous_body() -> None:
    snapshot = [object()]
    rendering, release = threading.Event(), threading.Event()
    key = ("t", False)
    cache = RenderCache(lambda: snapshot[0])
    assert cache.peek(key) is None  # nothing rendered yet: the scrape must render
    bodies = iter([b"old"])

    def render() -> bytes:
        body = next(bodies, None)
        if body is not None:
            return body
        rendering.set()
        assert release.wait(10)
        return b"new"

    cache.get(key, render)
    snapshot[0] = object()
    assert cache.peek(key) is None  # stale and nobody renders: not served

    worker = threading.Thread(target=cache.refresh)
    worker.start()
    try:
        assert rendering.wait(10)
        assert cache.peek(key) == b"old"  # the render is under way: the body before it
    finally:
        release.set()
        worker.join(10)
    assert cache.peek(key) == b"new"




def test_a_published_snapshot_serves_the_previous_body_for_a_bounded_time() -> None:
    from npumon.exporters.rendercache import PENDING_MAX_SECONDS

    snapshot, now = [object()], [0.0]
    key = ("t", False)
    cache = RenderCache(lambda: snapshot[0], clock=lambda: now[0])
    cache.get(key, lambda: b"old")
    snapshot[0] = object()
    cache.published()  # the prerenderer will render it after its delay
    assert cache.peek(key) == b"old"
    now[0] = PENDING_MAX_SECONDS + 0.1  # the prerenderer never came: scrapes render again
    assert cache.peek(key) is None
    cache.published()  # pending already: the first publish's time counts
    assert cache.peek(key) is None
    assert cache.refresh() == 1 and cache.peek(key) == b"old"  # (the same render, re-run)
    snapshot[0] = object()
    assert cache.peek(key) is None  # no publish announced, nothing rendering: not served


def test_the_prerenderer_renders_a_deferred_format_when_it_falls_due() -> None:
    from npumon.exporters.rendercache import PRERENDER_LEAD_SECONDS as LEAD

    snapshot, offset = [object()], [-(LEAD + 0.3)]
    renders: list[object] = []
    rendered = threading.Event()

    def render() -> bytes:
        renders.append(snapshot[0])
        rendered.set()
        return b"body"

    key = ("t", False)
    # real time (the prerenderer waits on it), shifted: the format was scraped LEAD + 0.3 s ago
    # and just now, so its next render is due 0.3 s from now
    cache = RenderCache(lambda: snapshot[0], clock=lambda: time.monotonic() + offset[0])
    cache.get(key, render)
    offset[0] = 0.0
    assert cache.peek(key) == b"body"
    rendered.clear()
    prerenderer = Prerenderer(cache, delay=0.0)
    try:
        snapshot[0] = object()
        prerenderer.changed()  # its refresh defers the render; no other publish comes
        assert rendered.wait(10) and renders[-1] is snapshot[0] and len(renders) == 2
    finally:
        prerenderer.close()
