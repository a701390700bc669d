"""How fast a chip runs and how reliable its memory is: AI Core clocks, throttling, ECC."""

from __future__ import annotations

from npumon.daemon.model.reading import THROTTLE_REASONS
from npumon.exporters.spec import Family, counter, gauge, state_set

CLOCKS: tuple[Family, ...] = (
    gauge(
        "npu_aicore_frequency_hertz",
        "Current AI Core clock in hertz.",
        "aicore_frequency_hertz",
        "hertz",
    ),
    gauge(
        "npu_aicore_rated_frequency_hertz",
        "Rated AI Core clock in hertz.",
        "aicore_rated_frequency_hertz",
        "hertz",
    ),
    gauge(
        "npu_aicore_cores",
        "AI Cores the chip offers (fewer on a vNPU or a chip with cores fenced off).",
        "aicore_count",
    ),
    state_set(
        "npu_throttled",
        "1 on the reason (thermal, power, unknown) while the chip is clocked down under load,"
        " 0 on the others; all 0 when not throttled; no series when it cannot be judged."
        " Judged by npumon from the clocks, temperature and power.",
        "reason",
        THROTTLE_REASONS,
        "throttle",
    ),
)

ECC: tuple[Family, ...] = (
    counter(
        "npu_hbm_ecc_errors",
        "HBM ECC errors: the lifetime aggregate total when the driver reports it, else the count"
        " since the driver loaded.",
        "bits",
        (("single", "hbm_ecc_single_bit_errors"), ("double", "hbm_ecc_double_bit_errors")),
    ),
    counter(
        "npu_memory_ecc_errors",
        "DDR memory ECC errors: the lifetime aggregate total when the driver reports it, else the"
        " count since the driver loaded.",
        "bits",
        (("single", "memory_ecc_single_bit_errors"), ("double", "memory_ecc_double_bit_errors")),
    ),
)
