"""NpuCollector and its collectors: each renders one group of families from the latest snapshot.

Like node_exporter's collectors: every group can be switched off in the config
(`collectors.disabled`), the default-off ones (the per-link detail) switched on
(`collectors.enabled`), and each render reports its own duration and success
(`npumon_scrape_collector_*`). A failing group is left out of the exposition and logged once
per new error; the others are served. COLLECTORS and their family rows are also the source of
docs/metrics.md and the README's collector table (docs/generate_metrics.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from operator import attrgetter

from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters import profiles
from npumon.exporters.builtin import BUILD, NODE, RESULTS, SOURCES, Result
from npumon.exporters.chip_clocks import CLOCKS, ECC
from npumon.exporters.chip_dcmi import DCMI
from npumon.exporters.chip_health import HEALTH, IDENTITY
from npumon.exporters.chip_load import CAPTURE, POWER, UTILIZATION
from npumon.exporters.chip_memory import MEMORY, PROCESSES
from npumon.exporters.compat import COMPAT_FAMILIES
from npumon.exporters.kubernetes import KUBERNETES
from npumon.exporters.network import (
    INTERCONNECT,
    INTERCONNECT_DETAIL,
    NETWORK,
    NETWORK_DETAIL,
    OPTICAL,
    OPTICAL_DETAIL,
)
from npumon.exporters.spec import Family, write

log = logging.getLogger(__name__)
Inputs = Callable[[NodeSnapshot], tuple[object, ...]]  # the snapshot parts a collector reads


@dataclass(frozen=True)
class Collector:
    """A group of families that is switched on and off, timed and contained as one."""

    name: str  # a value of `collectors.disabled` / `collectors.enabled`
    families: tuple[Family, ...]  # each reads the NodeSnapshot
    inputs: tuple[str, ...]  # the snapshot parts its families read; "" for the whole snapshot
    about: str  # what it exports, one line (the README's collector table)
    source: str  # where the values come from (the metric reference)
    default: bool = True  # on unless `collectors.enabled` names it

    def render(self, snap: NodeSnapshot, openmetrics: bool) -> bytes:
        return write(((f, snap) for f in self.families), openmetrics)


CHIPS = ("chips",)
SMI = "npu-smi or DCMI (chips.backend)"
HCCN = "hccn_tool"
COLLECTORS: tuple[Collector, ...] = (
    Collector("identity", IDENTITY, ("chips", "node"), "chip identity, NPU software versions", SMI),
    Collector("health", HEALTH, CHIPS, "health state, active error codes", SMI),
    Collector("utilization", UTILIZATION, CHIPS, "AI Core, Vector, Cube, CPU, bandwidth use", SMI),
    Collector("power", POWER, CHIPS, "power draw, chip and HBM temperature", SMI),
    Collector("memory", MEMORY, CHIPS, "HBM, DDR memory and hugepages", SMI),
    Collector("clocks", CLOCKS, CHIPS, "AI Core clocks, cores, throttling", SMI),
    Collector("ecc", ECC, CHIPS, "HBM and DDR ECC error counters", SMI),
    Collector("dcmi", DCMI, CHIPS, "voltage, PCIe bandwidth, vNPUs (DCMI only)", "DCMI"),
    Collector("network", NETWORK, ("network.ports",), "NIC link, traffic, errors, UB ports", HCCN),
    Collector(
        "network_detail",
        NETWORK_DETAIL,
        ("network.ports",),
        "per priority, per kind and per state NIC counters",
        HCCN,
        default=False,
    ),
    Collector("optical", OPTICAL, ("network.ports",), "optical module presence, health", HCCN),
    Collector(
        "optical_detail",
        OPTICAL_DETAIL,
        ("network.ports",),
        "per lane optical power and bias, module thresholds",
        HCCN,
        default=False,
    ),
    Collector(
        "interconnect",
        INTERCONNECT,
        ("network.chips",),
        "HCCS, PCIe and SIO link health and sums per chip",
        "npu-smi or DCMI; hccn_tool (UB)",
    ),
    Collector(
        "interconnect_detail",
        INTERCONNECT_DETAIL,
        ("network.chips",),
        "per HCCS link counters and bandwidth, PCIe errors by kind",
        "npu-smi or DCMI",
        default=False,
    ),
    Collector("processes", PROCESSES, CHIPS, "device memory per process, with its owner", SMI),
    Collector(
        "kubernetes",
        KUBERNETES,
        ("chips", "attribution_problems"),
        "which container holds each chip",
        "kubelet pod-resources API",
    ),
    Collector("capture", CAPTURE, CHIPS, "whether a profiler capture runs", "npumon"),
    Collector("sources", SOURCES, ("sources",), "each source's health and timing", "npumon"),
    Collector("node", NODE, ("",), "chip count, snapshot time, backend", "npumon"),
    Collector(
        "profiles",
        profiles.PROFILES,
        ("profiles",),
        "step time, phases, operators, diagnoses (profiling on)",
        "npumon's profiler captures",
    ),
    Collector(
        "npu_exporter_compat",
        COMPAT_FAMILIES,
        ("chips", "has_table", "node"),
        "Huawei npu-exporter's names, for a migration ([docs/compat.md](docs/compat.md))",
        SMI,
        default=False,
    ),
)
"""Every collector, in exposition order."""

COLLECTOR_NAMES = tuple(c.name for c in COLLECTORS)
# like node_exporter's default-off ones: `collectors.enabled` (the detail of the link families),
# `compat.npu_exporter_names`
DETAIL_COLLECTORS = ("network_detail", "optical_detail", "interconnect_detail")
OFF_BY_DEFAULT = frozenset(c.name for c in COLLECTORS if not c.default)
SNAPSHOT = "snapshot"  # the collector label when reading the snapshot itself fails


def unknown_collectors(names: Iterable[str]) -> list[str]:
    """The names that are not collectors (for config validation)."""
    return [name for name in names if name not in COLLECTOR_NAMES]


class NpuCollector:
    """The exposition of npumon's families from the latest snapshot: what /metrics, the textfile
    and `npumon collect` write.

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
            (c, _inputs(c.inputs))
            for c in COLLECTORS
            if c.name not in disabled and (c.default or c.name in enabled)
        )
        # (name, OpenMetrics?) -> (the inputs rendered, their text)
        self._chunks: dict[tuple[str, bool], tuple[tuple[object, ...], bytes]] = {}
        self._last_error: dict[str, str] = {}
        self._lock = threading.Lock()  # concurrent scrapes share the chunks and error memory

    def exposition(self, openmetrics: bool = False) -> bytes:
        """Every enabled collector's families, then npumon_build_info and npumon_scrape_*, as
        exposition text (no ``# EOF``). A failing collector is left out, logged once per new
        error and reported (STYLE rule 6), as is reading the snapshot. A collector's text is
        reused while the snapshot parts it reads (its inputs) are the same objects: the store
        keeps an unchanged part's identity, so a table poll re-formats the chip families but
        not the network ones."""
        results: list[Result] = []
        parts: list[bytes] = []
        started = self._timer()
        try:
            snap: NodeSnapshot | None = self._latest()
        except Exception as exc:  # the store is outside this boundary; still serve self-metrics
            self._log_failure(SNAPSHOT, exc)
            snap = None
        results.append((SNAPSHOT, self._timer() - started, snap is not None))
        if snap is not None:
            parts = self._each(snap, openmetrics, results)
        own = [*((f, self._version) for f in BUILD), *((f, results) for f in RESULTS)]
        parts.append(write(own, openmetrics))
        return b"".join(parts)

    def _each(self, snap: NodeSnapshot, openmetrics: bool, results: list[Result]) -> list[bytes]:
        """Each enabled collector's text, inside its own error boundary."""
        parts: list[bytes] = []
        for collector, inputs in self._collectors:
            started = self._timer()
            try:
                parts.append(self._text(collector, inputs, snap, openmetrics))
            except Exception as exc:
                self._log_failure(collector.name, exc)
                results.append((collector.name, self._timer() - started, False))
                continue
            results.append((collector.name, self._timer() - started, True))
        return parts

    def _text(
        self, collector: Collector, inputs: Inputs, snap: NodeSnapshot, openmetrics: bool
    ) -> bytes:
        key, now = (collector.name, openmetrics), inputs(snap)
        with self._lock:
            kept = self._chunks.get(key)
        if kept is not None and _same_objects(kept[0], now):
            return kept[1]
        body = collector.render(snap, openmetrics)
        with self._lock:
            self._chunks[key] = (now, body)
        return body

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
