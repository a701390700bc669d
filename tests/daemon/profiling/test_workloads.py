"""Which jobs to profile: config targets, then npu-smi's processes, named, bounded."""

from __future__ import annotations

from pathlib import Path

from npumon.daemon.config import ProfilingTarget, parse_config
from npumon.daemon.containers import container_id
from npumon.daemon.model.chips import TableProcess
from npumon.daemon.profiling.workloads import ProcessInfo, discover


def info(pid: int, name: str, *cmd: str, mode: str | None = "") -> ProcessInfo:
    return ProcessInfo(pid, name, tuple(cmd) or (name,), mode)


def test_discovery_names_by_config_then_process_name_bounded() -> None:
    table = [
        TableProcess(npu=0, chip=0, pid=10, name="python3", memory_bytes=1),
        TableProcess(npu=1, chip=0, pid=11, name="python3", memory_bytes=1),
        TableProcess(npu=2, chip=None, pid=12, name="VLLMWorker", memory_bytes=1),
        TableProcess(npu=3, chip=0, pid=99, name="gone", memory_bytes=1),
    ]
    procs = {
        10: info(10, "python3", "python3", "train.py", mode="dynamic"),
        11: info(11, "python3", "python3", "train.py", mode="dynamic"),
        12: info(12, "VLLMWorker", mode=None),
        50: info(50, "python", "python", "bert_pretrain.py", mode=""),
    }
    targets = parse_config(
        {"profiling": {"targets": [{"workload": "bert", "cmdline": r"bert_\w+\.py"}]}}
    ).profiling.targets
    found = discover(table, targets, procs.get, procs.values)
    assert [w.name for w in found] == ["VLLMWorker", "bert", "python3"]
    by = {w.name: w for w in found}
    assert by["python3"].pids == (10, 11) and by["python3"].chips == {(0, 0), (1, 0)}
    assert by["python3"].attachable is True
    assert by["VLLMWorker"].attachable is None and by["VLLMWorker"].chips == {(2, 0)}
    assert by["bert"].attachable is False and by["bert"].chips == frozenset()
    assert len(discover(table, targets, procs.get, procs.values, max_workloads=2)) == 2
    assert [
        w.name for w in discover(table, targets, procs.get, procs.values, discover_unmatched=False)
    ] == ["bert"]


def test_container_id_from_cgroup(tmp_path: Path) -> None:
    cid = "4f2c" * 16
    cgroup = tmp_path / "cgroup"
    cgroup.write_text(f"0::/system.slice/docker-{cid}.scope\n")
    assert container_id(cgroup) == cid
    cgroup.write_text("0::/user.slice/user-1000.slice/session-3.scope\n")
    assert container_id(cgroup) is None
    assert container_id(tmp_path / "missing") is None


def test_a_target_npus_mark_their_chips_when_npu_smi_cannot_see_the_pid() -> None:
    job = ProcessInfo(
        pid=4242, name="python3", cmdline=("python3", "train.py"), profiling_mode="dynamic"
    )
    target = ProfilingTarget(workload="train", cmdline="train\\.py", npus=(1,))
    found = discover(
        (),
        [target],
        lambda pid: None,
        lambda: [job],
        discover_unmatched=False,
        table_chips=[(0, 0), (1, 0), (1, 1), (2, 0)],
    )
    assert [(w.name, sorted(w.chips)) for w in found] == [("train", [(1, 0), (1, 1)])]
