"""Container ids of host processes, from /proc/<pid>/cgroup (docker, containerd, cri-o, podman)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from npumon.daemon.model.npu_smi import InfoTable

_CONTAINER_ID = re.compile(r"([0-9a-f]{64})")


def container_id(cgroup_file: Path) -> str | None:
    """The 64-hex container id in a cgroup file, None for host processes or an unreadable file."""
    try:
        text = cgroup_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = _CONTAINER_ID.search(text)
    return found.group(1) if found else None


class ContainerResolver:
    """Labels npu-smi's processes with their container; one cgroup read per new PID."""

    def __init__(self, proc_root: Path = Path("/proc")) -> None:
        self._proc_root = proc_root
        self._known: dict[int, str | None] = {}

    def label(self, table: InfoTable) -> InfoTable:
        pids = {p.pid for p in table.processes}
        self._known = {pid: cid for pid, cid in self._known.items() if pid in pids}
        for pid in pids - self._known.keys():
            self._known[pid] = container_id(self._proc_root / str(pid) / "cgroup")
        processes = tuple(
            dataclasses.replace(p, container_id=self._known[p.pid]) for p in table.processes
        )
        return dataclasses.replace(table, processes=processes)
