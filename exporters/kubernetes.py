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

from npumon.daemon.model.kubelet import ProcessOwner
from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.spec import CHIP_LABELS, SAMPLED, Family, ids

OWNER_LABELS = ("namespace", "pod", "container", "user", "slurm_job_id")


def owner_labels(owner: ProcessOwner) -> dict[str, str]:
    """The known owner labels of a process series (unknown ones left out)."""
    values = (owner.namespace, owner.pod, owner.container, owner.user, owner.slurm_job_id)
    return {name: value for name, value in zip(OWNER_LABELS, values, strict=True) if value}


def _holders(snap: NodeSnapshot) -> Iterator[tuple[dict[str, str], float]]:
    for c in snap.chips:
        chip = dict(zip(CHIP_LABELS, ids(c), strict=True))
        for o in c.owners:
            labels = chip | {"namespace": o.namespace, "pod": o.pod, "container": o.container}
            if o.vnpu_id is not None:
                labels["vnpu_id"] = str(o.vnpu_id)
            yield labels, 1.0


def _allocated(snap: NodeSnapshot) -> Iterator[tuple[tuple[str, str], float | None]]:
    for c in snap.chips:
        yield ids(c), None if c.allocated is None else 1.0 if c.allocated else 0.0


KUBERNETES: tuple[Family, ...] = (
    Family(
        "npu_chip_allocation_info",
        "gauge",
        "A container holds this chip (or a vNPU of it, label vnpu_id), from the kubelet's "
        f"pod-resources API; one series per holder. {SAMPLED}",
        (*CHIP_LABELS, "namespace", "pod", "container"),
        _holders,
        optional=("vnpu_id",),
    ),
    Family(
        "npu_chip_allocated",
        "gauge",
        "1 when a container holds the chip per the kubelet's pod-resources API, else 0; absent "
        f"on nodes without Kubernetes (the rules then judge allocation by memory). {SAMPLED}",
        CHIP_LABELS,
        _allocated,
    ),
    Family(
        "npumon_attribution_problems",
        "counter",
        "Chip attribution problems since start, each counted once: conflict (the runtime's "
        "ASCEND_VISIBLE_DEVICES disagrees with the kubelet, e.g. under Volcano; the runtime "
        "wins), unmapped_device (a device ID naming no chip npu-smi shows).",
        ("kind",),
        lambda snap: (((kind,), count) for kind, count in snap.attribution_problems),
    ),
)
