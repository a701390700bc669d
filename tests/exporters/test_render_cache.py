"""RenderCache: an unchanged snapshot is formatted once; a new one, or another format, again."""

from __future__ import annotations

from npumon.exporters.http import RenderCache


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
