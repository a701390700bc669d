"""NpuCollector and its collectors: each renders one group of families from the latest snapshot.

Like node_exporter's collectors: every group can be switched off in the config
(`collectors.disabled`), the default-off ones (the per-link detail) switched on
(`collectors.enabled`), and each render reports its own duration and success
(`npumon_scrape_collector_*`). A failing group is left out of the exposition and logged once
per new error; the others are served.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from operator import attrgetter
from typing import TypeVar

from prometheus_client.core import Metric

from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.builtin import (
    render_build_info,
    render_collector_results,
    render_node,
    render_sources,
)
from npumon.exporters.chip_clocks import render_clocks, render_ecc
from npumon.exporters.chip_dcmi import render_dcmi
from npumon.exporters.chip_health import render_health, render_identity
from npumon.exporters.chip_load import render_capture, render_power, render_utilization
from npumon.exporters.chip_memory import render_memory, render_processes
from npumon.exporters.compat import render_compat
from npumon.exporters.kubernetes import render_kubernetes
from npumon.exporters.lines import LineRenderer
from npumon.exporters.network import (
    render_interconnect,
    render_interconnect_detail,
    render_network,
    render_network_detail,
    render_optical,
    render_optical_detail,
)
from npumon.exporters.profiles import render_profiles
from npumon.exporters.spec import Renderer
from npumon.exporters.writer import openmetrics as write_openmetrics
from npumon.exporters.writer import text as write_text

log = logging.getLogger(__name__)
Inputs = Callable[[NodeSnapshot], tuple[object, ...]]  # the snapshot parts a collector reads
Result = tuple[str, float, bool]  # (collector, seconds, success)
_Out = TypeVar("_Out")

CHIPS = ("chips",)
COLLECTORS: tuple[tuple[str, Renderer, tuple[str, ...]], ...] = (
    # (name, renderer, inputs: the snapshot parts it reads; "" for the whole snapshot)
    ("identity", render_identity, ("chips", "node")),  # npu_chip_info, npu_node_info
    ("health", render_health, CHIPS),  # npu_health_state, npu_error_code_info
    ("utilization", render_utilization, CHIPS),  # npu_*_utilization_ratio
    ("power", render_power, CHIPS),  # npu_power_watts, npu_*temperature_celsius
    ("memory", render_memory, CHIPS),  # npu_hbm_*, npu_memory_*, npu_hugepages_*
    ("clocks", render_clocks, CHIPS),  # npu_aicore_*frequency_hertz, npu_throttled
    ("ecc", render_ecc, CHIPS),  # npu_*_ecc_errors_total
    ("dcmi", render_dcmi, CHIPS),  # npu_voltage_volts, npu_pcie_bandwidth_bytes_per_second
    ("network", render_network, ("network.ports",)),  # npu_network_*, npu_roce_*
    ("network_detail", render_network_detail, ("network.ports",)),  # off: per priority, kind
    ("optical", render_optical, ("network.ports",)),  # npu_optical_* (hccn_tool -optical)
    ("optical_detail", render_optical_detail, ("network.ports",)),  # off: per lane, thresholds
    ("interconnect", render_interconnect, ("network.chips",)),  # npu_hccs_*, npu_pcie_*, npu_sio_*
    ("interconnect_detail", render_interconnect_detail, ("network.chips",)),  # off: per link
    ("processes", render_processes, CHIPS),  # npu_process_hbm_used_bytes
    ("kubernetes", render_kubernetes, ("chips", "attribution_problems")),  # npu_chip_allocation_*
    ("capture", render_capture, CHIPS),  # npu_profiling_active
    ("sources", render_sources, ("sources",)),  # npumon_source_*
    ("node", render_node, ("",)),  # npumon_chips, npumon_snapshot_timestamp_seconds
    ("profiles", render_profiles, ("profiles",)),  # npu_step_*, npu_op_*, npu_profile_*, ...
    ("npu_exporter_compat", render_compat, ("chips", "has_table", "node")),  # off by default
)
"""Every collector, in exposition order; names are the values of `collectors.disabled`."""

COLLECTOR_NAMES = tuple(name for name, _, _ in COLLECTORS)
# like node_exporter's default-off ones: `collectors.enabled` (the detail of the link families),
# `compat.npu_exporter_names`
DETAIL_COLLECTORS = ("network_detail", "optical_detail", "interconnect_detail")
OFF_BY_DEFAULT = frozenset({*DETAIL_COLLECTORS, "npu_exporter_compat"})
SNAPSHOT = "snapshot"  # the collector label when reading the snapshot itself fails


def unknown_collectors(names: Iterable[str]) -> list[str]:
    """The names that are not collectors (for config validation)."""
    return [name for name in names if name not in COLLECTOR_NAMES]


class NpuCollector:
    """A prometheus_client custom collector: fresh families from an immutable snapshot.

    ``latest`` is the store's zero-argument ``latest`` method; it must return at once (it never
    runs npu-smi). ``disabled`` names collectors to leave out, ``enabled`` the default-off ones to
    run (OFF_BY_DEFAULT); ``timer`` times each render.
    """

    def __init__(
        self,
        latest: Callable[[], NodeSnapshot],
        version: str,
        *,
        disabled: Collection[str] = (),
        enabled: Collection[str] = (),
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        unknown = unknown_collectors([*disabled, *enabled])
        if unknown:
            raise ValueError(f"unknown collectors {unknown}; known: {', '.join(COLLECTOR_NAMES)}")
        self._latest = latest
        self._version = version
        self._timer = timer
        self._collectors = tuple(
            (n, r, _inputs(i))
            for n, r, i in COLLECTORS
            if n not in disabled and (n not in OFF_BY_DEFAULT or n in enabled)
        )
        # (name, OpenMetrics?) -> (the inputs rendered, their text)
        self._chunks: dict[tuple[str, bool], tuple[tuple[object, ...], bytes]] = {}
        self._last_error: dict[str, str] = {}
        self._lock = threading.Lock()  # concurrent scrapes share the last-error memory

    def describe(self) -> Iterable[Metric]:
        """Nothing: registering must not render (and so must not call ``latest``)."""
        return []

    def collect(self) -> Iterator[Metric]:
        """All families of the enabled collectors; a failing one is dropped and reported."""
        results: list[Result] = []
        for families in self._each(
            results, lambda name, render, inputs, snap: [f for f in render(snap) if f.samples]
        ):
            yield from families
        yield render_build_info(self._version)
        yield from render_collector_results(results)

    def exposition(self, openmetrics: bool = False) -> bytes:
        """What ``collect()`` yields, as exposition text (no ``# EOF``), written by
        exporters/writer.py (a LineRenderer, exporters/lines.py, writes its own). A collector's
        text is reused while the snapshot parts it reads (its inputs in COLLECTORS) are the same
        objects: the store keeps an unchanged part's identity, so a table poll re-formats the
        chip families but not the network ones."""
        encode = write_openmetrics if openmetrics else write_text

        def text(name: str, render: Renderer, inputs: Inputs, snap: NodeSnapshot) -> bytes:
            key, now = (name, openmetrics), inputs(snap)
            with self._lock:
                kept = self._chunks.get(key)
            if kept is not None and _same_objects(kept[0], now):
                return kept[1]
            if isinstance(render, LineRenderer):
                body = render.write(snap, openmetrics)
            else:
                body = encode([f for f in render(snap) if f.samples])
            with self._lock:
                self._chunks[key] = (now, body)
            return body

        results: list[Result] = []
        parts = list(self._each(results, text))
        parts.append(encode([render_build_info(self._version), *render_collector_results(results)]))
        return b"".join(parts)

    def _each(
        self, results: list[Result], work: Callable[[str, Renderer, Inputs, NodeSnapshot], _Out]
    ) -> Iterator[_Out]:
        """``work`` for each enabled collector on the latest snapshot, inside the per-collector
        error boundary (STYLE rule 6): a failing one is logged, left out and reported in
        ``results`` (name, seconds, success), as is reading the snapshot."""
        started = self._timer()
        try:
            snap: NodeSnapshot | None = self._latest()
        except Exception as exc:  # the store is outside this boundary; still serve self-metrics
            self._log_failure(SNAPSHOT, exc)
            snap = None
        results.append((SNAPSHOT, self._timer() - started, snap is not None))
        if snap is None:
            return
        for name, render, inputs in self._collectors:
            started = self._timer()
            try:
                out = work(name, render, inputs, snap)
            except Exception as exc:
                self._log_failure(name, exc)
                results.append((name, self._timer() - started, False))
                continue
            results.append((name, self._timer() - started, True))
            yield out

    def _log_failure(self, collector: str, exc: Exception) -> None:
        text = f"{type(exc).__name__}: {exc}"
        with self._lock:
            repeated = self._last_error.get(collector) == text
            self._last_error[collector] = text
        # One log line per new error text, not one per scrape of a persistent bug.
        if repeated:
            log.debug("event=render_failed collector=%s error=%r", collector, text)
        else:
            log.error("event=render_failed collector=%s error=%r", collector, text, exc_info=exc)


def _inputs(paths: tuple[str, ...]) -> Inputs:
    """The snapshot parts named by ``paths`` ("network.ports"; "" is the snapshot itself)."""
    getters: tuple[Callable[[NodeSnapshot], object], ...] = tuple(
        attrgetter(path) if path else _whole for path in paths
    )
    return lambda snap: tuple(get(snap) for get in getters)


def _whole(snap: NodeSnapshot) -> object:
    return snap


def _same_objects(before: tuple[object, ...], now: tuple[object, ...]) -> bool:
    return len(before) == len(now) and all(a is b for a, b in zip(before, now, strict=True))
