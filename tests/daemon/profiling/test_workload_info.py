"""A job is listed (npu_workload_info, npu_rank_npu_info) from its discovery, before its first
capture, so a dashboard's job picker shows it; within profiling.max_workloads."""

from __future__ import annotations

from pathlib import Path

from profiling_helpers import config_for, exposition, promtool_ok
from prometheus_client.parser import text_string_to_metric_families

from npumon.daemon.config import Throttle
from npumon.daemon.model.chips import ChipResults, InfoTable, TableProcess
from npumon.daemon.model.snapshot import SourceStatus
from npumon.daemon.profiling.capture import Host
from npumon.daemon.profiling.identity import JobIdentity
from npumon.daemon.profiling.service import Profiler
from npumon.daemon.profiling.workloads import ProcessInfo, ProcessProbe
from npumon.daemon.store import SnapshotStore


class Probe(ProcessProbe):
    """Processes of ``jobs`` (pid: job name), each a torchrun worker of rank pid % 10."""

    def __init__(self, jobs: dict[int, str]) -> None:
        super().__init__()
        self.known = {
            pid: ProcessInfo(
                pid,
                "python",
                ("python", "train.py"),
                "dynamic",
                rank=pid % 10,
                job=JobIdentity(job, "master_addr"),
            )
            for pid, job in jobs.items()
        }

    def info(self, pid: int) -> ProcessInfo | None:
        return self.known.get(pid)

    def all(self) -> list[ProcessInfo]:
        return list(self.known.values())

    def alive(self, pid: int) -> bool:
        return pid in self.known


def _node(tmp_path: Path, jobs: dict[int, str], max_workloads: int = 16) -> Profiler:
    store = SnapshotStore(Throttle())
    table = InfoTable(
        None,
        None,
        (),
        tuple(
            TableProcess(npu=pid % 10, chip=0, pid=pid, name="python", memory_bytes=1)
            for pid in jobs
        ),
    )
    store.publish_chips(ChipResults(table=table), SourceStatus("npu_smi_table", True, 0.1, 1, 0))
    probe = Probe(jobs)
    config = config_for(tmp_path, discover=True, max_workloads=max_workloads)
    profiler = Profiler(config, store, Host(probe.alive, probe.all, store.set_capturing), probe)
    profiler.start()
    return profiler


def _listed(text: str) -> dict[str, set[tuple[str, ...]]]:
    found: dict[str, set[tuple[str, ...]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.labels.get("workload") is not None:
                found.setdefault(s.name, set()).add(tuple(sorted(s.labels.items())))
    return found


def test_a_job_is_listed_from_its_discovery_before_its_first_capture(tmp_path: Path) -> None:
    profiler = _node(tmp_path, {101: "llama:23456", 102: "llama:23456", 203: "bert:23456"})
    assert "npu_workload_info" not in exposition(profiler)  # nothing discovered yet
    profiler.workloads()  # the capture tick's discovery
    text = exposition(profiler)
    promtool_ok(text)
    listed = _listed(text)
    # only the names: no step time, baseline or capture figure before a capture
    assert set(listed) == {"npu_workload_info", "npu_rank_npu_info"}
    assert listed["npu_workload_info"] == {
        (("workload", "bert:23456"), ("workload_source", "master_addr")),
        (("workload", "llama:23456"), ("workload_source", "master_addr")),
    }
    assert listed["npu_rank_npu_info"] == {
        (("npu", "1"), ("rank", "rank1"), ("workload", "llama:23456")),
        (("npu", "2"), ("rank", "rank2"), ("workload", "llama:23456")),
        (("npu", "3"), ("rank", "rank3"), ("workload", "bert:23456")),
    }


def test_discovered_jobs_stay_within_max_workloads(tmp_path: Path) -> None:
    jobs = {100 + i: f"job-{i}:1" for i in range(5)}
    profiler = _node(tmp_path, jobs, max_workloads=2)
    profiler.workloads()
    workloads = [w.workload for w in profiler.view().workloads]
    assert len(workloads) == 2 and workloads == sorted(workloads)
