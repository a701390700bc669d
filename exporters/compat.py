"""npu-exporter's names, units and labels for the metrics both exporters have (opt-in).

`compat.npu_exporter_names: true` adds these families beside npumon's own, so dashboards built
for Huawei's npu-exporter (its Grafana boards, HAMi-WebUI) keep working during a migration.
Labels follow its set L1: ``id`` (the physical chip ID), ``model_name``, ``vdie_id``,
``pcie_bus_info``, ``namespace``, ``pod_name``, ``container_name`` (empty when unknown;
``not_displayed_for_multi_pod`` for a shared chip). Units are npu-exporter's: percent, MB, MHz.
No sample timestamps (npumon never sets them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from npumon.daemon.model.chips import code_value
from npumon.daemon.model.reading import ChipReading
from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.spec import Family, Samples

L1 = ("id", "model_name", "vdie_id", "pcie_bus_info", "namespace", "pod_name", "container_name")
MB = 1024 * 1024
_HEALTH = {"ok": 1.0, "warning": 0.0, "alarm": 0.0, "critical": 0.0, "unknown": -1.0}

Pick = Callable[[ChipReading], float | None]


def _percent(field: str) -> Pick:
    return lambda c: None if getattr(c, field) is None else 100.0 * getattr(c, field)


def _mb(field: str) -> Pick:
    return lambda c: None if getattr(c, field) is None else getattr(c, field) / MB


def _mhz(field: str) -> Pick:
    return lambda c: None if getattr(c, field) is None else getattr(c, field) / 1e6


def _same(field: str) -> Pick:
    return lambda c: getattr(c, field)


CHIP: tuple[tuple[str, str, Pick], ...] = (
    (
        "npu_chip_info_health_status",
        "1 healthy, 0 unhealthy, -1 unknown.",
        lambda c: _HEALTH[c.health_state],
    ),
    ("npu_chip_info_temperature", "Chip temperature (C).", _same("temperature_celsius")),
    ("npu_chip_info_power", "Chip power (W).", _same("power_watts")),
    ("npu_chip_info_aicore_current_freq", "AI Core clock (MHz).", _mhz("aicore_frequency_hertz")),
    ("npu_chip_info_utilization", "AI Core utilization (%).", _percent("aicore_ratio")),
    ("npu_chip_info_vector_utilization", "AI Vector utilization (%).", _percent("aivector_ratio")),
    ("npu_chip_info_cube_utilization", "AI Cube utilization (%).", _percent("aicube_ratio")),
    ("npu_chip_info_overall_utilization", "NPU utilization (%).", _percent("utilization_ratio")),
    ("npu_chip_info_used_memory", "DDR used (MB).", _mb("memory_used_bytes")),
    ("npu_chip_info_total_memory", "DDR total (MB).", _mb("memory_total_bytes")),
    ("npu_chip_info_hbm_used_memory", "HBM used (MB).", _mb("hbm_used_bytes")),
    ("npu_chip_info_hbm_total_memory", "HBM total (MB).", _mb("hbm_total_bytes")),
    ("npu_chip_info_hbm_temperature", "HBM temperature (C).", _same("hbm_temperature_celsius")),
    (
        "npu_chip_info_hbm_bandwidth_utilization",
        "HBM bandwidth utilization (%).",
        _percent("hbm_bandwidth_ratio"),
    ),
    (
        "npu_chip_info_hbm_ecc_total_single_bit_error_cnt",
        "HBM single-bit ECC errors.",
        _same("hbm_ecc_single_bit_errors"),
    ),
    (
        "npu_chip_info_hbm_ecc_total_double_bit_error_cnt",
        "HBM double-bit ECC errors.",
        _same("hbm_ecc_double_bit_errors"),
    ),
    ("npu_chip_info_process_info_num", "Processes on the chip.", lambda c: len(c.processes)),
)
CONTAINER: tuple[tuple[str, str, Pick], ...] = (
    (
        "container_npu_utilization",
        "AI Core utilization of a chip a container holds (%).",
        _percent("aicore_ratio"),
    ),
    (
        "container_npu_used_memory",
        "HBM used on a chip a container holds (MB).",
        _mb("hbm_used_bytes"),
    ),
    (
        "container_npu_total_memory",
        "HBM total of a chip a container holds (MB).",
        _mb("hbm_total_bytes"),
    ),
)
COMPAT = "npu-exporter compatible name (compat.npu_exporter_names); npumon's own: see README."


def l1(c: ChipReading) -> list[str]:
    """The label values of npu-exporter's set L1 for a chip (served once its identity was read,
    so a label never changes from "" to the value)."""
    identity = dict(c.identity or ())
    owners = {(o.namespace, o.pod, o.container) for o in c.owners}
    if len(owners) > 1:
        owner = ("not_displayed_for_multi_pod",) * 3
    else:
        owner = next(iter(owners), ("", "", ""))
    return [
        identity.get("phy_id", identity.get("logic_id", str(c.npu))),
        identity.get("name", ""),
        identity.get("vdie_id", ""),
        identity.get("bus_id", ""),
        *owner,
    ]


def _chip(pick: Pick, held_only: bool) -> Samples:
    def samples(snap: NodeSnapshot) -> Iterator[tuple[list[str], float | None]]:
        for c in snap.chips:
            if c.identity is not None and (c.owners or not held_only):  # L1 carries its identity
                yield l1(c), pick(c)

    return samples


def _first_code(snap: NodeSnapshot) -> Iterator[tuple[list[str], int | None]]:
    for c in snap.chips:
        if c.identity is not None:
            values = (code_value(code) for code, _ in c.error_codes)
            yield l1(c), next((v for v in values if v is not None), None)


def _processes(snap: NodeSnapshot) -> Iterator[tuple[list[str], float]]:
    for c in snap.chips:
        if c.identity is not None:
            for p in c.processes:
                yield [*l1(c), str(p.pid), p.container_id or ""], p.hbm_used_bytes / MB


def _gauge(name: str, doc: str, labels: tuple[str, ...], samples: Samples) -> Family:
    return Family(name, "gauge", f"{doc} {COMPAT}", labels, samples)


COMPAT_FAMILIES: tuple[Family, ...] = (
    # npu_chip_info_utilization{id="0",model_name="910B3",...,pod_name="train-0"} 87
    *(_gauge(name, doc, L1, _chip(pick, held_only=False)) for name, doc, pick in CHIP),
    *(_gauge(name, doc, L1, _chip(pick, held_only=True)) for name, doc, pick in CONTAINER),
    _gauge(
        "machine_npu_nums",
        "NPU chips on the node.",
        (),
        lambda snap: [((), len(snap.chips) if snap.has_table else None)],
    ),
    _gauge(
        "node_base_info",
        "Driver version (always 1).",
        ("exporterVersion", "driverVersion"),
        lambda snap: [
            (("npumon", snap.node.driver_version), 1.0 if snap.node.driver_version else None)
        ],
    ),
    _gauge(
        "npu_chip_info_error_code",
        "The first active fault code, as a decimal number.",
        L1,
        _first_code,
    ),
    _gauge(
        "npu_chip_info_process_info",
        "Device memory of a process (MB).",
        (*L1, "process_id", "container_id"),
        _processes,
    ),
)
