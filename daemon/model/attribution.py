"""Who holds each chip: the kubelet's device IDs, joined to chips through the physical ID and
cross-checked against what the runtime gave the pod's processes.

The kubelet reports what it allocated; with Volcano the device plugin mounts other chips than
those (the reference's "Volcano pitfall"). Where npu-smi shows a pod's processes and their
``ASCEND_VISIBLE_DEVICES`` names other chips than the kubelet's device IDs, the runtime's answer
wins and the difference is reported as a conflict (the store logs each one once and counts it).

A process is tied to its pod by the pod UID of its cgroup. pod-resources carries no UIDs, so a
UID is matched to a pod by the processes' ``HOSTNAME`` (the pod name unless the pod sets its own
hostname), else by the one pod holding the chips its processes run on.

HAMi's device IDs name a chip by its VDie ID, resolved here through each chip's ``vdie_id``
(``npu-smi info -t board``). HAMi's Allocate picks the chips from its scheduler's pod annotation,
not from these IDs (ascend-device-plugin ``internal/server/server.go:320-343``), so they can name
another chip than the container got: the same pitfall as Volcano's, and the same runtime
cross-check corrects it. Several ``-<i>`` of one VDie ID are slices of one chip: one owner.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from npumon.daemon.model.chips import ChipResults, TableProcess
from npumon.daemon.model.kubelet import (
    UNRESOLVED,
    ChipOwner,
    ContainerAllocation,
    DeviceRef,
    PodResourcesResults,
    ProcessOwner,
)
from npumon.daemon.model.physical import ChipKey, physical_ids

PodKey = tuple[str, str]  # (namespace, pod)


@dataclass(frozen=True, slots=True)
class Attribution:
    """Owners per chip and per process; ``allocated`` is False when pod-resources is unknown."""

    known: bool = False  # pod-resources answered: a chip with no owner is not allocated
    chips: Mapping[ChipKey, tuple[ChipOwner, ...]] = field(default_factory=dict)
    processes: Mapping[int, ProcessOwner] = field(default_factory=dict)
    conflicts: tuple[str, ...] = ()  # "ns/pod: kubelet [2] runtime [5]", one per pod
    unmapped: tuple[str, ...] = ()  # device IDs naming no chip npu-smi shows

    def owners(self, chip: ChipKey) -> tuple[ChipOwner, ...]:
        return self.chips.get(chip, ())

    def allocated(self, chip: ChipKey) -> bool | None:
        return bool(self.chips.get(chip)) if self.known else None


NO_ATTRIBUTION = Attribution()


def _physical(device: int) -> tuple[int, int | None]:
    """An ASCEND_VISIBLE_DEVICES number as (physical ID, vNPU ID): vdevIDs start at 100."""
    return ((device - 100) // 16, device) if device >= 100 else (device, None)


def _pod_of(
    procs: list[TableProcess],
    pods: Mapping[PodKey, list[ContainerAllocation]],
    holders: Mapping[int, set[PodKey]],
    phys: Mapping[ChipKey, int],
) -> PodKey | None:
    """The pod of one pod UID's processes: by HOSTNAME, else the one pod holding their chips."""
    names = {p.hostname for p in procs if p.hostname}
    by_name = [key for key in pods if key[1] in names]
    if len(by_name) == 1:
        return by_name[0]
    chips = {phys.get((p.npu, p.chip if p.chip is not None else 0)) for p in procs}
    candidates = set().union(*(holders.get(c, set()) for c in chips if c is not None))
    return candidates.pop() if len(candidates) == 1 else None


def _runtime_devices(procs: Iterable[TableProcess]) -> tuple[DeviceRef, ...] | None:
    seen = sorted({d for p in procs for d in (p.visible_devices or ())})
    if not any(p.visible_devices is not None for p in procs):
        return None
    return tuple(DeviceRef(f"ASCEND_VISIBLE_DEVICES={d}", *_physical(d)) for d in seen)


def _cross_check(
    key: PodKey,
    allocs: list[ContainerAllocation],
    runtime: tuple[DeviceRef, ...],
    conflicts: list[str],
) -> list[ContainerAllocation]:
    """The runtime's devices replace the kubelet's where they differ (to the first container)."""
    said = sorted({(d.physical_id, d.vnpu_id or -1) for a in allocs for d in a.devices})
    seen = sorted({(d.physical_id, d.vnpu_id or -1) for d in runtime})
    if said == seen:
        return allocs
    conflicts.append(
        f"{key[0]}/{key[1]}: kubelet {[d for d, _ in said]} runtime {[d for d, _ in seen]}"
    )
    first = allocs[0]
    return [
        ContainerAllocation(first.namespace, first.pod, first.container, first.resource, runtime)
    ]


def attribute(results: ChipResults, pods: PodResourcesResults | None) -> Attribution:
    """Owners of every chip and process of the latest table (pods None: no Kubernetes)."""
    table = results.table
    procs = table.processes if table else ()
    if pods is None:
        return Attribution(processes={p.pid: _bare_metal(p) for p in procs})
    phys = {key: pid.value for key, pid in physical_ids(results).items()}
    by_pod: dict[PodKey, list[ContainerAllocation]] = defaultdict(list)
    holders: dict[int, set[PodKey]] = defaultdict(set)
    for a in _resolve_vdie(pods.allocations, results, phys):
        by_pod[(a.namespace, a.pod)].append(a)
        for d in a.devices:
            if d.physical_id != UNRESOLVED:
                holders[d.physical_id].add((a.namespace, a.pod))
    by_uid: dict[str, list[TableProcess]] = defaultdict(list)
    for p in procs:
        if p.pod_uid:
            by_uid[p.pod_uid].append(p)
    conflicts: list[str] = []
    uid_pod: dict[str, PodKey] = {}
    for uid, group in sorted(by_uid.items()):
        key = _pod_of(group, by_pod, holders, phys)
        if key is None:
            continue
        uid_pod[uid] = key
        runtime = _runtime_devices(group)
        if runtime is not None:
            by_pod[key] = _cross_check(key, by_pod[key], runtime, conflicts)
    return _finish(by_pod, phys, procs, uid_pod, conflicts)


def vdie_key(vdie_id: str) -> str:
    """A VDie ID as npu-smi prints it (words split by spaces) in DCMI's form (joined by "-",
    upper case: mind-cluster ``devmanager/dcmi/dcmi.go`` GetDieID), HAMi's device UUID."""
    return "-".join(vdie_id.split()).upper()


def _resolve_vdie(
    allocations: Iterable[ContainerAllocation], results: ChipResults, phys: Mapping[ChipKey, int]
) -> list[ContainerAllocation]:
    """Allocations with each VDie-ID device given its chip's physical ID (UNRESOLVED when no
    chip has that VDie ID: reported as unmapped)."""
    by_vdie = {
        vdie_key(board.vdie_id): phys[key]
        for key, board in results.chip_board.items()
        if board.vdie_id and key in phys
    }
    out = []
    for a in allocations:
        if any(d.vdie_id for d in a.devices):
            devices = tuple(
                replace(d, physical_id=by_vdie.get(d.vdie_id, UNRESOLVED)) if d.vdie_id else d
                for d in a.devices
            )
            a = replace(a, devices=devices)
        out.append(a)
    return out


def _finish(
    by_pod: Mapping[PodKey, list[ContainerAllocation]],
    phys: Mapping[ChipKey, int],
    procs: Iterable[TableProcess],
    uid_pod: Mapping[str, PodKey],
    conflicts: list[str],
) -> Attribution:
    chip_of = {value: key for key, value in phys.items()}
    chips: dict[ChipKey, set[ChipOwner]] = defaultdict(set)
    unmapped: list[str] = []
    for allocs in by_pod.values():
        for a in allocs:
            for d in a.devices:
                chip = chip_of.get(d.physical_id)
                if chip is None:
                    unmapped.append(d.device_id)
                    continue
                chips[chip].add(ChipOwner(a.namespace, a.pod, a.container, d.vnpu_id))
    owners = {chip: tuple(sorted(found)) for chip, found in chips.items()}
    processes = {}
    for p in procs:
        key = uid_pod.get(p.pod_uid or "")
        if key is None:
            processes[p.pid] = _bare_metal(p) if not p.pod_uid else ProcessOwner()
            continue
        chip = (p.npu, p.chip if p.chip is not None else 0)
        mine = [o for o in owners.get(chip, ()) if (o.namespace, o.pod) == key]
        conts = {a.container for a in by_pod[key]}
        container = mine[0].container if mine else (conts.pop() if len(conts) == 1 else None)
        processes[p.pid] = ProcessOwner(key[0], key[1], container)
    return Attribution(True, owners, processes, tuple(conflicts), tuple(sorted(unmapped)))


def _bare_metal(p: TableProcess) -> ProcessOwner:
    """Outside a pod: the process's user and Slurm job."""
    if p.pod_uid:
        return ProcessOwner()
    return ProcessOwner(user=p.user, slurm_job_id=p.slurm_job_id)
