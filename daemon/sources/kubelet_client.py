"""The gRPC call itself: `List` on the kubelet's pod-resources socket (v1 API).

Imported only once the socket exists (daemon/sources/kubelet.py), so a node without Kubernetes
never loads grpc or protobuf. The stubs are in ``npumon.podresources`` (generated, committed).
"""

from __future__ import annotations

from pathlib import Path

import grpc

from npumon.daemon.parsers.pod_resources import DRA_DRIVERS, DeviceRow
from npumon.daemon.sources.wrapper import SourceFailure
from npumon.podresources import LIST_METHOD
from npumon.podresources.api_pb2 import ListPodResourcesRequest, ListPodResourcesResponse

# The answer lists every pod on the node. 500 pods (Kubernetes' default is 110 per node) of 8
# containers, every name at the API's longest and 12,000 device IDs come to 1.0 MB; gRPC's
# 4 MiB default is thus near, 16 MiB leaves 16 times that, and decoding it stays far below
# the unit's MemoryMax and the chart's memory limit.
MAX_RECEIVE_BYTES = 16 * 1024 * 1024

_REASONS = {
    grpc.StatusCode.RESOURCE_EXHAUSTED: "too_large",
    grpc.StatusCode.DEADLINE_EXCEEDED: "timeout",
    grpc.StatusCode.UNAVAILABLE: "unavailable",
    grpc.StatusCode.UNIMPLEMENTED: "unimplemented",
    grpc.StatusCode.PERMISSION_DENIED: "permission_denied",
}


def list_devices(socket: Path, timeout: float) -> list[DeviceRow]:
    """Every container's devices, as plain rows; SourceFailure names what went wrong."""
    return device_rows(list_response(socket, timeout))


def list_response(socket: Path, timeout: float) -> ListPodResourcesResponse:
    """The kubelet's `List` answer as it came; SourceFailure names what went wrong."""
    options = [("grpc.max_receive_message_length", MAX_RECEIVE_BYTES)]
    with grpc.insecure_channel(f"unix://{socket.absolute()}", options=options) as channel:
        call = channel.unary_unary(
            LIST_METHOD,
            request_serializer=ListPodResourcesRequest.SerializeToString,
            response_deserializer=ListPodResourcesResponse.FromString,
        )
        try:
            answer: ListPodResourcesResponse = call(ListPodResourcesRequest(), timeout=timeout)
        except grpc.RpcError as error:
            code = error.code() if isinstance(error, grpc.Call) else None
            reason = _REASONS.get(code, "rpc_error") if code is not None else "rpc_error"
            detail = error.details() if isinstance(error, grpc.Call) else str(error)
            if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise SourceFailure(
                    "too_large",
                    f"pod-resources List on {socket}: the answer is over npumon's "
                    f"{MAX_RECEIVE_BYTES >> 20} MiB limit ({detail}); the owners last read are "
                    "kept. Does this node run that many pods and devices? Please report it",
                ) from None
            raise SourceFailure(
                reason,
                f"pod-resources List on {socket} failed: {code} {detail}; is the kubelet "
                "running, and does npumon run as root with the socket's directory mounted?",
            ) from None
    return answer


def device_rows(answer: ListPodResourcesResponse) -> list[DeviceRow]:
    """Every container's devices in a `List` answer, as plain rows (DRA claims included)."""
    rows = [
        (pod.namespace, pod.name, container.name, devices.resource_name, tuple(devices.device_ids))
        for pod in answer.pod_resources
        for container in pod.containers
        for devices in container.devices
    ]
    # DRA (kubelet pod-resources v1 ``dynamic_resources``): the driver names the device; its
    # name stands where a device plugin's ID would, under the driver's name as the resource
    rows += [
        (pod.namespace, pod.name, container.name, claimed.driver_name, (claimed.device_name,))
        for pod in answer.pod_resources
        for container in pod.containers
        for dynamic in container.dynamic_resources
        for claimed in dynamic.claim_resources
        if claimed.driver_name in DRA_DRIVERS and claimed.device_name
    ]
    return rows
