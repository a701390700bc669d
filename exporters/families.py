"""Per-chip metric families rendered from a NodeSnapshot: pure functions, no I/O, no state."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TypeVar

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.samples import Sample

from npumon.daemon.model.snapshot import HEALTH_STATES, ChipSnapshot, NodeSnapshot, health_state

CHIP_LABELS = ("npu", "chip")
THROTTLE_REASONS = ("thermal", "power", "unknown")
MAX_PROCESSES_PER_CHIP = 8
SAMPLED = "Sampled in the background by npumon; see npumon_source_last_success_timestamp_seconds."

T = TypeVar("T")
Pick = Callable[[ChipSnapshot], float | None]


def ids(c: ChipSnapshot) -> list[str]:
    """The identity label values (npu, chip) of a chip's series."""
    return [str(c.npu), str(c.chip)]


def first(*values: T | None) -> T | None:
    """The first known value: the fallback chain between npu-smi tiers."""
    return next((v for v in values if v is not None), None)


def chip_gauge(name: str, doc: str, chips: Sequence[ChipSnapshot], pick: Pick) -> Metric:
    """One gauge family with a sample per chip whose value is known (None -> no sample)."""
    family = GaugeMetricFamily(name, f"{doc} {SAMPLED}", labels=CHIP_LABELS)
    for c in chips:
        value = pick(c)
        if value is not None:
            family.add_metric(ids(c), float(value))
    return family


def render_identity(snap: NodeSnapshot) -> Iterator[Metric]:
    """Identity info metrics, joined in queries on (npu, chip).

    npu_chip_info{npu="0",chip="0",name="910B4",bus_id="0000:C1:00.0",logic_id="0"} 1
    npu_node_info{driver_version="23.0.rc2",npu_smi_version="23.0.rc2"} 1
    """
    chips = Metric(
        "npu_chip_info",
        "Identity of a chip (always 1), from npu-smi info, -m and -t board; only known labels.",
        "gauge",
    )
    for c in snap.chips:
        labels = dict(zip(CHIP_LABELS, ids(c), strict=True)) | _chip_identity(c)
        chips.samples.append(_sample("npu_chip_info", labels, 1.0))
    yield chips
    node = snap.node
    known = {
        "npu_smi_version": node.npu_smi_version,
        "driver_version": node.driver_version,
        "cann_version": node.cann_version,
    }
    info = Metric(
        "npu_node_info", "Versions of the node's NPU software (always 1), from npu-smi.", "gauge"
    )
    labels = _known(known)
    if labels:
        info.samples.append(_sample("npu_node_info", labels, 1.0))
    yield info


def _chip_identity(c: ChipSnapshot) -> dict[str, str]:
    """Identity labels, the most specific npu-smi tier first; unknown ones are left out."""
    t, m, cb, kb = c.table, c.mapping, c.chip_board, c.card_board
    # A card-level board report describes chip 0's PCI function only, so no bus_id from it.
    values: dict[str, object | None] = {
        "logic_id": first(m.logic_id if m else None, t.logic_id),
        "phy_id": first(m.phy_id if m else None, t.phy_id),
        "name": first(t.name, m.name if m else None, cb.chip_name if cb else None),
        "bus_id": first(t.bus_id, cb.bus_id if cb else None),
        "serial": first(cb.serial if cb else None, kb.serial if kb else None),
        "vdie_id": cb.vdie_id if cb else None,
        "firmware_version": first(
            cb.firmware_version if cb else None, kb.firmware_version if kb else None
        ),
    }
    return _known(values)


def _known(values: Mapping[str, object]) -> dict[str, str]:
    return {k: str(v) for k, v in values.items() if v is not None and str(v) != ""}


def _sample(name: str, labels: dict[str, str], value: float) -> Sample:
    # Building Sample tuples directly lets one family carry different label sets
    # (info metrics whose unknown labels are left out rather than set to "").
    return Sample(name, labels, value, None, None)


def render_health(snap: NodeSnapshot) -> Iterator[Metric]:
    """Health as a one-hot state set, plus one info sample per active error code.

    npu_health_state{npu="0",chip="0",state="ok"} 1
    npu_health_state{npu="0",chip="0",state="alarm"} 0
    npu_error_code_info{npu="0",chip="0",code="80E01801"} 1
    """
    state = GaugeMetricFamily(
        "npu_health_state",
        "1 for the chip's current health state, 0 for the others; from npu-smi info -t health"
        " when read, else the npu-smi info table. " + SAMPLED,
        labels=(*CHIP_LABELS, "state"),
    )
    codes = GaugeMetricFamily(
        "npu_error_code_info",
        "1 per error code the chip reports, from npu-smi info -t health. " + SAMPLED,
        labels=(*CHIP_LABELS, "code"),
    )
    for c in snap.chips:
        raw = first(c.health.status if c.health else None, c.table.health)
        current = health_state(raw)
        for s in HEALTH_STATES:
            state.add_metric([*ids(c), s], 1.0 if s == current else 0.0)
        for code in dict.fromkeys(c.health.error_codes if c.health else ()):
            codes.add_metric([*ids(c), code], 1.0)
    yield state
    yield codes


def _usage(attr: str) -> Pick:
    return lambda c: getattr(c.usage, attr) if c.usage else None


def _aicore(c: ChipSnapshot) -> float | None:
    return first(
        c.usage.aicore_ratio if c.usage else None,
        c.common.aicore_ratio if c.common else None,
        c.table.aicore_ratio,
    )


def _aivector(c: ChipSnapshot) -> float | None:
    # 310P calls its vector unit "Vectorcore"; it is the same thing as AI Vector.
    return first(c.usage.aivector_ratio, c.usage.vectorcore_ratio) if c.usage else None


def _overall(c: ChipSnapshot) -> float | None:
    return first(c.usage.npu_util_ratio if c.usage else None, c.table.npu_util_ratio)


_USAGES = "(ratio 0..1) from npu-smi info -t usages"
_UTILIZATION: tuple[tuple[str, str, Pick], ...] = (
    (
        "npu_aicore_utilization_ratio",
        "AI Core utilization (ratio 0..1) from npu-smi info -t usages, else -t common, else the"
        " npu-smi info table. Reads 0 while a profiler capture runs (npu_profiling_active).",
        _aicore,
    ),
    (
        "npu_aivector_utilization_ratio",
        f"AI Vector (310P: Vectorcore) utilization {_USAGES}.",
        _aivector,
    ),
    ("npu_aicube_utilization_ratio", f"AI Cube utilization {_USAGES}.", _usage("aicube_ratio")),
    ("npu_aicpu_utilization_ratio", f"AI CPU utilization {_USAGES}.", _usage("aicpu_ratio")),
    (
        "npu_ctrlcpu_utilization_ratio",
        f"Control CPU utilization {_USAGES}.",
        _usage("ctrlcpu_ratio"),
    ),
    (
        "npu_utilization_ratio",
        "Overall NPU utilization (ratio 0..1) from npu-smi info -t usages, else the 950 table.",
        _overall,
    ),
    (
        "npu_hbm_bandwidth_utilization_ratio",
        f"HBM bandwidth utilization {_USAGES}.",
        _usage("hbm_bandwidth_ratio"),
    ),
    (
        "npu_memory_bandwidth_utilization_ratio",
        f"DDR memory bandwidth utilization {_USAGES}.",
        _usage("memory_bandwidth_ratio"),
    ),
)


def render_utilization(snap: NodeSnapshot) -> Iterator[Metric]:
    """Utilization ratios 0..1 from -t usages (AI Core: then -t common, then the table).

    npu_aicore_utilization_ratio{npu="0",chip="0"} 0.87
    npu_hbm_bandwidth_utilization_ratio{npu="0",chip="0"} 0.31
    """
    for name, doc, pick in _UTILIZATION:
        yield chip_gauge(name, doc, snap.chips, pick)


def render_power_thermal(snap: NodeSnapshot) -> Iterator[Metric]:
    """Power and temperatures, table first, else -t common.

    npu_power_watts{npu="0",chip="0"} 93.4
    npu_temperature_celsius{npu="0",chip="0"} 45
    """
    chips = snap.chips
    yield chip_gauge(
        "npu_power_watts",
        "Chip power draw in watts, from the npu-smi info table, else npu-smi info -t common.",
        chips,
        lambda c: first(c.table.power_watts, c.common.power_watts if c.common else None),
    )
    yield chip_gauge(
        "npu_temperature_celsius",
        "Chip temperature in degrees celsius, from the npu-smi info table, else -t common.",
        chips,
        lambda c: first(
            c.table.temperature_celsius, c.common.temperature_celsius if c.common else None
        ),
    )
    yield chip_gauge(
        "npu_hbm_temperature_celsius",
        "HBM temperature in degrees celsius, from npu-smi info -t memory.",
        chips,
        lambda c: c.memory.hbm_temperature_celsius if c.memory else None,
    )
