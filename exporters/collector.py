"""NpuCollector and its collectors: each renders one group of families from the latest snapshot.

Like node_exporter's collectors: every group can be switched off in the config
(`collectors.disabled`), and each render reports its own duration and success
(`npumon_scrape_collector_*`). A failing group is left out of the exposition and logged once
per new error; the others are served.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator

from prometheus_client.core import Metric

from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.builtin import (
    render_build_info,
    render_collector_results,
    render_node,
    render_sources,
)
from npumon.exporters.chip_clocks import render_clocks, render_ecc
from npumon.exporters.chip_health import render_health, render_identity
from npumon.exporters.chip_load import render_power, render_profiling, render_utilization
from npumon.exporters.chip_memory import render_memory, render_processes
from npumon.exporters.compat import render_compat
from npumon.exporters.kubernetes import render_kubernetes
from npumon.exporters.network import render_interconnect, render_network, render_optical
from npumon.exporters.profiles import render_profiles
from npumon.exporters.spec import Renderer

log = logging.getLogger(__name__)

COLLECTORS: tuple[tuple[str, Renderer], ...] = (
    ("identity", render_identity),  # npu_chip_info, npu_node_info
    ("health", render_health),  # npu_health_state, npu_error_code_info
    ("utilization", render_utilization),  # npu_*_utilization_ratio
    ("power", render_power),  # npu_power_watts, npu_*temperature_celsius
    ("memory", render_memory),  # npu_hbm_*, npu_memory_*, npu_hugepages_*
    ("clocks", render_clocks),  # npu_aicore_*frequency_hertz, npu_throttled
    ("ecc", render_ecc),  # npu_*_ecc_errors_total
    ("network", render_network),  # npu_network_*, npu_roce_errors_total (hccn_tool)
    ("optical", render_optical),  # npu_optical_* (hccn_tool -optical)
    ("interconnect", render_interconnect),  # npu_hccs_*, npu_pcie_*, npu_sio_* (npu-smi)
    ("processes", render_processes),  # npu_process_hbm_used_bytes
    ("kubernetes", render_kubernetes),  # npu_chip_allocation_info, npu_chip_allocated
    ("profiling", render_profiling),  # npu_profiling_active
    ("sources", render_sources),  # npumon_source_*
    ("node", render_node),  # npumon_chips, npumon_snapshot_timestamp_seconds
    ("profiles", render_profiles),  # npu_step_*, npu_op_*, npu_profile_*, npumon_capture*
    ("npu_exporter_compat", render_compat),  # off unless compat.npu_exporter_names is true
)
"""Every collector, in exposition order; names are the values of `collectors.disabled`."""

COLLECTOR_NAMES = tuple(name for name, _ in COLLECTORS)
OFF_BY_DEFAULT = frozenset({"npu_exporter_compat"})  # like node_exporter's default-off ones
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
            (n, r) for n, r in COLLECTORS
            if n not in disabled and (n not in OFF_BY_DEFAULT or n in enabled)
        )
        self._last_error: dict[str, str] = {}
        self._lock = threading.Lock()  # concurrent scrapes share the last-error memory

    def describe(self) -> Iterable[Metric]:
        """Nothing: registering must not render (and so must not call ``latest``)."""
        return []

    def collect(self) -> Iterator[Metric]:
        """All families of the enabled collectors; a failing one is dropped and reported."""
        results: list[tuple[str, float, bool]] = []
        started = self._timer()
        try:
            snap: NodeSnapshot | None = self._latest()
        except Exception as exc:  # the store is outside this boundary; still serve self-metrics
            self._log_failure(SNAPSHOT, exc)
            snap = None
        results.append((SNAPSHOT, self._timer() - started, snap is not None))
        if snap is not None:
            for name, render in self._collectors:
                started = self._timer()
                try:
                    families = [f for f in render(snap) if f.samples]
                except Exception as exc:  # the per-collector error boundary (STYLE rule 6)
                    self._log_failure(name, exc)
                    results.append((name, self._timer() - started, False))
                    continue
                results.append((name, self._timer() - started, True))
                yield from families
        yield render_build_info(self._version)
        yield from render_collector_results(results)

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
