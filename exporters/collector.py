"""NpuCollector: renders the latest NodeSnapshot at scrape time, one error boundary per group."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence

from prometheus_client.core import CounterMetricFamily, Metric

from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.families import (
    render_health,
    render_identity,
    render_power_thermal,
    render_utilization,
)
from npumon.exporters.families_hw import (
    render_clocks,
    render_ecc,
    render_memory,
    render_processes,
    render_profiling,
)
from npumon.exporters.selfmetrics import render_build_info, render_node, render_sources

log = logging.getLogger(__name__)

Renderer = Callable[[NodeSnapshot], Iterable[Metric]]

RENDERERS: tuple[tuple[str, Renderer], ...] = (
    ("identity", render_identity),
    ("health", render_health),
    ("utilization", render_utilization),
    ("power_thermal", render_power_thermal),
    ("memory", render_memory),
    ("clocks", render_clocks),
    ("ecc", render_ecc),
    ("processes", render_processes),
    ("profiling", render_profiling),
    ("sources", render_sources),
    ("node", render_node),
)
"""The telemetry family groups, by the `family` label of npumon_render_failures_total."""

SNAPSHOT_FAMILY = "snapshot"  # failure label when latest() itself raises


class NpuCollector:
    """A prometheus_client custom collector: fresh families from an immutable snapshot.

    ``latest`` is the store's zero-argument ``latest`` method; it must return at once (it never
    runs npu-smi). ``extra_renderers`` appends (family, renderer) groups, e.g. profiler results.
    """

    def __init__(
        self,
        latest: Callable[[], NodeSnapshot],
        version: str,
        *,
        extra_renderers: Sequence[tuple[str, Renderer]] = (),
    ) -> None:
        self._latest = latest
        self._version = version
        self._renderers = (*RENDERERS, *extra_renderers)
        names = [SNAPSHOT_FAMILY, *(name for name, _ in self._renderers)]
        self._failures: dict[str, int] = dict.fromkeys(names, 0)
        self._last_error: dict[str, str] = {}
        self._lock = threading.Lock()  # concurrent scrapes share the failure counts

    def describe(self) -> Iterable[Metric]:
        """Nothing: registering must not render (and so must not call ``latest``)."""
        return []

    def collect(self) -> Iterator[Metric]:
        """All families for the latest snapshot; a failing group is dropped and counted."""
        try:
            snap: NodeSnapshot | None = self._latest()
        except Exception as exc:  # the store is outside this boundary; still serve self-metrics
            self._record_failure(SNAPSHOT_FAMILY, exc)
            snap = None
        if snap is not None:
            for name, render in self._renderers:
                try:
                    families = [f for f in render(snap) if f.samples]
                except Exception as exc:  # the per-family error boundary (STYLE rule 6)
                    self._record_failure(name, exc)
                    continue
                yield from families
        yield render_build_info(self._version)
        yield self._failures_family()

    def _record_failure(self, family: str, exc: Exception) -> None:
        text = f"{type(exc).__name__}: {exc}"
        with self._lock:
            self._failures[family] = self._failures.get(family, 0) + 1
            repeated = self._last_error.get(family) == text
            self._last_error[family] = text
        # One log line per new error text, not one per scrape of a persistent bug.
        if repeated:
            log.debug("event=render_failed family=%s error=%r", family, text)
        else:
            log.error("event=render_failed family=%s error=%r", family, text, exc_info=exc)

    def _failures_family(self) -> Metric:
        """Render failures by family group since start, every group present from 0.

        npumon_render_failures_total{family="ecc"} 0
        """
        family = CounterMetricFamily(
            "npumon_render_failures",
            "Renders in which a metric family group failed and was left out (a scrape of an"
            " unchanged snapshot reuses the last render).",
            labels=("family",),
        )
        with self._lock:
            counts = sorted(self._failures.items())
        for name, count in counts:
            family.add_metric([name], float(count))
        return family
