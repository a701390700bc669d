"""What a chip holds: HBM, DDR memory and hugepages, and the processes using device memory."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from prometheus_client.core import Metric

from npumon.daemon.model.reading import ChipReading
from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.kubernetes import owner_labels
from npumon.exporters.spec import CHIP_LABELS, SAMPLED, Family, Gauge, ids, render_table, sample

MEMORY: tuple[Family, ...] = (
    Gauge("npu_hbm_used_bytes", "HBM in use in bytes.", "hbm_used_bytes", "bytes"),
    Gauge("npu_hbm_total_bytes", "HBM capacity in bytes.", "hbm_total_bytes", "bytes"),
    Gauge("npu_memory_used_bytes", "DDR memory in use in bytes.", "memory_used_bytes", "bytes"),
    Gauge("npu_memory_total_bytes", "DDR memory capacity in bytes.", "memory_total_bytes", "bytes"),
    # *_pages, not *_total: promtool rejects a gauge ending in _total
    Gauge("npu_hugepages_used_pages", "Hugepages in use.", "hugepages_used", "pages"),
    Gauge("npu_hugepages_total_pages", "Hugepages available.", "hugepages_total", "pages"),
)

render_memory = render_table(MEMORY)


@dataclass(frozen=True)
class Processes:
    """One sample per process on a chip (the store keeps the largest, up to the config cap).

    npu_process_hbm_used_bytes{npu="0",chip="0",pid="4242",process_name="python3"} 1.2e+09

    Owner labels where known: namespace, pod, container (Kubernetes), else user, slurm_job_id.
    """

    name: str
    help: str

    def render(self, chips: Sequence[ChipReading]) -> Metric:
        family = Metric(self.name, f"{self.help} {SAMPLED}", "gauge")
        for c in chips:
            for p in c.processes:
                labels = dict(zip(CHIP_LABELS, ids(c), strict=True)) | {"pid": str(p.pid)}
                if p.name:
                    labels["process_name"] = p.name
                if p.container_id:
                    labels["container_id"] = p.container_id
                labels |= owner_labels(p.owner)
                family.samples.append(sample(self.name, labels, float(p.hbm_used_bytes)))
        return family


PROCESSES = Processes(
    "npu_process_hbm_used_bytes",
    "Device memory used by a process in bytes; the largest processes of each chip, up to"
    " npu_smi.max_processes_per_chip.",
)


def render_processes(snap: NodeSnapshot) -> Iterator[Metric]:
    yield PROCESSES.render(snap.chips)
