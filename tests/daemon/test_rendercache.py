"""RenderCache: the body of a snapshot is rendered once per format, a new snapshot renders again."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from prometheus_client import CollectorRegistry, Gauge

from npumon.daemon.rendercache import RenderCache
from tests.helpers.wait import scaled


class _Families:
    """npumon's families as text, counting its renders; ``gate`` holds a render until set."""

    def __init__(self) -> None:
        self.renders: list[bool] = []
        self.gate = threading.Event()
        self.gate.set()

    def __call__(self, openmetrics: bool) -> bytes:
        self.gate.wait(scaled(10))
        self.renders.append(openmetrics)
        return f"npu_x {len(self.renders)}\n".encode()


def test_reuses_the_body_while_the_snapshot_is_the_same_object() -> None:
    snapshot: list[object] = [object()]
    families = _Families()
    exposition = RenderCache(families, CollectorRegistry(), lambda: snapshot[0])
    first = exposition(False)
    assert exposition(False) is first  # the same bytes: the edge gzips them once too
    assert exposition(True).endswith(b"# EOF\n")  # OpenMetrics is its own entry
    assert exposition(False) is first
    snapshot[0] = object()  # the store published a new snapshot
    assert exposition(False) != first
    assert families.renders == [False, True, False]


def test_equal_but_distinct_snapshots_are_not_confused() -> None:
    families = _Families()
    exposition = RenderCache(families, CollectorRegistry(), lambda: [1])  # a new equal list each
    exposition(False)
    exposition(False)
    assert len(families.renders) == 2


def test_the_registry_follows_npumon_families() -> None:
    registry = CollectorRegistry()
    Gauge("process_open_fds", "doc", registry=registry).set(1)
    exposition = RenderCache(_Families(), registry, object)
    text = exposition(False).decode()
    assert text.startswith("npu_x 1\n") and "process_open_fds 1.0" in text
    om = exposition(True).decode()
    assert om.index("npu_x") < om.index("process_open_fds") < om.index("# EOF")


def test_scrapes_during_a_render_wait_for_it_and_reuse_it() -> None:
    families, snapshot = _Families(), object()
    exposition = RenderCache(families, CollectorRegistry(), lambda: snapshot)
    families.gate.clear()
    with ThreadPoolExecutor(4) as pool:
        waiting = [pool.submit(exposition, False) for _ in range(4)]
        families.gate.set()
        bodies = {f.result(scaled(10)) for f in waiting}
    assert len(bodies) == 1 and families.renders == [False]
