"""The /metrics body per format, rendered by the first scrape of each snapshot and reused by the
other scrapes of that snapshot (several Prometheus replicas, a hung npu-smi)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

Families = Callable[[bool], bytes]  # OpenMetrics? -> npumon's families, without "# EOF"


class RenderCache:
    """``exposition(openmetrics)``: npumon's families, then the registry's (process_*,
    python_*), with OpenMetrics' ``# EOF``; kept per format until ``identity()`` (a
    new snapshot or reload is a new object) changes. Renders are one at a time, so scrapes that
    arrive while a snapshot renders wait for that render and reuse it."""

    def __init__(
        self, families: Families, registry: CollectorRegistry, identity: Callable[[], object]
    ) -> None:
        self._families, self._registry, self._identity = families, registry, identity
        self._lock = threading.Lock()
        self._bodies: dict[bool, tuple[object, bytes]] = {}

    def __call__(self, openmetrics: bool) -> bytes:
        identity = self._identity()
        with self._lock:
            kept = self._bodies.get(openmetrics)
            if kept is not None and kept[0] is identity:
                return kept[1]
            encode = generate_openmetrics if openmetrics else generate_latest
            body = self._families(openmetrics) + encode(self._registry)
            self._bodies[openmetrics] = (identity, body)  # holds ``identity``: ``is`` stays sound
            return body
