"""What a chip holds: HBM, DDR memory and hugepages, and the processes using device memory."""

from __future__ import annotations

from collections.abc import Iterator

from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.kubernetes import OWNER_LABELS, owner_labels
from npumon.exporters.spec import CHIP_LABELS, SAMPLED, Family, gauge, ids

MEMORY: tuple[Family, ...] = (
    gauge("npu_hbm_used_bytes", "HBM in use in bytes.", "hbm_used_bytes", "bytes"),
    gauge("npu_hbm_total_bytes", "HBM capacity in bytes.", "hbm_total_bytes", "bytes"),
    gauge("npu_memory_used_bytes", "DDR memory in use in bytes.", "memory_used_bytes", "bytes"),
    gauge("npu_memory_total_bytes", "DDR memory capacity in bytes.", "memory_total_bytes", "bytes"),
    # *_pages, not *_total: promtool rejects a gauge ending in _total
    gauge("npu_hugepages_used_pages", "Hugepages in use.", "hugepages_used", "pages"),
    gauge("npu_hugepages_total_pages", "Hugepages available.", "hugepages_total", "pages"),
)


def _processes(snap: NodeSnapshot) -> Iterator[tuple[dict[str, str], float]]:
    """One sample per process on a chip (the store keeps the largest, up to the config cap).

    npu_process_hbm_used_bytes{npu="0",chip="0",pid="4242",process_name="python3"} 1.2e+09

    Owner labels where known: namespace, pod, container (Kubernetes), else user, slurm_job_id.
    """
    for c in snap.chips:
        for p in c.processes:
            labels = dict(zip(CHIP_LABELS, ids(c), strict=True)) | {"pid": str(p.pid)}
            if p.name:
                labels["process_name"] = p.name
            if p.container_id:
                labels["container_id"] = p.container_id
            yield labels | owner_labels(p.owner), float(p.hbm_used_bytes)


PROCESSES: tuple[Family, ...] = (
    Family(
        "npu_process_hbm_used_bytes",
        "gauge",
        "Device memory used by a process in bytes; the largest processes of each chip, up to"
        f" chips.max_processes_per_chip. {SAMPLED}",
        (*CHIP_LABELS, "pid"),
        _processes,
        optional=("process_name", "container_id", *OWNER_LABELS),
    ),
)
