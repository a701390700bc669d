"""Hand-built chip parts (values read off real npu-smi outputs), merged, and exposition helpers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from npumon.daemon.model.chips import (
    BoardReport,
    ChipCommon,
    ChipEcc,
    ChipUsage,
    HealthReport,
    MappedChip,
    MemoryReport,
    TableChip,
    TableProcess,
)
from npumon.daemon.model.reading import ChipParts, ChipReading, ThrottleRule, read_chip
from npumon.daemon.model.snapshot import NodeIdentity, NodeSnapshot, SourceStatus
from npumon.exporters.collector import NpuCollector
from tests.helpers.exposition import key, samples

__all__ = ["key", "samples"]  # with the builders below, the kit of the exporter tests

MIB = 1024 * 1024

RULE = ThrottleRule(
    frequency_ratio=0.95, min_aicore_utilization=0.5, temperature_celsius=85.0, power_watts=400.0
)


def table_chip(npu: int, chip: int, **fields: object) -> TableChip:
    """A table chip with every value absent unless given."""
    base = TableChip(
        npu=npu,
        chip=chip,
        name=None,
        health=None,
        power_watts=None,
        temperature_celsius=None,
        hugepages_used=None,
        hugepages_total=None,
        bus_id=None,
        aicore_ratio=None,
        memory_used_bytes=None,
        memory_total_bytes=None,
        hbm_used_bytes=None,
        hbm_total_bytes=None,
    )
    return replace(base, **fields)  # type: ignore[arg-type]


def chip_910b() -> ChipParts:
    """NPU 0 of info_910b4-1_2chip_procs_25.2.2.txt, plus detail tiers as npu-smi prints them."""
    table = table_chip(
        0,
        0,
        name="910B4-1",
        health="OK",
        power_watts=78.2,
        temperature_celsius=40.0,
        hugepages_used=0,
        hugepages_total=0,
        bus_id="0000:0E:00.0",
        aicore_ratio=0.0,
        memory_used_bytes=0,
        memory_total_bytes=0,
        hbm_used_bytes=61825 * MIB,
        hbm_total_bytes=65536 * MIB,
    )
    return ChipParts(
        table=table,
        usage=ChipUsage(
            chip=0,
            aicore_ratio=0.35,
            aivector_ratio=0.2,
            aicube_ratio=0.3,
            aicpu_ratio=0.01,
            ctrlcpu_ratio=0.05,
            npu_util_ratio=0.4,
            hbm_bandwidth_ratio=0.12,
            memory_bandwidth_ratio=None,
            hbm_total_bytes=65536 * MIB,
        ),
        common=ChipCommon(
            chip=0,
            aicore_ratio=0.33,
            aicore_rated_hertz=1.8e9,
            aicore_current_hertz=1.8e9,
            temperature_celsius=41.0,
            power_watts=80.0,
        ),
        health=HealthReport(status="OK"),
        ecc=ChipEcc(
            chip=0,
            hbm_single_bit_errors=3,
            hbm_double_bit_errors=0,
            hbm_single_bit_aggregate_total=17,
            hbm_double_bit_aggregate_total=None,
        ),
        memory=MemoryReport(npu=0, chip=0, hbm_temperature_celsius=44.0),
        chip_board=BoardReport(npu=0, chip=0, firmware_version="7.7.0.1.231", vdie_id="AB12"),
        card_board=BoardReport(npu=0, chip=None, serial="SN0001", firmware_version="7.0.0"),
        mapping=MappedChip(npu=0, chip=0, logic_id=0, name="Ascend 910B4-1"),
        processes=(
            TableProcess(npu=0, chip=0, pid=19334, name="VLLMWorker_TP", memory_bytes=58472 * MIB),
            TableProcess(npu=0, chip=0, pid=777, name=None, memory_bytes=100 * MIB),
        ),
    )


def chips_a3() -> tuple[ChipParts, ChipParts]:
    """NPU 1 of info_a3_ascend910_phyid_proc.txt: two dies, die 1 prints '-' for power."""
    die0 = table_chip(
        1,
        0,
        name="Ascend910",
        health="OK",
        power_watts=167.1,
        temperature_celsius=38.0,
        bus_id="0000:37:00.0",
        aicore_ratio=0.0,
        phy_id=2,
        hbm_used_bytes=3116 * MIB,
        hbm_total_bytes=65536 * MIB,
    )
    die1 = table_chip(
        1,
        1,
        name="Ascend910",
        health="OK",
        power_watts=None,
        temperature_celsius=38.0,
        bus_id="0000:39:00.0",
        aicore_ratio=0.0,
        phy_id=3,
        hbm_used_bytes=10568 * MIB,
        hbm_total_bytes=65536 * MIB,
    )
    proc = TableProcess(npu=1, chip=1, pid=990711, name="python", memory_bytes=7746 * MIB)
    return (
        ChipParts(table=die0),
        ChipParts(table=die1, processes=(proc,)),
    )


def chip_310p() -> ChipParts:
    """info_310p3_1chip_power_na_25.3rc1.txt: power NA, DDR only, Vectorcore in -t usages."""
    table = table_chip(
        6,
        0,
        name="310P3",
        health="OK",
        power_watts=None,
        temperature_celsius=50.0,
        hugepages_used=0,
        hugepages_total=0,
        bus_id="0000:84:00.0",
        aicore_ratio=0.0,
        memory_used_bytes=1839 * MIB,
        memory_total_bytes=21525 * MIB,
        logic_id=0,
    )
    usage = ChipUsage(chip=0, aicore_ratio=0.0, vectorcore_ratio=0.12, aicpu_ratio=0.0)
    return ChipParts(table=table, usage=usage)


def merged(parts: ChipParts, *, max_processes: int = 8, capturing: bool = False) -> ChipReading:
    """The reading the store would build from these parts (daemon/model/reading.py)."""
    return read_chip(parts, RULE, max_processes=max_processes, capturing=capturing)


def node(*chips: ChipParts | ChipReading, sources: tuple[SourceStatus, ...] = ()) -> NodeSnapshot:
    return NodeSnapshot(
        taken_at=1_700_000_000.0,
        node=NodeIdentity(npu_smi_version="25.2.2", driver_version="25.2.2"),
        chips=tuple(c if isinstance(c, ChipReading) else merged(c) for c in chips),
        sources=sources,
        has_table=True,
    )


def render(snap: NodeSnapshot | Callable[[], NodeSnapshot], **kwargs: object) -> bytes:
    """The text exposition of a fresh NpuCollector."""
    latest = snap if callable(snap) else (lambda: snap)
    return NpuCollector(latest, "1.2.3", **kwargs).exposition()  # type: ignore[arg-type]
