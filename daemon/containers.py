"""Who runs each of npu-smi's processes, from /proc/<pid>: container id and pod UID (cgroup),
HOSTNAME, ASCEND_VISIBLE_DEVICES and SLURM_JOB_ID (environ), and the user (status).

Every runtime (docker, containerd, cri-o, podman) and both cgroup drivers and versions: the pod
UID follows ``pod`` in the kubelet's cgroup (``_`` for ``-`` under systemd), the container id is a
64-hex run. A host PID whose /proc is not visible (npumon in a container without hostPID) gets
nothing. Each PID is read once while it stays in the table.
"""

from __future__ import annotations

import dataclasses
import pwd
import re
from pathlib import Path

from npumon.daemon.model.chips import InfoTable, TableProcess
from npumon.daemon.parsers.device_ids import parse_visible_devices
from npumon.daemon.parsers.errors import ParseError

_CONTAINER_ID = re.compile(r"([0-9a-f]{64})")
_POD_UID = re.compile(r"pod([0-9a-f][0-9a-f_-]{31,35})(?![0-9a-f])")
_UID = re.compile(r"^Uid:\s+(\d+)", re.MULTILINE)


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None


def container_id(cgroup_file: Path) -> str | None:
    """The 64-hex container id in a cgroup file, None for host processes or an unreadable file."""
    found = _CONTAINER_ID.search(_read(cgroup_file) or "")
    return found.group(1) if found else None


def pod_uid(cgroup_text: str) -> str | None:
    """The pod UID in a cgroup file's text (v1 or v2, cgroupfs or systemd driver), lower case."""
    found = _POD_UID.search(cgroup_text)
    return found.group(1).replace("_", "-").lower() if found else None


def _environ(text: str | None) -> dict[str, str]:
    wanted = ("HOSTNAME", "ASCEND_VISIBLE_DEVICES", "SLURM_JOB_ID")
    pairs = (item.partition("=") for item in (text or "").split("\0"))
    return {key: value for key, _, value in pairs if key in wanted}


def _user(status: str | None) -> str | None:
    found = _UID.search(status or "")
    if found is None:
        return None
    try:
        return pwd.getpwuid(int(found[1])).pw_name
    except KeyError:
        return found[1]  # a uid with no name on this host (a container's user)


def describe(proc: Path, process: TableProcess) -> TableProcess:
    """The process with what /proc says about who runs it."""
    cgroup = _read(proc / "cgroup") or ""
    found = _CONTAINER_ID.search(cgroup)
    env = _environ(_read(proc / "environ"))
    try:
        visible = (
            parse_visible_devices(env["ASCEND_VISIBLE_DEVICES"])
            if "ASCEND_VISIBLE_DEVICES" in env
            else None
        )
    except ParseError:
        visible = None
    return dataclasses.replace(
        process,
        container_id=found.group(1) if found else None,
        pod_uid=pod_uid(cgroup),
        hostname=env.get("HOSTNAME") or None,
        visible_devices=visible,
        user=_user(_read(proc / "status")),
        slurm_job_id=env.get("SLURM_JOB_ID") or None,
    )


class ContainerResolver:
    """Labels npu-smi's processes with who runs them; /proc is read once per new PID."""

    def __init__(self, proc_root: Path = Path("/proc")) -> None:
        self._proc_root = proc_root
        self._known: dict[int, TableProcess] = {}

    def label(self, table: InfoTable) -> InfoTable:
        pids = {p.pid for p in table.processes}
        self._known = {pid: found for pid, found in self._known.items() if pid in pids}
        for p in table.processes:
            if p.pid not in self._known:
                self._known[p.pid] = describe(self._proc_root / str(p.pid), p)
        processes = tuple(
            dataclasses.replace(p, **{f: getattr(self._known[p.pid], f) for f in _OWNER_FIELDS})
            for p in table.processes
        )
        return dataclasses.replace(table, processes=processes)


_OWNER_FIELDS = ("container_id", "pod_uid", "hostname", "visible_devices", "user", "slurm_job_id")
