"""Frozen results of the kubelet pod-resources source, and who holds each chip.

``PodResourcesResults`` is what one `List` call said, device IDs already parsed: the Ascend
device plugin names a whole chip ``Ascend910-3`` (the last field is the chip's *physical* ID) and
a vNPU ``Ascend910-2c-100-1`` (spec, vNPU ID, physical ID).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DeviceRef:
    """One device ID the kubelet handed to a container."""

    device_id: str  # verbatim, e.g. "Ascend910-3" or "Ascend910-2c-100-1"
    physical_id: int
    vnpu_id: int | None = None  # the vNPU's vdevID (>= 100), None for a whole chip
    # HAMi's "<VDie ID>-<i>": the chip's VDie ID as DCMI formats it (5 hex words joined by "-");
    # physical_id is UNRESOLVED until the attribution finds the chip whose vdie_id it is
    vdie_id: str | None = None


UNRESOLVED = -1  # a DeviceRef's physical_id before its vdie_id is looked up: names no chip


@dataclass(frozen=True, slots=True)
class ContainerAllocation:
    """The NPU devices of one container, from one resource name."""

    namespace: str
    pod: str
    container: str
    resource: str  # e.g. huawei.com/Ascend910, huawei.com/Ascend910-2c
    devices: tuple[DeviceRef, ...]


@dataclass(frozen=True, slots=True)
class PodResourcesResults:
    """One successful `List`: the containers holding NPU devices, and IDs that did not parse."""

    allocations: tuple[ContainerAllocation, ...] = ()
    malformed: tuple[str, ...] = ()  # device IDs of NPU resources that are no known form

    def pods(self) -> frozenset[tuple[str, str]]:
        """(namespace, pod) of every pod holding an NPU device."""
        return frozenset((a.namespace, a.pod) for a in self.allocations)


@dataclass(frozen=True, slots=True, order=True)
class ChipOwner:
    """A container holding a chip (a vNPU of it when ``vnpu_id`` is set)."""

    namespace: str
    pod: str
    container: str
    vnpu_id: int | None = None


@dataclass(frozen=True, slots=True)
class ProcessOwner:
    """Who runs a process: its pod (Kubernetes) or its user and Slurm job (bare metal)."""

    namespace: str | None = None
    pod: str | None = None
    container: str | None = None
    user: str | None = None
    slurm_job_id: str | None = None
