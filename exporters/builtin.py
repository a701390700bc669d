"""Every npumon_* family: source health, chip count, snapshot age, build info, collectors."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from npumon.daemon.model.snapshot import NodeSnapshot


def render_sources(snap: NodeSnapshot) -> Iterator[Metric]:
    """Per-source health of the background sampling (npu-smi tiers, profiler).

    npumon_source_up{source="npu_smi_table"} 1
    npumon_source_duration_seconds{source="npu_smi_table"} 0.21
    npumon_source_failures_total{source="npu_smi_table",reason="timeout"} 2
    npumon_values_rejected_total{field="temperature_celsius"} 1
    """
    up = GaugeMetricFamily(
        "npumon_source_up", "1 if the source's last run succeeded, else 0.", labels=("source",)
    )
    duration = GaugeMetricFamily(
        "npumon_source_duration_seconds",
        "Wall time of the source's last run in seconds.",
        labels=("source",),
    )
    last_ok = GaugeMetricFamily(
        "npumon_source_last_success_timestamp_seconds",
        "Unix time in seconds of the source's last successful run.",
        labels=("source",),
    )
    failures = CounterMetricFamily(
        "npumon_source_failures",
        "Failed runs of a source since npumon started, by reason (timeout, dcmi_init, ...).",
        labels=("source", "reason"),
    )
    for s in snap.sources:
        up.add_metric([s.source], 1.0 if s.up else 0.0)
        if s.duration_seconds is not None:
            duration.add_metric([s.source], s.duration_seconds)
        if s.last_success_timestamp is not None:
            last_ok.add_metric([s.source], s.last_success_timestamp)
        for reason, count in s.failures:
            failures.add_metric([s.source, reason], float(count))
    yield from (up, duration, last_ok, failures, _rejected(snap))


def _rejected(snap: NodeSnapshot) -> Metric:
    rejected = CounterMetricFamily(
        "npumon_values_rejected",
        "Values npu-smi printed outside physical bounds (a -273 C temperature, negative watts"
        " or bytes), dropped instead of exported, since npumon started, by field.",
        labels=("field",),
    )
    totals: Counter[str] = Counter()
    for s in snap.sources:
        totals.update(dict(s.rejected))
    for field, count in sorted(totals.items()):
        rejected.add_metric([field], float(count))
    return rejected


def render_node(snap: NodeSnapshot) -> Iterator[Metric]:
    """How many chips the latest table lists, when the snapshot was taken, which backend.

    npumon_chips 8
    npumon_snapshot_timestamp_seconds 1.7e+09
    """
    if snap.has_table:
        chips = GaugeMetricFamily(
            "npumon_chips", "Chips in the latest successful listing of the node's chips."
        )
        chips.add_metric([], float(len(snap.chips)))
        yield chips
    if snap.taken_at > 0:
        taken = GaugeMetricFamily(
            "npumon_snapshot_timestamp_seconds",
            "Unix time in seconds when the rendered snapshot was published.",
        )
        taken.add_metric([], snap.taken_at)
        yield taken
    if snap.backend is not None:
        yield _backend_info(snap)


def _backend_info(snap: NodeSnapshot) -> Metric:
    """Which backend serves the npu-smi table, and why.

    npumon_backend_info{backend="dcmi",reason="cross_check_passed"} 1
    """
    assert snap.backend is not None
    info = GaugeMetricFamily(
        "npumon_backend_info",
        "The backend that answers the npu-smi table (dcmi: libdcmi.so through npumon's helper;"
        " cli: the npu-smi command) and why (configured, cross_check_passed, library_not_found,"
        " dcmi_timeout, ...); always 1.",
        labels=("backend", "reason"),
    )
    info.add_metric([snap.backend.backend, snap.backend.reason], 1.0)
    return info


def render_build_info(version: str) -> Metric:
    """npumon's version, always 1.

    npumon_build_info{version="0.1.0"} 1
    """
    info = GaugeMetricFamily("npumon_build_info", "npumon version (always 1).", labels=("version",))
    info.add_metric([version], 1.0)
    return info


def render_collector_results(results: Iterable[tuple[str, float, bool]]) -> Iterator[Metric]:
    """Per collector: how long its render took and whether it succeeded (node_exporter's pair).

    npumon_scrape_collector_duration_seconds{collector="health"} 0.00012
    npumon_scrape_collector_success{collector="health"} 1
    """
    duration = GaugeMetricFamily(
        "npumon_scrape_collector_duration_seconds",
        "Seconds the collector took in the last render: formatting its families, or reusing its"
        " text while the snapshot parts it reads are unchanged (a scrape of an unchanged"
        " snapshot reuses the whole last render, and so these values).",
        labels=("collector",),
    )
    success = GaugeMetricFamily(
        "npumon_scrape_collector_success",
        "1 if the collector rendered, 0 if it failed and its families were left out.",
        labels=("collector",),
    )
    for name, seconds, ok in results:
        duration.add_metric([name], seconds)
        success.add_metric([name], 1.0 if ok else 0.0)
    yield duration
    yield success


def render_reload(successful: bool, success_timestamp: float) -> Iterator[Metric]:
    """The last config reload (SIGHUP), named as Prometheus names its own.

    npumon_config_last_reload_successful 1
    npumon_config_last_reload_success_timestamp_seconds 1.7e+09
    """
    ok = GaugeMetricFamily(
        "npumon_config_last_reload_successful",
        "1 if the last configuration load (start or SIGHUP) succeeded, 0 if it was refused and the"
        " previous configuration kept running.",
    )
    ok.add_metric([], 1.0 if successful else 0.0)
    when = GaugeMetricFamily(
        "npumon_config_last_reload_success_timestamp_seconds",
        "Unix time in seconds of the last successful configuration load.",
    )
    when.add_metric([], success_timestamp)
    yield ok
    yield when
