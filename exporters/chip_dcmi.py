"""What only DCMI gives, under `npu_smi.backend` auto or dcmi: chip voltage, PCIe bandwidth and
per-vNPU AI Core and memory (no sample through npu-smi, nor where the driver answers -8255)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.spec import CHIP_LABELS, SAMPLED, Family, Gauge, ids, render_table

VOLTAGE: tuple[Family, ...] = (
    Gauge(
        "npu_voltage_volts",
        "Chip supply voltage in volts (DCMI dcmi_get_device_voltage; no npu-smi counterpart"
        " is polled).",
        "voltage_volts",
        "volts",
    ),
)
PCIE_BANDWIDTH = "npu_pcie_bandwidth_bytes_per_second"
render_voltage = render_table(VOLTAGE)


def render_dcmi(snap: NodeSnapshot) -> Iterator[Metric]:
    """Voltage and PCIe bandwidth per chip (min, max, avg over the driver's sampling window).

    npu_voltage_volts{npu="0",chip="0"} 0.85
    npu_pcie_bandwidth_bytes_per_second{npu="0",chip="0",direction="receive",kind="posted",
      stat="avg"} 6e+09
    """
    yield from render_voltage(snap)
    family = GaugeMetricFamily(
        PCIE_BANDWIDTH,
        "PCIe link bandwidth in bytes per second by direction, TLP kind (posted writes,"
        " non_posted reads, completions) and stat (min, max, avg over the driver's sampling"
        f" window; DCMI dcmi_get_pcie_link_bandwidth_info). {SAMPLED}",
        labels=(*CHIP_LABELS, "direction", "kind", "stat"),
    )
    for c in snap.chips:
        for direction, kind, stat, value in c.pcie_bandwidth:
            family.add_metric([*ids(c), direction, kind, stat], value)
    yield family
    yield from _vnpus(snap)


# (name, HELP, position in a ChipReading.vnpus entry)
VNPU: tuple[tuple[str, str, int], ...] = (
    ("npu_vnpu_aicore_utilization_ratio", "AI Core utilization of a vNPU, 0..1.", 1),
    ("npu_vnpu_memory_total_bytes", "Memory of a vNPU in bytes.", 2),
    ("npu_vnpu_memory_used_bytes", "Memory a vNPU uses, in bytes.", 3),
)


def _vnpus(snap: NodeSnapshot) -> Iterator[Metric]:
    """Per vNPU carved from a chip (DCMI dcmi_get_device_info, VDEV_MNG; 310P).

    npu_vnpu_aicore_utilization_ratio{npu="96",chip="1",vnpu_id="100"} 0.42
    """
    for name, doc, at in VNPU:
        family = GaugeMetricFamily(
            name,
            f"{doc} DCMI dcmi_get_device_info (VDEV_MNG); vnpu_id as in"
            f" npu_chip_allocation_info. {SAMPLED}",
            labels=(*CHIP_LABELS, "vnpu_id"),
        )
        for c in snap.chips:
            for vnpu in c.vnpus:
                family.add_metric([*ids(c), str(vnpu[0])], float(vnpu[at]))
        yield family
