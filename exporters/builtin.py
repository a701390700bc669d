"""Every npumon_* family but the profiling ones: source health, chip count, snapshot age,
backend, build info, collector results and the config reload."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.spec import Family

Result = tuple[str, float, bool]  # (collector, seconds, success)


def _rejected(snap: NodeSnapshot) -> Iterator[tuple[tuple[str], int]]:
    totals: Counter[str] = Counter()
    for s in snap.sources:
        totals.update(dict(s.rejected))
    for field, count in sorted(totals.items()):
        yield (field,), count


SOURCES: tuple[Family, ...] = (
    # npumon_source_up{source="npu_smi_table"} 1
    Family(
        "npumon_source_up",
        "gauge",
        "1 if the source's last run succeeded, else 0.",
        ("source",),
        lambda snap: (((s.source,), 1.0 if s.up else 0.0) for s in snap.sources),
    ),
    Family(
        "npumon_source_duration_seconds",
        "gauge",
        "Wall time of the source's last run in seconds.",
        ("source",),
        lambda snap: (((s.source,), s.duration_seconds) for s in snap.sources),
    ),
    Family(
        "npumon_source_last_success_timestamp_seconds",
        "gauge",
        "Unix time in seconds of the source's last successful run.",
        ("source",),
        lambda snap: (((s.source,), s.last_success_timestamp) for s in snap.sources),
    ),
    # npumon_source_failures_total{source="npu_smi_table",reason="timeout"} 2
    Family(
        "npumon_source_failures",
        "counter",
        "Failed runs of a source since npumon started, by reason (timeout, dcmi_init, ...).",
        ("source", "reason"),
        lambda snap: (((s.source, r), n) for s in snap.sources for r, n in s.failures),
    ),
    # npumon_values_rejected_total{field="temperature_celsius"} 1
    Family(
        "npumon_values_rejected",
        "counter",
        "Values npu-smi printed outside physical bounds (a -273 C temperature, negative watts"
        " or bytes), dropped instead of exported, since npumon started, by field.",
        ("field",),
        _rejected,
    ),
)

NODE: tuple[Family, ...] = (
    Family(
        "npumon_chips",
        "gauge",
        "Chips in the latest successful listing of the node's chips.",
        (),
        lambda snap: [((), len(snap.chips) if snap.has_table else None)],
    ),
    Family(
        "npumon_snapshot_timestamp_seconds",
        "gauge",
        "Unix time in seconds when the rendered snapshot was published.",
        (),
        lambda snap: [((), snap.taken_at if snap.taken_at > 0 else None)],
    ),
    # npumon_backend_info{backend="dcmi",reason="cross_check_passed"} 1
    Family(
        "npumon_backend_info",
        "gauge",
        "The backend that answers the npu-smi table (dcmi: libdcmi.so through npumon's helper;"
        " cli: the npu-smi command) and why (configured, cross_check_passed, library_not_found,"
        " dcmi_timeout, ...); always 1.",
        ("backend", "reason"),
        lambda snap: [((b.backend, b.reason), 1.0) for b in (snap.backend,) if b is not None],
    ),
)

BUILD: tuple[Family, ...] = (
    # npumon_build_info{version="0.2.0"} 1; its model is npumon's version (pyproject.toml's)
    Family(
        "npumon_build_info",
        "gauge",
        "npumon version (always 1).",
        ("version",),
        lambda version: [((version,), 1.0)],
    ),
)


def _durations(results: Iterable[Result]) -> Iterator[tuple[tuple[str], float]]:
    return (((name,), seconds) for name, seconds, _ in results)


def _successes(results: Iterable[Result]) -> Iterator[tuple[tuple[str], float]]:
    return (((name,), 1.0 if ok else 0.0) for name, _, ok in results)


RESULTS: tuple[Family, ...] = (
    # per collector, node_exporter's pair; their model is the (collector, seconds, success) list
    # npumon_scrape_collector_duration_seconds{collector="health"} 0.00012
    Family(
        "npumon_scrape_collector_duration_seconds",
        "gauge",
        "Seconds the collector took in the last render: formatting its families, or reusing its"
        " text while the snapshot parts it reads are unchanged (a scrape of an unchanged"
        " snapshot reuses the whole last render, and so these values).",
        ("collector",),
        _durations,
    ),
    Family(
        "npumon_scrape_collector_success",
        "gauge",
        "1 if the collector rendered, 0 if it failed and its families were left out.",
        ("collector",),
        _successes,
    ),
)

RELOAD: tuple[Family, ...] = (
    # the last config load (start or SIGHUP), named as Prometheus names its own; the model is
    # (successful, success timestamp)
    Family(
        "npumon_config_last_reload_successful",
        "gauge",
        "1 if the last configuration load (start or SIGHUP) succeeded, 0 if it was refused and the"
        " previous configuration kept running.",
        (),
        lambda outcome: [((), 1.0 if outcome[0] else 0.0)],
    ),
    Family(
        "npumon_config_last_reload_success_timestamp_seconds",
        "gauge",
        "Unix time in seconds of the last successful configuration load.",
        (),
        lambda outcome: [((), outcome[1])],
    ),
)

EDGE: tuple[Family, ...] = (
    # the HTTP edge's own counter; the model is the count
    Family(
        "npumon_http_bad_requests",
        "counter",
        "Malformed HTTP requests, answered 400 or closed, since npumon started.",
        (),
        lambda count: [((), float(count))],
    ),
)
