"""A job's identity: the same on every node of the job, different between jobs, with no
Kubernetes API call. Taken from the launcher's environment of the profiled process, else the
owning pod, else a configured target's name, else (and then said so) the process name.

Where each variable comes from (docs/profiling.md names the files):

- ``MINDX_TASK_ID``: MindCluster's ascend-operator sets the AscendJob's UID (``env.go``
  ``setCommonEnv``), in the container named ``ascend``.
- ``TORCHELASTIC_RUN_ID``: torchrun's rendezvous ``run_id`` (``--rdzv-id``); its default is
  ``none`` (static rendezvous), which names no job.
- ``PET_RDZV_ID``: training-operator's elastic PyTorchJob (``elastic.go``), torchrun's default
  for ``--rdzv-id``.
- ``MASTER_ADDR`` + ``MASTER_PORT``: torchrun copies rank 0's host into every worker; PyTorchJob,
  Volcano's pytorch plugin and ascend-operator set them too. A loopback address is the same for
  unrelated single-node jobs, so it names no job.
- ``PET_MASTER_ADDR`` + ``PET_MASTER_PORT``: training-operator (v1 ``<job>-master-0``; Trainer
  v2 ``<job>-node-0-0.<job>``).
- ``VC_<TASK>_HOSTS``: Volcano's svc plugin, ``<job>-<task>-<i>.<job>`` for every pod of the job.
- ``SLURM_JOB_ID``: slurmstepd, with ``SLURM_CLUSTER_NAME`` in front when set.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass

# Every source of an identity, in the order it is taken (the workload_source label's values).
SOURCES = (
    "mindx_task_id",
    "torchelastic_run_id",
    "pet_rdzv_id",
    "master_addr",
    "pet_master_addr",
    "volcano",
    "slurm",
    "pod",
    "target",
    "process",
)
LAUNCHER_SOURCES = SOURCES[:7]  # the same on every node of the job by construction

MAX_LENGTH = 64  # a label value and a directory name
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]+")
_LOOPBACK = re.compile(r"^(127\.\d+\.\d+\.\d+|localhost|::1|0\.0\.0\.0)$", re.IGNORECASE)
_VOLCANO_HOSTS = re.compile(r"^VC_[A-Z0-9_]+_HOSTS$")
# A replica or ordinal suffix: PyTorchJob/AscendJob "-master-0", "-worker-3", Volcano
# "-<task>-<i>", a StatefulSet's "-<n>", a ReplicaSet's "-<hash>-<5 chars>".
_REPLICA = re.compile(r"(-(master|worker|chief|ps|scheduler|launcher|evaluator|node)(-\d+)+|-\d+)$")
_REPLICASET = re.compile(r"-[a-z0-9]{8,10}-[a-z0-9]{5}$")


@dataclass(frozen=True, slots=True)
class JobIdentity:
    name: str  # the label value: bounded, safe as a directory name
    source: str  # one of SOURCES


def bounded(value: str) -> str:
    """``value`` as a label value and a directory name, at most MAX_LENGTH characters: a longer
    one keeps its start and gets a hash of the whole, so two long ones stay apart."""
    safe = _UNSAFE.sub("_", value).strip("_.") or "unnamed"
    if len(safe) <= MAX_LENGTH and safe == value:
        return safe
    digest = hashlib.sha256(value.encode()).hexdigest()[:8]
    return safe if len(safe) <= MAX_LENGTH else f"{safe[: MAX_LENGTH - 9]}-{digest}"


def _given(environ: Mapping[str, str], name: str) -> str:
    return environ.get(name, "").strip()


def _master(addr: str, port: str) -> str | None:
    if not addr or _LOOPBACK.match(addr):
        return None  # not cross-node: unrelated single-node jobs share it
    return f"{addr}:{port}" if port else addr


def _volcano(environ: Mapping[str, str]) -> str | None:
    """The job name Volcano's svc plugin put in every host of ``VC_<TASK>_HOSTS``: the
    subdomain of ``<job>-<task>-<i>.<job>``, else the host without ``-<task>-<i>``."""
    for name in sorted(n for n in environ if _VOLCANO_HOSTS.match(n)):
        first = environ[name].split(",")[0].strip()
        if not first:
            continue
        host, _, domain = first.partition(".")
        if domain:
            return domain.split(".")[0]
        return re.sub(r"-[^-]+-\d+$", "", host) or host
    return None


def from_launcher(environ: Mapping[str, str]) -> JobIdentity | None:
    """The job a launcher put in the process's environment, None when none did."""
    found: list[tuple[str, str | None]] = [
        ("mindx_task_id", _given(environ, "MINDX_TASK_ID") or None),
        (
            "torchelastic_run_id",
            run
            if (run := _given(environ, "TORCHELASTIC_RUN_ID")).lower() not in ("", "none")
            else None,
        ),
        ("pet_rdzv_id", _given(environ, "PET_RDZV_ID") or None),
        ("master_addr", _master(_given(environ, "MASTER_ADDR"), _given(environ, "MASTER_PORT"))),
        (
            "pet_master_addr",
            _master(_given(environ, "PET_MASTER_ADDR"), _given(environ, "PET_MASTER_PORT")),
        ),
        ("volcano", _volcano(environ)),
        ("slurm", _slurm(environ)),
    ]
    for source, value in found:
        if value:
            return JobIdentity(bounded(value), source)
    return None


def _slurm(environ: Mapping[str, str]) -> str | None:
    job = _given(environ, "SLURM_JOB_ID") or _given(environ, "SLURM_JOBID")
    if not job:
        return None
    cluster = _given(environ, "SLURM_CLUSTER_NAME")
    return f"slurm:{cluster}:{job}" if cluster else f"slurm:{job}"


def from_pod(namespace: str, pod: str) -> JobIdentity:
    """The pod's job: its namespace and its name without the replica or ordinal suffix, so every
    pod of one PyTorchJob/AscendJob/Volcano job/StatefulSet gives the same name."""
    base = _REPLICASET.sub("", pod)
    base = _REPLICA.sub("", base) or base
    return JobIdentity(bounded(f"{namespace}:{base}"), "pod")


def environment_rank(environ: Mapping[str, str]) -> int | None:
    """The rank a launcher gives the process: RANK (torchrun, PyTorchJob), else SLURM_PROCID
    (srun), else LOCAL_RANK; digits only (ascend-operator's LOCAL_RANK is a list)."""
    for name in ("RANK", "SLURM_PROCID", "LOCAL_RANK"):
        value = environ.get(name, "").strip()
        if value.isdigit() and len(value) <= 6:  # a rank, not a stray huge number
            return int(value)
    return None
