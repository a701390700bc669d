"""A pod-resources `List` answer (as plain rows) into the NPU devices each container holds."""

from __future__ import annotations

from collections.abc import Iterable

from npumon.daemon.model.kubelet import ContainerAllocation, DeviceRef, PodResourcesResults
from npumon.daemon.parsers.device_ids import parse_device_id
from npumon.daemon.parsers.errors import ParseError

DeviceRow = tuple[str, str, str, str, tuple[str, ...]]
"""(namespace, pod, container, resource name, device IDs): one ContainerDevices message, or one
DRA ClaimResource as (..., driver name, (device name,))."""

# The Ascend DRA driver (Ascend/mind-cluster ``component/ascend-dynamic-resource-allocation``,
# ``pkg/consts/consts.go:25`` ``DriverName = "npu.huawei.com"`` at 22bb3d98); its device names
# are ``Ascend910-<phyID>`` / ``npu-<phyID>`` (``internal/device/generation_910.go:92``).
DRA_DRIVERS = ("npu.huawei.com",)


def parse_pod_resources(rows: Iterable[DeviceRow], prefixes: Iterable[str]) -> PodResourcesResults:
    """Rows whose resource name starts with a prefix; IDs of no known form go to ``malformed``.

    A container with only malformed IDs holds nothing; its valid IDs are still attributed.
    """
    wanted = tuple(prefixes)
    allocations: list[ContainerAllocation] = []
    malformed: list[str] = []
    for namespace, pod, container, resource, device_ids in rows:
        if not resource.startswith(wanted) and resource not in DRA_DRIVERS:
            continue
        devices: list[DeviceRef] = []
        for device_id in device_ids:
            try:
                devices.append(parse_device_id(device_id))
            except ParseError:
                malformed.append(device_id)
        if devices:
            allocations.append(
                ContainerAllocation(namespace, pod, container, resource, tuple(devices))
            )
    return PodResourcesResults(tuple(allocations), tuple(malformed))
