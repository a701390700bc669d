"""Who holds each chip: the kubelet's allocations, and attribution self-metrics.

npu_chip_allocation_info{npu="0",chip="0",namespace="ml",pod="train-0",container="main"} 1
npu_chip_allocation_info{npu="6",chip="0",namespace="ml",pod="nb",container="c",vnpu_id="196"} 1
npu_chip_allocated{npu="7",chip="0"} 0

A chip shared by several containers (vNPUs, share mode) has one info series per container; the
bundled rules collapse them (npu_chip:owner:info) so joins stay many-to-one. Series of a pod that
is gone vanish on the next poll: nothing here keeps state.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from npumon.daemon.model.kubelet import ProcessOwner
from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.spec import CHIP_LABELS, SAMPLED, ids, sample


def owner_labels(owner: ProcessOwner) -> dict[str, str]:
    """The known owner labels of a process series (unknown ones left out)."""
    values = {
        "namespace": owner.namespace,
        "pod": owner.pod,
        "container": owner.container,
        "user": owner.user,
        "slurm_job_id": owner.slurm_job_id,
    }
    return {name: value for name, value in values.items() if value}


def render_kubernetes(snap: NodeSnapshot) -> Iterator[Metric]:
    info = Metric(
        "npu_chip_allocation_info",
        "A container holds this chip (or a vNPU of it, label vnpu_id), from the kubelet's "
        f"pod-resources API; one series per holder. {SAMPLED}",
        "gauge",
    )
    allocated = GaugeMetricFamily(
        "npu_chip_allocated",
        "1 when a container holds the chip per the kubelet's pod-resources API, else 0; absent "
        f"on nodes without Kubernetes (the rules then judge allocation by memory). {SAMPLED}",
        labels=CHIP_LABELS,
    )
    for c in snap.chips:
        chip = dict(zip(CHIP_LABELS, ids(c), strict=True))
        for o in c.owners:
            labels = chip | {"namespace": o.namespace, "pod": o.pod, "container": o.container}
            if o.vnpu_id is not None:
                labels["vnpu_id"] = str(o.vnpu_id)
            info.samples.append(sample(info.name, labels, 1.0))
        if c.allocated is not None:
            allocated.add_metric(ids(c), 1.0 if c.allocated else 0.0)
    yield info
    yield allocated
    problems = CounterMetricFamily(
        "npumon_attribution_problems",
        "Chip attribution problems since start, each counted once: conflict (the runtime's "
        "ASCEND_VISIBLE_DEVICES disagrees with the kubelet, e.g. under Volcano; the runtime "
        "wins), unmapped_device (a device ID naming no chip npu-smi shows).",
        labels=("kind",),
    )
    for kind, count in snap.attribution_problems:
        problems.add_metric([kind], float(count))
    yield problems
