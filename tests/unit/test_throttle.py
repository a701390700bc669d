"""npu_throttled: clocked down *under load*; idle down-clocking is not throttling."""

from __future__ import annotations

from dataclasses import replace

import pytest

from npumon.daemon.config import parse_config
from npumon.daemon.model.npu_smi import ChipCommon, ChipUsage, TableChip
from npumon.daemon.model.snapshot import Throttle
from npumon.daemon.throttle import judge_throttle

CONFIG = parse_config(
    {"throttle": {"limits": {"910B": {"temperature_celsius": 80, "power_watts": 350}}}}
).throttle
CHIP = TableChip(
    npu=0, chip=0, name="910B3", health="OK", power_watts=300.0, temperature_celsius=60.0,
    hugepages_used=0, hugepages_total=0, bus_id="0000:C1:00.0", aicore_ratio=0.9,
    memory_used_bytes=0, memory_total_bytes=0, hbm_used_bytes=1, hbm_total_bytes=2,
)
RATED = 1800e6


def common(current_mhz: float, load: float | None = 0.9) -> ChipCommon:
    return ChipCommon(chip=0, aicore_ratio=load, aicore_rated_hertz=RATED,
                      aicore_current_hertz=current_mhz * 1e6)


def test_full_clock_under_load_is_not_throttled() -> None:
    assert judge_throttle(CHIP, None, common(1800), CONFIG) == Throttle(False)


def test_idle_down_clocking_is_not_throttling() -> None:
    # the real 910B1 sample: 800 MHz of 1800 at 0 % AI Core
    idle = replace(CHIP, aicore_ratio=0.0)
    assert judge_throttle(idle, None, common(800, 0.0), CONFIG) == Throttle(False)


@pytest.mark.parametrize(
    ("temperature", "power", "reason"),
    [(80.0, 300.0, "thermal"), (70.0, 350.0, "power"), (70.0, 300.0, "unknown")],
)
def test_reason_from_the_chip_models_limits(temperature: float, power: float, reason: str) -> None:
    hot = replace(CHIP, temperature_celsius=temperature, power_watts=power)
    assert judge_throttle(hot, None, common(1200), CONFIG) == Throttle(True, reason)


def test_usage_load_wins_over_the_table() -> None:
    chip = replace(CHIP, aicore_ratio=0.1)
    usage = ChipUsage(chip=0, aicore_ratio=0.95)
    assert judge_throttle(chip, usage, common(1200, None), CONFIG) == Throttle(True, "unknown")


def test_cannot_judge_without_frequencies_or_while_profiling() -> None:
    assert judge_throttle(CHIP, None, None, CONFIG) is None
    unrated = replace(common(1200), aicore_rated_hertz=None)
    assert judge_throttle(CHIP, None, unrated, CONFIG) is None
    assert judge_throttle(CHIP, None, common(1200), CONFIG, profiling=True) is None


def test_model_without_limits_uses_the_defaults() -> None:
    chip = replace(CHIP, name="310P3", temperature_celsius=84.0)
    assert judge_throttle(chip, None, common(900), CONFIG) == Throttle(True, "unknown")
    chip = replace(chip, temperature_celsius=85.0)
    assert judge_throttle(chip, None, common(900), CONFIG) == Throttle(True, "thermal")
