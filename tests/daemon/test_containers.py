"""npu-smi's processes get their container id from /proc/<pid>/cgroup (a fake /proc here)."""

from __future__ import annotations

from pathlib import Path

from npumon.daemon.containers import ContainerResolver
from npumon.daemon.parsers.table import parse_info
from tests.support import FIXTURES

DOCKER = "0::/system.slice/docker-" + "ab12" * 16 + ".scope\n"
K8S = (
    "12:pids:/kubepods/burstable/pod6f2c/" + "cd34" * 16 + "\n"
    "11:cpu:/kubepods/burstable/pod6f2c/" + "cd34" * 16 + "\n"
)


def fake_proc(root: Path, cgroups: dict[int, str]) -> Path:
    for pid, text in cgroups.items():
        (root / str(pid)).mkdir(parents=True)
        (root / str(pid) / "cgroup").write_text(text)
    return root


def test_processes_are_labelled_and_host_processes_are_not(tmp_path: Path) -> None:
    table = parse_info(
        (FIXTURES / "npu-smi" / "info_310p3duo_4card_procs_noname_25.3rc1.txt").read_text()
    )
    proc = fake_proc(tmp_path, {326429: DOCKER, 326430: "0::/user.slice/session-3.scope\n"})
    labelled = ContainerResolver(proc).label(table)
    ids = {(p.pid, p.chip): p.container_id for p in labelled.processes}
    assert ids == {(326429, 0): "ab12" * 16, (326430, 0): None, (326430, 1): None}
    assert table.processes[0].container_id is None  # the parser's result is not mutated


def test_each_pid_is_read_once_and_forgotten_when_it_leaves(tmp_path: Path) -> None:
    text = (FIXTURES / "npu-smi" / "info_910b4-1_2chip_procs_25.2.2.txt").read_text()
    table = parse_info(text)
    proc = fake_proc(tmp_path, {19334: K8S, 19341: K8S})
    resolver = ContainerResolver(proc)
    assert {p.container_id for p in resolver.label(table).processes} == {"cd34" * 16}
    (proc / "19334" / "cgroup").write_text(DOCKER)  # not re-read while the pid stays
    assert {p.container_id for p in resolver.label(table).processes} == {"cd34" * 16}
    resolver.label(parse_info(text.replace("19334", "19335")))  # 19334 left the table
    (proc / "19335").mkdir()
    (proc / "19335" / "cgroup").write_text(DOCKER)
    back = resolver.label(table)  # 19334 is new again: read afresh
    assert {p.pid: p.container_id for p in back.processes}[19334] == "ab12" * 16
