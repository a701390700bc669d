"""daemon/model/reading.py: which tier wins per field, throttling, the one process cap."""

from __future__ import annotations

from dataclasses import replace

import pytest

from npumon.daemon.config import parse_config
from npumon.daemon.model.chips import (
    ChipCommon,
    ChipResults,
    ChipUsage,
    InfoTable,
    MemoryReport,
    TableChip,
    TableProcess,
)
from npumon.daemon.model.reading import ChipParts, ThrottleRule, read_chip
from npumon.daemon.model.snapshot import SourceStatus
from npumon.daemon.store import SnapshotStore

MIB = 1024 * 1024
CONFIG = parse_config(
    {"throttle": {"limits": {"910B": {"temperature_celsius": 80, "power_watts": 350}}}}
).throttle
CHIP = TableChip(
    npu=0,
    chip=0,
    name="910B3",
    health="OK",
    power_watts=300.0,
    temperature_celsius=60.0,
    hugepages_used=0,
    hugepages_total=0,
    bus_id="0000:C1:00.0",
    aicore_ratio=0.9,
    memory_used_bytes=0,
    memory_total_bytes=0,
    hbm_used_bytes=1,
    hbm_total_bytes=2,
)
RATED = 1800e6
STATUS = SourceStatus("npu_smi_table", True, 0.0, 1.0, 0)


def rule(name: str | None) -> ThrottleRule:
    limits = CONFIG.limits_for(name)
    return ThrottleRule(
        CONFIG.frequency_ratio,
        CONFIG.min_aicore_utilization,
        limits.temperature_celsius,
        limits.power_watts,
    )


def common(current_mhz: float, load: float | None = 0.9) -> ChipCommon:
    return ChipCommon(
        chip=0, aicore_ratio=load, aicore_rated_hertz=RATED, aicore_current_hertz=current_mhz * 1e6
    )


def throttle(
    table: TableChip,
    common: ChipCommon | None,
    usage: ChipUsage | None = None,
    capturing: bool = False,
) -> str | None:
    parts = ChipParts(table=table, usage=usage, common=common)
    return read_chip(parts, rule(table.name), max_processes=8, capturing=capturing).throttle


def test_full_clock_under_load_is_not_throttled() -> None:
    assert throttle(CHIP, common(1800)) == "none"


def test_idle_down_clocking_is_not_throttling() -> None:
    # the real 910B1 sample: 800 MHz of 1800 at 0 % AI Core
    assert throttle(replace(CHIP, aicore_ratio=0.0), common(800, 0.0)) == "none"


@pytest.mark.parametrize(
    ("temperature", "power", "reason"),
    [(80.0, 300.0, "thermal"), (70.0, 350.0, "power"), (70.0, 300.0, "unknown")],
)
def test_reason_from_the_chip_models_limits(temperature: float, power: float, reason: str) -> None:
    hot = replace(CHIP, temperature_celsius=temperature, power_watts=power)
    assert throttle(hot, common(1200)) == reason


def test_usage_load_wins_over_the_table() -> None:
    chip = replace(CHIP, aicore_ratio=0.1)
    usage = ChipUsage(chip=0, aicore_ratio=0.95)
    assert throttle(chip, common(1200, None), usage) == "unknown"


def test_cannot_judge_without_frequencies_or_while_capturing() -> None:
    assert throttle(CHIP, None) is None
    assert throttle(CHIP, replace(common(1200), aicore_rated_hertz=None)) is None
    assert throttle(CHIP, common(1200), capturing=True) is None


def test_model_without_limits_uses_the_defaults() -> None:
    chip = replace(CHIP, name="310P3", temperature_celsius=84.0)
    assert throttle(chip, common(900)) == "unknown"
    assert throttle(replace(chip, temperature_celsius=85.0), common(900)) == "thermal"


def test_table_first_then_common_for_power_and_temperature() -> None:
    die = replace(CHIP, power_watts=None, temperature_celsius=None)
    c = replace(common(1800), power_watts=91.0, temperature_celsius=47.0)
    reading = read_chip(ChipParts(table=die, common=c), rule(None), max_processes=8)
    assert (reading.power_watts, reading.temperature_celsius) == (91.0, 47.0)
    reading = read_chip(ChipParts(table=CHIP, common=c), rule(None), max_processes=8)
    assert (reading.power_watts, reading.temperature_celsius) == (300.0, 60.0)


def test_totals_fall_back_from_the_table_to_usages_to_memory() -> None:
    no_totals = replace(CHIP, hbm_total_bytes=None, memory_total_bytes=None)
    memory = MemoryReport(npu=0, chip=0, hbm_total_bytes=64 * MIB, memory_total_bytes=32 * MIB)
    usage = ChipUsage(chip=0, hbm_total_bytes=65 * MIB)
    parts = ChipParts(table=no_totals, usage=usage, memory=memory)
    reading = read_chip(parts, rule(None), max_processes=8)
    assert (reading.hbm_total_bytes, reading.memory_total_bytes) == (65 * MIB, 32 * MIB)


def processes(sizes_mib: list[int]) -> tuple[TableProcess, ...]:
    return tuple(
        TableProcess(npu=0, chip=0, pid=100 + i, name=f"p{i}", memory_bytes=size * MIB)
        for i, size in enumerate(sizes_mib)
    )


@pytest.mark.parametrize("cap", [2, 8, 12])
def test_the_store_keeps_the_largest_processes_up_to_the_config_cap(cap: int) -> None:
    # Table order puts the small ones first; a 30 GB process comes last (the old bug).
    sizes = [10, 20, *range(1, 14), 30 * 1024]
    table = InfoTable("25.2.2", "25.2.2", (CHIP,), processes(sizes), True)
    store = SnapshotStore(CONFIG, max_processes_per_chip=cap)
    store.publish_chips(ChipResults(table=table), STATUS)
    got = [p.hbm_used_bytes // MIB for p in store.latest().chips[0].processes]
    assert got == sorted(sizes, reverse=True)[:cap]
    assert got[0] == 30 * 1024 and len(got) == cap


def test_a_repeated_pid_and_an_unknown_size_are_not_series() -> None:
    rows = (
        *processes([5, 7]),
        TableProcess(npu=0, chip=0, pid=101, name="p1", memory_bytes=7),
        TableProcess(npu=0, chip=0, pid=9, name=None, memory_bytes=None),
    )
    reading = read_chip(ChipParts(table=CHIP, processes=rows), rule(None), max_processes=8)
    assert [(p.pid, p.hbm_used_bytes) for p in reading.processes] == [
        (101, 7 * MIB),
        (100, 5 * MIB),
    ]


def test_error_codes_carry_their_fault_table_level_once_each() -> None:
    from npumon.daemon.faults import load_fault_table
    from npumon.daemon.model.chips import HealthReport

    # the real 910A alarm sample's codes, one of them printed twice
    health = HealthReport(
        status="Alarm", error_codes=("A4025021", "8C03A000", "8C084E00", "8C03A000")
    )
    reading = read_chip(
        ChipParts(table=CHIP, health=health),
        rule(None),
        max_processes=8,
        fault_level=load_fault_table().level_of,
    )
    assert reading.error_codes == (
        ("A4025021", "not_handle"),
        ("8C03A000", "restart_npu"),
        ("8C084E00", "free_restart_npu"),
    )
    assert reading.health_state == "alarm"
