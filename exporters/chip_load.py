"""How hard a chip works: utilization ratios, profiling marker, power and temperatures."""

from __future__ import annotations

from npumon.exporters.spec import Family, gauge

UTILIZATION: tuple[Family, ...] = (
    gauge(
        "npu_aicore_utilization_ratio",
        "AI Core utilization, 0..1. Reads 0 while a profiler capture runs (npu_profiling_active).",
        "aicore_ratio",
        "ratio",
    ),
    gauge(
        "npu_aivector_utilization_ratio",
        "AI Vector core (310P: Vectorcore) utilization, 0..1.",
        "aivector_ratio",
        "ratio",
    ),
    gauge("npu_aicube_utilization_ratio", "AI Cube utilization, 0..1.", "aicube_ratio", "ratio"),
    gauge("npu_aicpu_utilization_ratio", "AI CPU utilization, 0..1.", "aicpu_ratio", "ratio"),
    gauge(
        "npu_ctrlcpu_utilization_ratio", "Control CPU utilization, 0..1.", "ctrlcpu_ratio", "ratio"
    ),
    gauge("npu_utilization_ratio", "Overall NPU utilization, 0..1.", "utilization_ratio", "ratio"),
    gauge(
        "npu_hbm_bandwidth_utilization_ratio",
        "HBM bandwidth utilization, 0..1.",
        "hbm_bandwidth_ratio",
        "ratio",
    ),
    gauge(
        "npu_memory_bandwidth_utilization_ratio",
        "DDR memory bandwidth utilization, 0..1.",
        "memory_bandwidth_ratio",
        "ratio",
    ),
)

POWER: tuple[Family, ...] = (
    gauge("npu_power_watts", "Chip power draw in watts.", "power_watts", "watts"),
    gauge(
        "npu_temperature_celsius",
        "Chip temperature in degrees Celsius.",
        "temperature_celsius",
        "celsius",
    ),
    gauge(
        "npu_hbm_temperature_celsius",
        "HBM temperature in degrees Celsius.",
        "hbm_temperature_celsius",
        "celsius",
    ),
)

CAPTURE: tuple[Family, ...] = (
    gauge(
        "npu_profiling_active",
        "1 while an npumon profiler capture runs on the chip (AI Core utilization reads 0 then).",
        "capture_active",
    ),
)
