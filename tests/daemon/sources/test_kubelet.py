"""The real gRPC client against the fake kubelet (npumon.simulator.kubelet) on a unix socket:
whole chips and vNPUs, pod churn, a hanging kubelet, malformed device IDs, the Volcano case."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from npumon.daemon.app import Agent
from npumon.daemon.config import parse_config
from npumon.simulator.kubelet import response, serve
from tests.helpers.exposition import samples
from tests.helpers.wait import scaled
from tests.support import fake_npu_smi

pytestmark = pytest.mark.integration
NODE = "a3_25.2.0"  # A3: Phy-ID in the table; NPU 0 = physical 0, 1; NPU 1 = 2, 3 (pid 990711)


def pod(
    name: str,
    *devices: str,
    resource: str = "huawei.com/Ascend910",
    namespace: str = "ml",
    container: str = "main",
) -> dict[str, Any]:
    return {
        "namespace": namespace,
        "name": name,
        "containers": [{"name": container, "resource": resource, "devices": devices}],
    }


class Kubelet:
    """A fake kubelet whose pods and delay the test changes between polls."""

    def __init__(self, socket: Path) -> None:
        self.pods: list[dict[str, Any]] = []
        self.delay = 0.0
        self.server = serve(socket, lambda: response(self.pods), lambda: self.delay)


@pytest.fixture
def socket(tmp_path: Path) -> Path:
    return tmp_path / "kubelet.sock"  # short: unix socket paths are limited to 107 bytes


@pytest.fixture
def kubelet(socket: Path) -> Iterator[Kubelet]:
    fake = Kubelet(socket)
    yield fake
    fake.server.stop(grace=None).wait()


def agent(socket: Path, proc: Path | None = None, timeout: str = "5s") -> Agent:
    config = parse_config(
        {
            "npu_smi": {"command": fake_npu_smi(NODE)},
            "chips": {"timeout": "20s"},
            "kubernetes": {"pod_resources_socket": str(socket), "timeout": timeout},
        }
    )
    return Agent(config, proc_root=proc or socket.parent / "no-proc")


def series(a: Agent, name: str) -> list[dict[str, str]]:
    return [dict(labels) for n, labels in samples(a.collector.exposition()) if n == name]


def values(a: Agent, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    found = samples(a.collector.exposition())
    return {tuple(sorted(labels)): v for (n, labels), v in found.items() if n == name}


def owners(a: Agent) -> set[tuple[str, ...]]:
    return {
        (s["npu"], s["chip"], s["pod"], s["container"], s.get("vnpu_id", ""))
        for s in series(a, "npu_chip_allocation_info")
    }


def test_whole_chips_and_vnpus_are_attributed_through_the_physical_id(
    kubelet: Kubelet, socket: Path
) -> None:
    kubelet.pods = [
        pod("train-0", "Ascend910-0", "Ascend910-3"),
        pod("infer-a", "Ascend910-2c-132-2", resource="huawei.com/Ascend910-2c"),
        pod("infer-b", "Ascend910-2c-133-2", resource="huawei.com/Ascend910-2c"),
        pod("gpu", "GPU-0", resource="nvidia.com/gpu"),
    ]
    a = agent(socket)
    a.collect_once()
    assert owners(a) == {
        ("0", "0", "train-0", "main", ""),
        ("1", "1", "train-0", "main", ""),
        ("1", "0", "infer-a", "main", "132"),
        ("1", "0", "infer-b", "main", "133"),
    }
    allocated = {
        dict(k)["npu"] + "/" + dict(k)["chip"]: v
        for k, v in values(a, "npu_chip_allocated").items()
    }
    assert allocated == {"0/0": 1.0, "0/1": 0.0, "1/0": 1.0, "1/1": 1.0}
    up = values(a, "npumon_source_up")
    assert up[(("source", "kubelet_pod_resources"),)] == 1.0


def test_series_of_pods_that_go_vanish_on_the_next_poll(kubelet: Kubelet, socket: Path) -> None:
    a = agent(socket)
    a.sources.poll_all()
    kubelet.pods = [pod("early", "Ascend910-1")]
    a.pod_resources.poll()
    assert owners(a) == {("0", "1", "early", "main", "")}
    kubelet.pods = [pod("late", "Ascend910-2", namespace="other", container="worker")]
    a.pod_resources.poll()
    assert owners(a) == {("1", "0", "late", "worker", "")}
    assert {s["namespace"] for s in series(a, "npu_chip_allocation_info")} == {"other"}
    kubelet.pods = []
    a.pod_resources.poll()
    assert owners(a) == set()
    assert set(values(a, "npu_chip_allocated").values()) == {0.0}


def test_a_hanging_kubelet_times_out_and_never_holds_up_a_scrape(
    kubelet: Kubelet, socket: Path
) -> None:
    kubelet.pods = [pod("train-0", "Ascend910-0")]
    a = agent(socket, timeout="1s")
    a.collect_once()
    assert owners(a)
    kubelet.delay = 30.0
    poll = threading.Thread(target=a.pod_resources.poll)
    poll.start()
    text = a.collector.exposition().decode()  # while List hangs
    assert poll.is_alive() and "npu_chip_info{" in text  # answered before the poll ended
    poll.join(scaled(10))
    assert not poll.is_alive()  # ended by the 1 s deadline: a timeout below, not the pods
    assert values(a, "npumon_source_up")[(("source", "kubelet_pod_resources"),)] == 0.0
    failures = values(a, "npumon_source_failures_total")
    assert failures[(("reason", "timeout"), ("source", "kubelet_pod_resources"))] == 1.0
    assert owners(a) == set() and series(a, "npu_chip_allocated") == []  # unknown, not stale


def test_dra_claims_of_the_ascend_driver_are_attributed(kubelet: Kubelet, socket: Path) -> None:
    """Chips allocated through DRA come in ``dynamic_resources``, named by the Ascend DRA
    driver (the double's ``_claim`` cites its source); another driver's claims are not ours."""
    train = pod("train-dra", resource="", container="ascend")
    train["containers"][0]["devices"] = ()
    train["containers"][0]["claims"] = [
        {"claim": "npus", "devices": ["Ascend910-2", "Ascend910-3"]}
    ]
    gpu = pod("gpu-dra")
    gpu["containers"][0]["claims"] = [
        {"claim": "gpus", "driver": "gpu.nvidia.com", "devices": ["gpu-0"]}
    ]
    kubelet.pods = [train, gpu]
    a = agent(socket)
    a.collect_once()
    assert owners(a) == {
        ("1", "0", "train-dra", "ascend", ""),
        ("1", "1", "train-dra", "ascend", ""),
    }
    failures = values(a, "npumon_source_failures_total")
    assert (("reason", "malformed_device_id"), ("source", "kubelet_pod_resources")) not in failures


def test_malformed_device_ids_are_counted_and_the_rest_attributed(
    kubelet: Kubelet, socket: Path
) -> None:
    kubelet.pods = [
        pod("mixed", "Ascend910-0", "Ascend910-", "Ascend910-2c-100-9"),
        pod("unmapped", "Ascend910-12"),
    ]  # a chip this node does not show
    a = agent(socket)
    a.collect_once()
    a.pod_resources.poll()
    assert owners(a) == {("0", "0", "mixed", "main", "")}
    assert values(a, "npumon_source_up")[(("source", "kubelet_pod_resources"),)] == 1.0
    failures = values(a, "npumon_source_failures_total")
    assert failures[(("reason", "malformed_device_id"), ("source", "kubelet_pod_resources"))] == 4
    problems = values(a, "npumon_attribution_problems_total")
    assert problems == {(("kind", "unmapped_device"),): 1.0}  # once, however many polls


def fake_proc(root: Path, pid: int, uid: str, env: dict[str, str]) -> Path:
    folder = root / str(pid)
    folder.mkdir(parents=True)
    slice_uid = uid.replace("-", "_")
    (folder / "cgroup").write_text(
        f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{slice_uid}.slice/"
        f"cri-containerd-{'e1' * 32}.scope\n"
    )
    (folder / "environ").write_bytes(b"\0".join(f"{k}={v}".encode() for k, v in env.items()))
    (folder / "status").write_text("Name:\tpython\nUid:\t0\t0\t0\t0\n")
    return root


def test_volcano_mismatch_the_runtime_wins_and_the_conflict_is_counted_once(
    kubelet: Kubelet, socket: Path, tmp_path: Path
) -> None:
    # the kubelet handed physical 0 to the pod; Volcano's plugin mounted physical 3 (npu 1 chip 1,
    # where npu-smi shows pid 990711 with ASCEND_VISIBLE_DEVICES=3)
    kubelet.pods = [pod("volcano-job", "Ascend910-0", container="trainer")]
    proc = fake_proc(
        tmp_path / "proc",
        990711,
        "dd1bf9d1-241d-47f5-8e25-12de83135812",
        {"HOSTNAME": "volcano-job", "ASCEND_VISIBLE_DEVICES": "3"},
    )
    a = agent(socket, proc)
    a.collect_once()
    a.pod_resources.poll()
    assert owners(a) == {("1", "1", "volcano-job", "trainer", "")}
    problems = values(a, "npumon_attribution_problems_total")
    assert problems == {(("kind", "conflict"),): 1.0}
    [process] = series(a, "npu_process_hbm_used_bytes")
    assert (process["namespace"], process["pod"], process["container"]) == (
        "ml",
        "volcano-job",
        "trainer",
    )
    assert process["container_id"] == "e1" * 32 and "user" not in process


def test_no_socket_no_source_series(tmp_path: Path) -> None:
    a = agent(tmp_path / "absent.sock")
    a.collect_once()
    assert ("source", "kubelet_pod_resources") not in {
        item for labels in series(a, "npumon_source_up") for item in labels.items()
    }
    assert series(a, "npu_chip_allocated") == [] and not a.pod_resources.seen


def test_a_socket_that_is_no_kubelet_marks_the_source_down(tmp_path: Path) -> None:
    socket = tmp_path / "kubelet.sock"
    socket.write_text("")  # exists, but nobody listens
    a = agent(socket, timeout="2s")
    a.pod_resources.poll()
    assert values(a, "npumon_source_up")[(("source", "kubelet_pod_resources"),)] == 0.0
    status = [s for s in a.store.latest().sources if s.source == "kubelet_pod_resources"]
    assert status[0].last_error and "pod-resources List" in status[0].last_error
    assert grpc.StatusCode.UNAVAILABLE.name in status[0].last_error


def test_without_the_socket_grpc_is_never_imported(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from npumon.daemon.app import Agent\n"
        "from npumon.daemon.config import parse_config\n"
        f"c = parse_config({{'kubernetes': {{'pod_resources_socket': '{tmp_path}/no.sock'}},"
        " 'npu_smi': {'command': ['false']}})\n"
        "a = Agent(c)\n"
        "a.collect_once()\n"
        "print(sorted(m for m in sys.modules if m == 'grpc' or 'podresources' in m"
        " or m.startswith('google.protobuf')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=scaled(60)
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_large_node_fits_and_an_answer_over_the_limit_keeps_the_last_owners(
    kubelet: Kubelet, socket: Path
) -> None:
    from npumon.daemon.sources.kubelet_client import MAX_RECEIVE_BYTES

    ids = [f"example.com-{i:09d}" for i in range(260_000)]  # ~6 MB: over gRPC's 4 MiB default
    other = {
        "namespace": "ml",
        "name": "many",
        "containers": [{"name": "main", "resource": "example.com/thing", "devices": ids}],
    }
    kubelet.pods = [pod("train-0", "Ascend910-0"), other]
    assert 4 * 1024 * 1024 < response(kubelet.pods).ByteSize() < MAX_RECEIVE_BYTES
    a = agent(socket)
    a.collect_once()
    assert owners(a) == {("0", "0", "train-0", "main", "")}
    assert values(a, "npumon_source_up")[(("source", "kubelet_pod_resources"),)] == 1.0
    other["containers"][0]["devices"] = ids * 3  # ~18 MB: over npumon's limit
    kubelet.pods = [pod("train-1", "Ascend910-1"), other]
    assert response(kubelet.pods).ByteSize() > MAX_RECEIVE_BYTES
    a.pod_resources.poll()
    assert values(a, "npumon_source_up")[(("source", "kubelet_pod_resources"),)] == 0.0
    failures = values(a, "npumon_source_failures_total")
    assert failures[(("reason", "too_large"), ("source", "kubelet_pod_resources"))] == 1.0
    assert owners(a) == {("0", "0", "train-0", "main", "")}  # the last good answer stands
    kubelet.pods = [pod("train-1", "Ascend910-1")]
    a.pod_resources.poll()
    assert owners(a) == {("0", "1", "train-1", "main", "")}
