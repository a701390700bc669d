"""Which jobs to profile: npu-smi's process table and config targets, named, never by PID alone."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from npumon.daemon.config import CaptureMode, ProfilingTarget
from npumon.daemon.containers import container_id
from npumon.daemon.model.chips import TableProcess
from npumon.daemon.model.snapshot import ChipId
from npumon.daemon.profiling.identity import (
    JobIdentity,
    environment_rank,
    from_launcher,
    from_pod,
)

_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]+")


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    """What psutil can tell about a process; None where it cannot (permissions, gone)."""

    pid: int
    name: str
    cmdline: tuple[str, ...]
    profiling_mode: str | None  # the PROFILING_MODE environment variable, when readable
    container_id: str | None = None
    rank: int | None = None  # identity.environment_rank, when the environment is readable
    started: float | None = None  # start time, seconds since the epoch (psutil create_time)
    job: JobIdentity | None = None  # the job its launcher named (identity.from_launcher)


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    pids: tuple[int, ...]
    mode: CaptureMode
    chips: frozenset[ChipId]
    config_dir: Path | None = None
    interval_seconds: float | None = None
    attachable: bool | None = None  # PROFILING_MODE=dynamic on every pid; None if unreadable
    container_id: str | None = None
    source: str = "process"  # what named it: one of identity.SOURCES
    ranks: tuple[tuple[int, ChipId], ...] = ()  # (rank, chip) of its processes that name both
    slot: float | None = None  # an aligned capture's slot start (Unix seconds; align.py)


class ProcessProbe:
    """psutil behind an injectable seam; ``proc_root`` is for the container id (cgroup file)."""

    def __init__(self, proc_root: Path = Path("/proc")) -> None:
        self._proc_root = proc_root

    def info(self, pid: int) -> ProcessInfo | None:
        try:
            return self._info(psutil.Process(pid))
        except (psutil.Error, OSError):
            return None

    def all(self) -> list[ProcessInfo]:
        out = []
        for process in psutil.process_iter():
            try:
                out.append(self._info(process))
            except (psutil.Error, OSError):
                continue
        return out

    def alive(self, pid: int) -> bool:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    def _info(self, process: psutil.Process) -> ProcessInfo:
        try:
            environ = process.environ()
            mode: str | None = environ.get("PROFILING_MODE", "")
            rank = environment_rank(environ)
            job = from_launcher(environ)
        except (psutil.AccessDenied, psutil.ZombieProcess):
            mode = None  # another user's job without root: unknown, msprof will say
            rank = None
            job = None
        return ProcessInfo(
            pid=process.pid,
            name=process.name(),
            cmdline=tuple(process.cmdline()),
            profiling_mode=mode,
            container_id=container_id(self._proc_root / str(process.pid) / "cgroup"),
            rank=rank,
            started=_started(process),
            job=job,
        )


def _started(process: psutil.Process) -> float | None:
    try:
        return process.create_time()
    except (psutil.Error, OSError):
        return None


def _matches(target: ProfilingTarget, info: ProcessInfo) -> bool:
    if target.process_name is not None and not re.search(target.process_name, info.name):
        return False
    return target.cmdline is None or re.search(target.cmdline, " ".join(info.cmdline)) is not None


def safe_name(name: str) -> str:
    """A process name as a label value and a directory name."""
    return _UNSAFE.sub("_", name).strip("_")[:64] or "unnamed"


@dataclass
class _Group:
    mode: CaptureMode
    target: ProfilingTarget | None
    source: str
    pids: set[int]
    chips: set[ChipId]
    infos: list[ProcessInfo]


def discover(
    table: Sequence[TableProcess],
    targets: Sequence[ProfilingTarget],
    probe: Callable[[int], ProcessInfo | None],
    all_processes: Callable[[], Iterable[ProcessInfo]],
    *,
    discover_unmatched: bool = True,
    max_workloads: int = 16,
    table_chips: Iterable[ChipId] = (),
    pod_of: Callable[[int], tuple[str, str] | None] = lambda pid: None,
) -> tuple[Workload, ...]:
    """Group processes into workloads, one per job (``identity``): config targets' processes
    (any process on the host, so a job npu-smi cannot see, e.g. in another PID namespace, can
    still be profiled), then npu-smi's other processes. A workload is named by its launcher's
    environment, else its pod (``pod_of``: namespace and pod of a PID), else its target, else
    its process name. Bounded by ``max_workloads``. ``table_chips`` (every chip of the npu-smi
    table) resolves a target's ``npus`` to chips."""
    chips_of: dict[int, set[ChipId]] = {}
    for p in table:
        chips_of.setdefault(p.pid, set()).add((p.npu, p.chip if p.chip is not None else 0))
    groups: dict[str, _Group] = {}
    if targets:
        for proc in all_processes():
            target = next((t for t in targets if _matches(t, proc)), None)
            if target is not None:
                job = job_of(proc, target, pod_of)
                _add(groups, job, target.mode, target, proc, chips_of)
                groups[job.name].chips |= {c for c in table_chips if c[0] in target.npus}
    seen = {pid for g in groups.values() for pid in g.pids}
    if discover_unmatched:
        for pid in sorted(chips_of):
            info = None if pid in seen else probe(pid)
            if info is not None:  # gone, or not visible from here: nothing to attach to
                _add(groups, job_of(info, None, pod_of), "msprof_attach", None, info, chips_of)
    return tuple(_workload(name, g, chips_of) for name, g in sorted(groups.items())[:max_workloads])


def job_of(
    info: ProcessInfo,
    target: ProfilingTarget | None,
    pod_of: Callable[[int], tuple[str, str] | None],
) -> JobIdentity:
    """The job a process belongs to, in the order of docs/profiling.md ("Job identity")."""
    if info.job is not None:
        return info.job
    pod = pod_of(info.pid)
    if pod is not None:
        return from_pod(*pod)
    if target is not None:
        return JobIdentity(target.workload, "target")
    return JobIdentity(safe_name(info.name), "process")


def _add(
    groups: dict[str, _Group],
    job: JobIdentity,
    mode: CaptureMode,
    target: ProfilingTarget | None,
    info: ProcessInfo,
    chips_of: dict[int, set[ChipId]],
) -> None:
    group = groups.setdefault(job.name, _Group(mode, target, job.source, set(), set(), []))
    group.pids.add(info.pid)
    group.chips |= chips_of.get(info.pid, set())
    group.infos.append(info)


def _workload(name: str, g: _Group, chips_of: dict[int, set[ChipId]]) -> Workload:
    modes = [i.profiling_mode for i in g.infos]
    attachable = None if None in modes else all(m == "dynamic" for m in modes)
    containers = {i.container_id for i in g.infos if i.container_id}
    ranks = {
        (i.rank, min(chips_of[i.pid]))
        for i in g.infos
        if i.rank is not None and len(chips_of.get(i.pid, ())) == 1
    }
    return Workload(
        name=name,
        pids=tuple(sorted(g.pids)),
        mode=g.mode,
        chips=frozenset(g.chips),
        config_dir=g.target.config_dir if g.target else None,
        interval_seconds=g.target.interval if g.target else None,
        attachable=attachable,
        container_id=containers.pop() if len(containers) == 1 else None,
        source=g.source,
        ranks=tuple(sorted(ranks)),
    )
