"""One reading per chip, merged once: which source wins for each field, and throttling.

Every precedence rule lives here, next to the field it fills. The store calls `read_chips`
once per source run; exporters render `ChipReading` fields and never choose between sources.
To add a metric from an existing source: a field and its rule here, a row in one family table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TypeVar

from npumon.daemon.model.attribution import NO_ATTRIBUTION, Attribution
from npumon.daemon.model.chips import (
    BoardReport,
    ChipCommon,
    ChipDcmi,
    ChipEcc,
    ChipId,
    ChipResults,
    ChipUsage,
    HealthReport,
    MappedChip,
    MemoryReport,
    TableChip,
    TableProcess,
)
from npumon.daemon.model.kubelet import ChipOwner, ProcessOwner

T = TypeVar("T")
"""(npu, chip): NPU ID and chip index inside the NPU, the identity of every per-chip series."""

HEALTH_STATES = ("ok", "warning", "alarm", "critical", "unknown", "heartbeat_lost")
"""The driver's health verdicts (npu-smi's texts), then ``heartbeat_lost``: npu-smi lists the chip
with every reading zeroed (``InfoTable.lost``), npumon's own state for it."""
HEARTBEAT_LOST = "heartbeat_lost"
THROTTLE_REASONS = ("thermal", "power", "unknown")
NOT_THROTTLED = "none"
"""``ChipReading.throttle`` when the chip runs at its clock (or idles down by design)."""


@dataclass(frozen=True, slots=True)
class ProcessReading:
    """One process holding device memory on a chip."""

    pid: int
    hbm_used_bytes: int
    name: str | None = None
    container_id: str | None = None
    owner: ProcessOwner = ProcessOwner()  # pod, or user and Slurm job (model/attribution.py)


@dataclass(frozen=True, slots=True)
class ChipReading:
    """Everything known about one chip, merged once from every source; a field per metric."""

    npu: int
    chip: int
    # known npu_chip_info labels, (name, value); None until the identity tier has tried the chip
    identity: tuple[tuple[str, str], ...] | None = ()
    health_state: str = "unknown"  # one of HEALTH_STATES
    error_codes: tuple[tuple[str, str], ...] = ()  # (code as printed, fault-table level)
    aicore_ratio: float | None = None
    aivector_ratio: float | None = None
    aicube_ratio: float | None = None
    aicpu_ratio: float | None = None
    ctrlcpu_ratio: float | None = None
    utilization_ratio: float | None = None
    hbm_bandwidth_ratio: float | None = None
    memory_bandwidth_ratio: float | None = None
    power_watts: float | None = None
    temperature_celsius: float | None = None
    hbm_temperature_celsius: float | None = None
    hbm_used_bytes: int | None = None
    hbm_total_bytes: int | None = None
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    hugepages_used: int | None = None
    hugepages_total: int | None = None
    aicore_frequency_hertz: float | None = None
    aicore_rated_frequency_hertz: float | None = None
    aicore_count: int | None = None
    throttle: str | None = None  # a THROTTLE_REASONS value, NOT_THROTTLED, None: cannot judge
    hbm_ecc_single_bit_errors: int | None = None
    hbm_ecc_double_bit_errors: int | None = None
    memory_ecc_single_bit_errors: int | None = None
    memory_ecc_double_bit_errors: int | None = None
    processes: tuple[ProcessReading, ...] = ()  # largest first, capped by the config
    capture_active: bool = False
    owners: tuple[ChipOwner, ...] = ()  # containers holding it (kubelet pod-resources)
    allocated: bool | None = None  # held by a container; None: no pod-resources on the node
    voltage_volts: float | None = None  # DCMI only
    pcie_bandwidth: tuple[tuple[str, str, str, float], ...] = ()  # DCMI only (ChipDcmi)
    vnpus: tuple[tuple[int, float, int, int], ...] = ()  # DCMI only (ChipDcmi)


@dataclass(frozen=True, slots=True)
class ThrottleRule:
    """When a chip of one model counts as throttled (from the config's `throttle` section)."""

    frequency_ratio: float  # clocked down: current < ratio x rated
    min_aicore_utilization: float  # under load: AI Core at least this busy
    temperature_celsius: float  # at or above: reason thermal
    power_watts: float  # at or above: reason power


ThrottleRules = Callable[[str | None], ThrottleRule]
"""The rule for a chip model name (exact name, longest prefix, default)."""
FaultLevel = Callable[[str], str]
"""A health error code's handling level in the fault table (`daemon/faults`), else unknown."""

_NO_USAGE = ChipUsage(chip=0)
_NO_COMMON = ChipCommon(chip=0)
_NO_ECC = ChipEcc(chip=0)
_NO_DCMI = ChipDcmi()
_NO_MEMORY = MemoryReport(npu=0, chip=None)
_NO_BOARD = BoardReport(npu=0, chip=None)
_NO_MAPPING = MappedChip(npu=0, chip=0, logic_id=None, name=None)


def first(*values: T | None) -> T | None:
    """The first known value of a precedence chain."""
    return next((v for v in values if v is not None), None)


def health_state(raw: str | None) -> str:
    """npu-smi's health text as a `state` label value (unknown texts are `unknown`)."""
    text = (raw or "").strip().lower()
    return text if text in HEALTH_STATES[:4] else "unknown"


def lost_chips(
    results: ChipResults,
    known: Iterable[ChipReading],
    *,
    fault_level: FaultLevel = lambda code: "unknown",
    owners: Attribution = NO_ATTRIBUTION,
) -> tuple[ChipReading, ...]:
    """A reading per chip whose heartbeat is lost (``InfoTable.lost``): still a chip, with the
    identity it had when last ``known`` (the previous readings), who holds it, the error codes
    the health tier last read, state heartbeat_lost and no readings (npu-smi prints zeros)."""
    if results.table is None:
        return ()
    before = {(c.npu, c.chip): c for c in known}
    out = []
    for npu, chip in results.table.lost:
        last = before.get((npu, chip))
        health = results.health.get((npu, chip))
        out.append(
            ChipReading(
                npu=npu,
                chip=chip,
                identity=last.identity if last is not None else None,
                health_state=HEARTBEAT_LOST,
                error_codes=tuple(
                    (code, fault_level(code))
                    for code in dict.fromkeys(health.error_codes if health else ())
                ),
                owners=owners.owners((npu, chip)),
                allocated=owners.allocated((npu, chip)),
            )
        )
    return tuple(out)


@dataclass(frozen=True, slots=True)
class ChipParts:
    """What each npu-smi query says about one chip (None: not read, failed or unsupported)."""

    table: TableChip
    usage: ChipUsage | None = None
    common: ChipCommon | None = None
    health: HealthReport | None = None
    ecc: ChipEcc | None = None
    memory: MemoryReport | None = None
    chip_board: BoardReport | None = None  # -t board -i N -c M (vdie, chip name, firmware)
    card_board: BoardReport | None = None  # -t board -i N (serial, firmware)
    mapping: MappedChip | None = None  # -m (logic id, phy id)
    processes: tuple[TableProcess, ...] = ()
    dcmi: ChipDcmi | None = None  # what only DCMI gives
    identity_pending: bool = False  # the identity tier has not tried this chip's NPU yet


def read_chips(
    results: ChipResults,
    rules: ThrottleRules,
    *,
    max_processes: int,
    capturing: frozenset[ChipId] = frozenset(),
    fault_level: FaultLevel = lambda code: "unknown",
    owners: Attribution = NO_ATTRIBUTION,
) -> tuple[ChipReading, ...]:
    """One reading per chip of the latest table (no table: no chips, never stale ones)."""
    if results.table is None:
        return ()
    mapped = {(m.npu, m.chip): m for m in (results.mapping.chips if results.mapping else ())}
    return tuple(
        read_chip(
            ChipParts(
                table=t,
                usage=results.usage.get((t.npu, t.chip)),
                common=results.common.get((t.npu, t.chip)),
                health=results.health.get((t.npu, t.chip)),
                ecc=results.ecc.get((t.npu, t.chip)),
                memory=results.memory.get((t.npu, t.chip)),
                chip_board=results.chip_board.get((t.npu, t.chip)),
                card_board=results.card_board.get(t.npu),
                mapping=mapped.get((t.npu, t.chip)),
                processes=_processes_of(results.table.processes, (t.npu, t.chip)),
                dcmi=results.dcmi.get((t.npu, t.chip)),
                identity_pending=t.npu in results.identity_pending,
            ),
            rules(t.name),
            max_processes=max_processes,
            capturing=(t.npu, t.chip) in capturing,
            fault_level=fault_level,
            owners=owners,
        )
        for t in results.table.chips
    )


def read_chip(
    parts: ChipParts,
    rule: ThrottleRule,
    *,
    max_processes: int,
    capturing: bool = False,
    fault_level: FaultLevel = lambda code: "unknown",
    owners: Attribution = NO_ATTRIBUTION,
) -> ChipReading:
    """The merged reading of one chip: the most specific or freshest tier first, per field."""
    t, u = parts.table, parts.usage or _NO_USAGE
    c, m = parts.common or _NO_COMMON, parts.memory or _NO_MEMORY
    e, d = parts.ecc or _NO_ECC, parts.dcmi or _NO_DCMI
    reading = ChipReading(
        npu=t.npu,
        chip=t.chip,
        identity=_identity(parts),
        health_state=health_state(first(parts.health.status if parts.health else None, t.health)),
        error_codes=tuple(
            (code, fault_level(code))
            for code in dict.fromkeys(parts.health.error_codes if parts.health else ())
        ),
        aicore_ratio=first(u.aicore_ratio, c.aicore_ratio, t.aicore_ratio),
        # 310P calls its vector unit "Vectorcore"; it is the same thing as AI Vector.
        aivector_ratio=first(u.aivector_ratio, u.vectorcore_ratio),
        aicube_ratio=u.aicube_ratio,
        aicpu_ratio=u.aicpu_ratio,
        ctrlcpu_ratio=u.ctrlcpu_ratio,
        utilization_ratio=first(u.npu_util_ratio, c.npu_util_ratio, t.npu_util_ratio),
        hbm_bandwidth_ratio=u.hbm_bandwidth_ratio,
        memory_bandwidth_ratio=u.memory_bandwidth_ratio,
        power_watts=first(t.power_watts, c.power_watts),
        temperature_celsius=first(t.temperature_celsius, c.temperature_celsius),
        hbm_temperature_celsius=m.hbm_temperature_celsius,
        hbm_used_bytes=t.hbm_used_bytes,
        hbm_total_bytes=first(t.hbm_total_bytes, u.hbm_total_bytes, m.hbm_total_bytes),
        memory_used_bytes=t.memory_used_bytes,
        memory_total_bytes=first(t.memory_total_bytes, u.memory_total_bytes, m.memory_total_bytes),
        hugepages_used=t.hugepages_used,
        hugepages_total=first(t.hugepages_total, u.hugepages_total),
        aicore_frequency_hertz=c.aicore_current_hertz,
        aicore_rated_frequency_hertz=c.aicore_rated_hertz,
        aicore_count=c.aicore_count,
        # ECC: the lifetime Aggregate Total when printed, else the count since the driver loaded
        hbm_ecc_single_bit_errors=first(e.hbm_single_bit_aggregate_total, e.hbm_single_bit_errors),
        hbm_ecc_double_bit_errors=first(e.hbm_double_bit_aggregate_total, e.hbm_double_bit_errors),
        memory_ecc_single_bit_errors=first(
            e.ddr_single_bit_aggregate_total, e.ddr_single_bit_errors
        ),
        memory_ecc_double_bit_errors=first(
            e.ddr_double_bit_aggregate_total, e.ddr_double_bit_errors
        ),
        processes=largest_processes(parts.processes, max_processes, owners),
        capture_active=capturing,
        owners=owners.owners((t.npu, t.chip)),
        allocated=owners.allocated((t.npu, t.chip)),
        voltage_volts=d.voltage_volts,
        pcie_bandwidth=d.pcie_bandwidth,
        vnpus=d.vnpus,
    )
    return _with_throttle(reading, rule, capturing)


def _identity(parts: ChipParts) -> tuple[tuple[str, str], ...] | None:
    """npu_chip_info labels, the most specific tier first; unknown ones are left out; None
    while the identity tier has not tried the chip (npu_chip_info waits for it)."""
    if parts.identity_pending:
        return None
    t, m = parts.table, parts.mapping or _NO_MAPPING
    cb, kb = parts.chip_board or _NO_BOARD, parts.card_board or _NO_BOARD
    # A card-level board report describes chip 0's PCI function only, so no bus_id from it.
    values: dict[str, object | None] = {
        "logic_id": first(m.logic_id, t.logic_id),
        "phy_id": first(m.phy_id, t.phy_id),
        "name": first(t.name, m.name, cb.chip_name),
        "bus_id": first(t.bus_id, cb.bus_id),
        "serial": first(cb.serial, kb.serial),
        "vdie_id": cb.vdie_id,
        "firmware_version": first(cb.firmware_version, kb.firmware_version),
    }
    return tuple((k, str(v)) for k, v in values.items() if v is not None and str(v) != "")


def _processes_of(rows: Iterable[TableProcess], chip: ChipId) -> tuple[TableProcess, ...]:
    # The 950 layout keys processes by NPU only: they belong to chip 0.
    return tuple(p for p in rows if (p.npu, p.chip if p.chip is not None else 0) == chip)


def largest_processes(
    rows: Iterable[TableProcess], limit: int, owners: Attribution = NO_ATTRIBUTION
) -> tuple[ProcessReading, ...]:
    """The ``limit`` processes holding the most memory, one per pid (a repeated row once)."""
    known = sorted(
        (p for p in rows if p.memory_bytes is not None),
        key=lambda p: (-(p.memory_bytes or 0), p.pid),
    )
    unique: dict[int, ProcessReading] = {}
    for p in known:
        if len(unique) >= limit:
            break
        unique.setdefault(
            p.pid,
            ProcessReading(
                p.pid,
                p.memory_bytes or 0,
                p.name or None,
                p.container_id or None,
                owners.processes.get(p.pid, ProcessOwner()),
            ),
        )
    return tuple(unique.values())


def _with_throttle(r: ChipReading, rule: ThrottleRule, capturing: bool) -> ChipReading:
    """Clocked down under load, and why. Idle down-clocking is by design, not throttling.

    Cannot be judged (None) without both clocks, without a load, or while a capture zeroes
    AI Core.
    """
    current, rated, load = r.aicore_frequency_hertz, r.aicore_rated_frequency_hertz, r.aicore_ratio
    if current is None or rated is None or load is None or capturing:
        return r
    if current >= rule.frequency_ratio * rated or load < rule.min_aicore_utilization:
        return replace(r, throttle=NOT_THROTTLED)
    if r.temperature_celsius is not None and r.temperature_celsius >= rule.temperature_celsius:
        return replace(r, throttle="thermal")
    if r.power_watts is not None and r.power_watts >= rule.power_watts:
        return replace(r, throttle="power")
    return replace(r, throttle="unknown")
