"""What only DCMI gives, under `chips.backend` auto or dcmi: chip voltage, PCIe bandwidth and
per-vNPU AI Core and memory (no sample through npu-smi, nor where the driver answers -8255)."""

from __future__ import annotations

from collections.abc import Iterator

from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.spec import CHIP_LABELS, SAMPLED, Family, Samples, gauge, ids


def _bandwidth(snap: NodeSnapshot) -> Iterator[tuple[tuple[str, ...], float]]:
    """npu_pcie_bandwidth_bytes_per_second{npu="0",chip="0",direction="receive",kind="posted",
    stat="avg"} 6e+09"""
    for c in snap.chips:
        for direction, kind, stat, value in c.pcie_bandwidth:
            yield (*ids(c), direction, kind, stat), value


def _vnpu(at: int) -> Samples:
    """Per vNPU carved from a chip (DCMI dcmi_get_device_info, VDEV_MNG; 310P), the value at
    ``at`` in a ChipReading.vnpus entry.

    npu_vnpu_aicore_utilization_ratio{npu="96",chip="1",vnpu_id="100"} 0.42
    """

    def samples(snap: NodeSnapshot) -> Iterator[tuple[tuple[str, ...], float]]:
        for c in snap.chips:
            for vnpu in c.vnpus:
                yield (*ids(c), str(vnpu[0])), float(vnpu[at])

    return samples


VNPU = "DCMI dcmi_get_device_info (VDEV_MNG); vnpu_id as in npu_chip_allocation_info."
DCMI: tuple[Family, ...] = (
    gauge(
        "npu_voltage_volts",
        "Chip supply voltage in volts (DCMI dcmi_get_device_voltage; no npu-smi counterpart"
        " is polled).",
        "voltage_volts",
        "volts",
    ),
    Family(
        "npu_pcie_bandwidth_bytes_per_second",
        "gauge",
        "PCIe link bandwidth in bytes per second by direction, TLP kind (posted writes,"
        " non_posted reads, completions) and stat (min, max, avg over the driver's sampling"
        f" window; DCMI dcmi_get_pcie_link_bandwidth_info). {SAMPLED}",
        (*CHIP_LABELS, "direction", "kind", "stat"),
        _bandwidth,
    ),
    *(
        Family(name, "gauge", f"{doc} {VNPU} {SAMPLED}", (*CHIP_LABELS, "vnpu_id"), _vnpu(at))
        for name, doc, at in (
            ("npu_vnpu_aicore_utilization_ratio", "AI Core utilization of a vNPU, 0..1.", 1),
            ("npu_vnpu_memory_total_bytes", "Memory of a vNPU in bytes.", 2),
            ("npu_vnpu_memory_used_bytes", "Memory a vNPU uses, in bytes.", 3),
        )
    ),
)
