"""npumon-sim-kubelet: a fake kubelet serving the pod-resources v1 `List` on a unix socket.

Driven by the scenario file's ``kubernetes`` section: pods that come and go (``start``/``end``,
seconds after the scenario epoch, looped by its period), a pod that holds a chip and never uses
it, vNPUs (``Ascend910-2c-100-1``), malformed device IDs, and a kubelet that hangs
(``hang_seconds``). The same generated messages as the daemon's client (npumon.podresources).

    npumon-sim-kubelet --scenario 910b-8 --socket /tmp/kubelet.sock
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

from npumon.podresources import SERVICE
from npumon.podresources.api_pb2 import (
    CDIDevice,
    ClaimResource,
    ContainerDevices,
    ContainerResources,
    DynamicResource,
    ListPodResourcesRequest,
    ListPodResourcesResponse,
    PodResources,
)
from npumon.simulator.cli import TIME_ENV
from npumon.simulator.loader import read_scenario_text
from npumon.simulator.model import ScenarioError
from npumon.simulator.scenario import validate

Pods = Callable[[], ListPodResourcesResponse]


def response(pods: Sequence[dict[str, Any]]) -> ListPodResourcesResponse:
    """The `List` answer for pods given as the scenario's dicts."""
    return ListPodResourcesResponse(
        pod_resources=[
            PodResources(
                name=p["name"],
                namespace=p["namespace"],
                containers=[
                    ContainerResources(
                        name=c["name"],
                        devices=[
                            ContainerDevices(
                                resource_name=c["resource"], device_ids=list(c["devices"])
                            )
                        ]
                        if c["devices"]
                        else [],
                        dynamic_resources=[_claim(p, d) for d in c.get("claims", ())],
                    )
                    for c in p["containers"]
                ],
            )
            for p in pods
        ]
    )


def _claim(pod: dict[str, Any], claim: dict[str, Any]) -> DynamicResource:
    """A DRA claim as the kubelet reports it (kubernetes/kubelet
    ``pkg/apis/podresources/v1/api.proto``, DynamicResource/ClaimResource, v0.31+): with the
    Ascend DRA driver, driver ``npu.huawei.com``, pool = the node's name
    (``internal/driver/driver.go:127-133``), device ``Ascend910-<phyID>``, CDI device
    ``ascend.com/npu=<phyID>`` (``ascend-common/cdi/spec.go:92,262-265``; mind-cluster 22bb3d98)."""
    return DynamicResource(
        claim_name=claim["claim"],
        claim_namespace=pod["namespace"],
        claim_resources=[
            ClaimResource(
                driver_name=claim.get("driver", "npu.huawei.com"),
                pool_name=claim.get("pool", "node-1"),
                device_name=device,
                cdi_devices=[CDIDevice(name=f"ascend.com/npu={device.rpartition('-')[2]}")],
            )
            for device in claim["devices"]
        ],
    )


def scenario_pods(scenario: dict[str, Any], clock: Callable[[], float] = time.time) -> Pods:
    """The pods present at each call, from a validated scenario dict."""
    kube = scenario.get("kubernetes") or {"pods": []}
    epoch, period = float(scenario["epoch"]), scenario["period"]

    def present() -> ListPodResourcesResponse:
        elapsed = max(0.0, clock() - epoch)
        elapsed = elapsed % float(period) if period else elapsed
        return response(
            [
                p
                for p in kube["pods"]
                if p["start"] <= elapsed and (p["end"] is None or elapsed < p["end"])
            ]
        )

    return present


def serve(socket: Path, pods: Pods, hang: Callable[[], float] = lambda: 0.0) -> grpc.Server:
    """A started gRPC server on ``unix://socket`` answering `List` with ``pods()``."""

    def list_pods(
        _: ListPodResourcesRequest, context: grpc.ServicerContext
    ) -> ListPodResourcesResponse:
        delay = hang()
        if delay > 0:
            # a hung kubelet: block until the caller gives up (or the delay ends)
            done = threading.Event()
            context.add_callback(done.set)
            done.wait(delay)
        return pods()

    handler = grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "List": grpc.unary_unary_rpc_method_handler(
                list_pods,
                request_deserializer=ListPodResourcesRequest.FromString,
                response_serializer=ListPodResourcesResponse.SerializeToString,
            ),
        },
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((handler,))
    if socket.exists():
        socket.unlink()  # a socket left by a killed run
    server.add_insecure_port(f"unix://{socket.absolute()}")
    server.start()
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="npumon-sim-kubelet", description=__doc__.split("\n")[0])
    parser.add_argument("--scenario", required=True, help="built-in scenario name or YAML path")
    parser.add_argument("--socket", required=True, type=Path, help="unix socket to serve on")
    args = parser.parse_args(argv)
    try:
        source, text = read_scenario_text(args.scenario)
        scenario = validate(text, source)
    except ScenarioError as exc:
        print(f"npumon-sim-kubelet: {exc}", file=sys.stderr)
        return 2
    hang = float((scenario.get("kubernetes") or {}).get("hang_seconds", 0.0))
    # $NPUMON_SIM_TIME pins the clock, as it does for the simulated npu-smi and hccn_tool
    fixed = os.environ.get(TIME_ENV)
    clock = (lambda: float(fixed)) if fixed else time.time
    server = serve(args.socket, scenario_pods(scenario, clock), lambda: hang)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    print(f"npumon-sim-kubelet: serving pod-resources on {args.socket}", flush=True)
    stop.wait()
    server.stop(grace=1).wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
