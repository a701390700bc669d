"""Is a chip clocked down under load, and why? (Idle down-clocking is by design, not throttling.)"""

from __future__ import annotations

from npumon.daemon.config import Throttle as ThrottleConfig
from npumon.daemon.model.npu_smi import ChipCommon, ChipUsage, TableChip
from npumon.daemon.model.snapshot import Throttle


def aicore_load(
    table: TableChip, usage: ChipUsage | None, common: ChipCommon | None
) -> float | None:
    """The best AI Core utilization we have: -t usages, then -t common, then the table."""
    candidates: tuple[float | None, ...] = (
        usage.aicore_ratio if usage else None,
        common.aicore_ratio if common else None,
        table.aicore_ratio,
    )
    return next((value for value in candidates if value is not None), None)


def judge_throttle(
    table: TableChip,
    usage: ChipUsage | None,
    common: ChipCommon | None,
    config: ThrottleConfig,
    profiling: bool = False,
) -> Throttle | None:
    """None when it cannot be judged: no frequencies, no load, or a capture zeroes AI Core."""
    if common is None or common.aicore_rated_hertz is None or common.aicore_current_hertz is None:
        return None
    load = aicore_load(table, usage, common)
    if load is None or profiling:
        return None
    clocked_down = common.aicore_current_hertz < config.frequency_ratio * common.aicore_rated_hertz
    if not clocked_down or load < config.min_aicore_utilization:
        return Throttle(throttled=False)
    limits = config.limits_for(table.name)
    temperature = table.temperature_celsius
    if temperature is None:
        temperature = common.temperature_celsius
    power = table.power_watts if table.power_watts is not None else common.power_watts
    if temperature is not None and temperature >= limits.temperature_celsius:
        return Throttle(throttled=True, reason="thermal")
    if power is not None and power >= limits.power_watts:
        return Throttle(throttled=True, reason="power")
    return Throttle(throttled=True, reason="unknown")
