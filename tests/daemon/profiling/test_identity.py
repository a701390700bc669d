"""Job identity: the launcher's environment, else the pod, else the target, else the process.

The environments below are what each launcher sets, from its source (docs/profiling.md, "Job
identity", names the files and commits): torchrun's ``local_elastic_agent.py`` (pytorch
001077cbc0f3), training-operator's ``master.go``/``envvar.go`` (v1.9.0) and Trainer v2's
``torch.go`` (a55f03a8), Volcano's svc plugin (``svc.go``, ed72c7c8), ascend-operator's
``env.go`` (mind-cluster 22bb3d98), slurmstepd's ``env.c`` (slurm 284c3b95).
"""

from __future__ import annotations

import pytest

from npumon.daemon.config import ProfilingTarget
from npumon.daemon.model.chips import TableProcess
from npumon.daemon.profiling.identity import (
    MAX_LENGTH,
    SOURCES,
    JobIdentity,
    bounded,
    environment_rank,
    from_launcher,
    from_pod,
)
from npumon.daemon.profiling.workloads import ProcessInfo, discover

# torchrun worker of a 2-node static-rendezvous job: RUN_ID is torchrun's default "none".
TORCHRUN_STATIC = {
    "TORCHELASTIC_RUN_ID": "none",
    "MASTER_ADDR": "node-a.cluster",
    "MASTER_PORT": "29500",
    "RANK": "9",
    "LOCAL_RANK": "1",
    "WORLD_SIZE": "16",
}
# A PyTorchJob "llama" (v1): the operator's PET_* and its pod-rank RANK; torchrun overrides
# RANK and MASTER_* per worker and names the run by --rdzv-id.
PYTORCHJOB_ELASTIC = {
    "PET_MASTER_ADDR": "llama-master-0",
    "PET_MASTER_PORT": "23456",
    "PET_RDZV_ID": "llama-run",
    "TORCHELASTIC_RUN_ID": "llama-run",
    "MASTER_ADDR": "llama-master-0",
    "MASTER_PORT": "23456",
    "RANK": "37",
}
TRAINER_V2 = {"PET_MASTER_ADDR": "qwen-node-0-0.qwen", "PET_MASTER_PORT": "29400"}
VOLCANO = {
    "VC_TASK_INDEX": "2",
    "VC_WORKER_HOSTS": "bert-worker-0.bert,bert-worker-1.bert,bert-worker-2.bert",
    "VC_WORKER_NUM": "3",
}
ASCEND_OPERATOR = {
    "MINDX_TASK_ID": "8c3b7a9e-52f1-4c3e-9d0b-6f1d2e3a4b5c",
    "MASTER_ADDR": "10.96.12.7",
    "MASTER_PORT": "2222",
    "RANK": "1",
    "LOCAL_RANK": "0,1,2,3,4,5,6,7",
}
SLURM = {"SLURM_JOB_ID": "4711", "SLURM_JOBID": "4711", "SLURM_PROCID": "5"}


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        (TORCHRUN_STATIC, JobIdentity("node-a.cluster:29500", "master_addr")),
        (PYTORCHJOB_ELASTIC, JobIdentity("llama-run", "torchelastic_run_id")),
        (
            {k: v for k, v in PYTORCHJOB_ELASTIC.items() if k != "TORCHELASTIC_RUN_ID"},
            JobIdentity("llama-run", "pet_rdzv_id"),
        ),
        (TRAINER_V2, JobIdentity("qwen-node-0-0.qwen:29400", "pet_master_addr")),
        (VOLCANO, JobIdentity("bert", "volcano")),
        ({"VC_WORKER_HOSTS": "bert-worker-0"}, JobIdentity("bert", "volcano")),
        (ASCEND_OPERATOR, JobIdentity(ASCEND_OPERATOR["MINDX_TASK_ID"], "mindx_task_id")),
        (SLURM, JobIdentity("slurm:4711", "slurm")),
        ({**SLURM, "SLURM_CLUSTER_NAME": "ai"}, JobIdentity("slurm:ai:4711", "slurm")),
        # loopback: every single-node job on every node says the same, so it names none
        (
            {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500", **SLURM},
            JobIdentity("slurm:4711", "slurm"),
        ),
        ({"MASTER_ADDR": "localhost", "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": "none"}, None),
        ({"PATH": "/usr/bin"}, None),
    ],
)
def test_the_launcher_names_the_job(environ: dict[str, str], expected: JobIdentity | None) -> None:
    assert from_launcher(environ) == expected
    if expected is not None:
        assert expected.source in SOURCES


def test_every_node_of_a_job_gets_the_same_identity_and_two_jobs_two() -> None:
    node_a = {**TORCHRUN_STATIC, "RANK": "0", "LOCAL_RANK": "0"}
    node_b = {**TORCHRUN_STATIC, "RANK": "15", "LOCAL_RANK": "7"}
    other = {**TORCHRUN_STATIC, "MASTER_PORT": "29501"}
    assert from_launcher(node_a) == from_launcher(node_b) != from_launcher(other)


def test_the_rank_comes_from_rank_then_srun_then_local_rank() -> None:
    assert environment_rank(PYTORCHJOB_ELASTIC) == 37
    assert environment_rank(SLURM) == 5
    assert environment_rank({"LOCAL_RANK": "3"}) == 3
    assert environment_rank(ASCEND_OPERATOR) == 1  # its LOCAL_RANK is a list, RANK is the pod's
    assert environment_rank({"LOCAL_RANK": "0,1,2,3"}) is None


@pytest.mark.parametrize(
    ("pod", "base"),
    [
        ("llama-master-0", "llama"),  # PyTorchJob / AscendJob <job>-<rtype>-<i>
        ("llama-worker-12", "llama"),
        ("bert-trainer-3", "bert-trainer"),  # Volcano <job>-<task>-<i>, task unknown
        ("infer-7", "infer"),  # StatefulSet ordinal
        ("serve-7d9f8b6c5d-x2x9z", "serve"),  # Deployment: ReplicaSet hash and pod suffix
    ],
)
def test_a_pod_names_its_job_without_the_replica(pod: str, base: str) -> None:
    assert from_pod("team", pod) == JobIdentity(f"team:{base}", "pod")


def test_labels_stay_bounded_and_apart() -> None:
    a, b = "x" * 100 + "a", "x" * 100 + "b"
    assert len(bounded(a)) == MAX_LENGTH and bounded(a) != bounded(b)
    assert bounded("ns/pod name") == "ns_pod_name"
    assert bounded("") == "unnamed"


def _proc(pid: int, environ: dict[str, str] | None = None, name: str = "python") -> ProcessInfo:
    env = environ or {}
    return ProcessInfo(
        pid, name, (name, "train.py"), "", rank=environment_rank(env), job=from_launcher(env)
    )


def test_two_python_jobs_on_one_node_are_two_workloads_named_by_their_launchers() -> None:
    table = [
        TableProcess(npu=n, chip=0, pid=100 + n, name="python", memory_bytes=1) for n in range(4)
    ]
    job_a = {**TORCHRUN_STATIC, "MASTER_PORT": "29500"}
    job_b = {**TORCHRUN_STATIC, "MASTER_PORT": "29600"}
    procs = {
        100: _proc(100, {**job_a, "RANK": "8"}),
        101: _proc(101, {**job_a, "RANK": "9"}),
        102: _proc(102, {**job_b, "RANK": "0"}),
        103: _proc(103, {**job_b, "RANK": "1"}),
    }
    found = discover(table, (), procs.get, procs.values)
    assert [(w.name, w.source, w.pids, w.ranks) for w in found] == [
        ("node-a.cluster:29500", "master_addr", (100, 101), ((8, (0, 0)), (9, (1, 0)))),
        ("node-a.cluster:29600", "master_addr", (102, 103), ((0, (2, 0)), (1, (3, 0)))),
    ]


def test_without_a_launcher_the_pod_then_the_target_then_the_process_names_it() -> None:
    table = [
        TableProcess(npu=0, chip=0, pid=10, name="python", memory_bytes=1),
        TableProcess(npu=1, chip=0, pid=11, name="python", memory_bytes=1),
        TableProcess(npu=2, chip=0, pid=12, name="python", memory_bytes=1),
    ]
    procs = {10: _proc(10), 11: _proc(11), 12: _proc(12, name="vllm"), 13: _proc(13, SLURM)}
    pods = {10: ("team", "llama-worker-1")}
    targets = (ProfilingTarget(workload="serving", process_name="^vllm$"),)
    found = discover(table, targets, procs.get, procs.values, pod_of=pods.get)
    assert [(w.name, w.source, w.pids) for w in found] == [
        ("python", "process", (11,)),
        ("serving", "target", (12,)),
        ("team:llama", "pod", (10,)),
    ]
    # a target's processes are still named by their launcher first: a target is how to
    # capture, the launcher says which job
    slurm_target = (ProfilingTarget(workload="serving", process_name="^python$"),)
    names = {w.name: w.source for w in discover((), slurm_target, procs.get, lambda: [procs[13]])}
    assert names == {"slurm:4711": "slurm"}
