"""Per-chip memory, clock, ECC, process and profiling families: pure functions of a NodeSnapshot."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.samples import Sample

from npumon.daemon.model.npu_smi import TableProcess
from npumon.daemon.model.snapshot import ChipSnapshot, NodeSnapshot
from npumon.exporters.families import (
    CHIP_LABELS,
    MAX_PROCESSES_PER_CHIP,
    SAMPLED,
    THROTTLE_REASONS,
    Pick,
    chip_gauge,
    first,
    ids,
)


def _hbm_total(c: ChipSnapshot) -> int | None:
    return first(
        c.table.hbm_total_bytes,
        c.usage.hbm_total_bytes if c.usage else None,
        c.memory.hbm_total_bytes if c.memory else None,
    )


def _memory_total(c: ChipSnapshot) -> int | None:
    return first(
        c.table.memory_total_bytes,
        c.usage.memory_total_bytes if c.usage else None,
        c.memory.memory_total_bytes if c.memory else None,
    )


def _hugepages_total(c: ChipSnapshot) -> int | None:
    return first(c.table.hugepages_total, c.usage.hugepages_total if c.usage else None)


_TABLE = "from the npu-smi info table"
_DETAIL = "from the npu-smi info table, else -t usages, else -t memory"
_MEMORY: tuple[tuple[str, str, Pick], ...] = (
    ("npu_hbm_used_bytes", f"HBM in use in bytes, {_TABLE}.", lambda c: c.table.hbm_used_bytes),
    ("npu_hbm_total_bytes", f"HBM capacity in bytes, {_DETAIL}.", _hbm_total),
    (
        "npu_memory_used_bytes",
        f"DDR memory in use in bytes, {_TABLE}.",
        lambda c: c.table.memory_used_bytes,
    ),
    ("npu_memory_total_bytes", f"DDR memory capacity in bytes, {_DETAIL}.", _memory_total),
    (
        "npu_hugepages_used_pages",
        f"Hugepages in use (pages), {_TABLE}.",
        lambda c: c.table.hugepages_used,
    ),
    (
        "npu_hugepages_total_pages",
        f"Hugepages available (pages), {_TABLE}, else -t usages.",
        _hugepages_total,
    ),
)


def render_memory(snap: NodeSnapshot) -> Iterator[Metric]:
    """HBM, DDR memory and hugepages (named *_pages: promtool rejects a gauge ending in _total).

    npu_hbm_used_bytes{npu="0",chip="0"} 3.4359738368e+09
    npu_hbm_total_bytes{npu="0",chip="0"} 6.8719476736e+10
    npu_hugepages_total_pages{npu="0",chip="0"} 15
    """
    for name, doc, pick in _MEMORY:
        yield chip_gauge(name, doc, snap.chips, pick)


def render_clocks(snap: NodeSnapshot) -> Iterator[Metric]:
    """AI Core clocks from -t common, and throttling as a state set over the reasons.

    npu_aicore_frequency_hertz{npu="0",chip="0"} 1.8e+09
    npu_throttled{npu="0",chip="0",reason="thermal"} 1
    npu_throttled{npu="0",chip="0",reason="power"} 0
    """
    chips = snap.chips
    yield chip_gauge(
        "npu_aicore_frequency_hertz",
        "Current AI Core clock in hertz, from npu-smi info -t common (Aicore curFreq).",
        chips,
        lambda c: c.common.aicore_current_hertz if c.common else None,
    )
    yield chip_gauge(
        "npu_aicore_rated_frequency_hertz",
        "Rated AI Core clock in hertz, from npu-smi info -t common (Aicore Freq).",
        chips,
        lambda c: c.common.aicore_rated_hertz if c.common else None,
    )
    throttled = GaugeMetricFamily(
        "npu_throttled",
        "1 on the reason (thermal, power, unknown) while the chip is clocked down under load,"
        " 0 on the others; all 0 when not throttled; no series when it cannot be judged."
        " Judged by npumon from the npu-smi clocks, temperature and power. " + SAMPLED,
        labels=(*CHIP_LABELS, "reason"),
    )
    for c in chips:
        if c.throttle is None:
            continue
        reason = c.throttle.reason if c.throttle.reason in THROTTLE_REASONS else "unknown"
        for r in THROTTLE_REASONS:
            on = c.throttle.throttled and r == reason
            throttled.add_metric([*ids(c), r], 1.0 if on else 0.0)
    yield throttled


def render_ecc(snap: NodeSnapshot) -> Iterator[Metric]:
    """ECC error counters from -t ecc: the aggregate total when printed, else the current count.

    npu_hbm_ecc_errors_total{npu="0",chip="0",bits="single"} 0
    npu_hbm_ecc_errors_total{npu="0",chip="0",bits="double"} 0
    """
    hbm = CounterMetricFamily(
        "npu_hbm_ecc_errors",
        "HBM ECC errors, from npu-smi info -t ecc: the lifetime Aggregate Total when printed,"
        " else the error count since the driver loaded. " + SAMPLED,
        labels=(*CHIP_LABELS, "bits"),
    )
    ddr = CounterMetricFamily(
        "npu_memory_ecc_errors",
        "DDR memory ECC errors, from npu-smi info -t ecc: the Aggregate Total when printed,"
        " else the error count since the driver loaded. " + SAMPLED,
        labels=(*CHIP_LABELS, "bits"),
    )
    for c in snap.chips:
        e = c.ecc
        if e is None:
            continue
        pairs = (
            (hbm, "single", first(e.hbm_single_bit_aggregate_total, e.hbm_single_bit_errors)),
            (hbm, "double", first(e.hbm_double_bit_aggregate_total, e.hbm_double_bit_errors)),
            (ddr, "single", first(e.ddr_single_bit_aggregate_total, e.ddr_single_bit_errors)),
            (ddr, "double", first(e.ddr_double_bit_aggregate_total, e.ddr_double_bit_errors)),
        )
        for family, bits, value in pairs:
            if value is not None:
                family.add_metric([*ids(c), bits], float(value))
    yield hbm
    yield ddr


def render_processes(snap: NodeSnapshot) -> Iterator[Metric]:
    """HBM used per process on a chip, the largest MAX_PROCESSES_PER_CHIP only.

    npu_process_hbm_used_bytes{npu="0",chip="0",pid="4242",process_name="python3"} 1.2e+09
    """
    family = Metric(
        "npu_process_hbm_used_bytes",
        "Device memory used by a process in bytes, from the npu-smi info process table; at most"
        f" {MAX_PROCESSES_PER_CHIP} per chip (the largest). " + SAMPLED,
        "gauge",
    )
    for c in snap.chips:
        for p in _top_processes(c.processes):
            labels = dict(zip(CHIP_LABELS, ids(c), strict=True)) | {"pid": str(p.pid)}
            if p.name:
                labels["process_name"] = p.name
            # container_id is filled by the table source from /proc (not by the parser)
            container = p.container_id
            if container:
                labels["container_id"] = str(container)
            assert p.memory_bytes is not None  # _top_processes keeps known values only
            family.samples.append(Sample(family.name, labels, float(p.memory_bytes), None, None))
    yield family


def _top_processes(procs: tuple[TableProcess, ...]) -> list[TableProcess]:
    known = [p for p in procs if p.memory_bytes is not None]
    known.sort(key=lambda p: (-(p.memory_bytes or 0), p.pid))
    # One series per pid: a repeated row must not become a duplicate series.
    unique: dict[int, TableProcess] = {}
    for p in known:
        unique.setdefault(p.pid, p)
    return list(unique.values())[:MAX_PROCESSES_PER_CHIP]


def render_profiling(snap: NodeSnapshot) -> Iterator[Metric]:
    """Whether a profiler capture runs on the chip (its AI Core utilization then reads 0).

    npu_profiling_active{npu="0",chip="0"} 0
    """
    yield chip_gauge(
        "npu_profiling_active",
        "1 while an npumon profiler capture runs on the chip (AI Core utilization reads 0 then).",
        snap.chips,
        lambda c: 1.0 if c.profiling_active else 0.0,
    )
