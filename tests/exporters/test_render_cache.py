"""RenderCache: an unchanged snapshot is formatted once; a new one, or another format, again."""

from __future__ import annotations

import threading
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
    assert cache.refresh() == 1 and renders[-1] == om


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
