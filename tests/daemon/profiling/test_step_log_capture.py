"""profiling.step_log on a capture of real simulators: the simulated job runs its captured steps
--capture-inflation longer and writes its Megatron iteration lines into its pod's CRI log; the
profiler, which finds the job's pod through the kubelet's allocation and the process's pod UID,
reads that log after the capture and exports the inflation."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest
from profiling_helpers import config_for, exposition, profiler_for, promtool_ok, train_job, value

from npumon.daemon.model.chips import ChipMapping, ChipResults, MappedChip
from npumon.daemon.model.kubelet import ContainerAllocation, DeviceRef, PodResourcesResults
from npumon.daemon.model.snapshot import SourceStatus
from npumon.daemon.parsers.table import parse_info
from npumon.daemon.profiling.steplog import MIN_LINES
from npumon.daemon.profiling.workloads import Workload
from npumon.daemon.store import IDENTITY_SOURCE, SnapshotStore
from tests.daemon.sources.fake_runner import TABLE
from tests.helpers.wait import wait_for

pytestmark = pytest.mark.integration  # real msprof and training-job simulators

INFLATION = 0.2  # the simulated job's steps last this much longer while msprof captures
STEP_SECONDS = 0.1
NAMESPACE, POD, CONTAINER = "ml", "train-0", "trainer"
POD_UID = "6b1f0c52-8d3e-4a0b-9c61-2f7d4e5a9b10"
CHIP = (0, 0)


def attribute_to_pod(store: SnapshotStore, pid: int) -> None:
    """npu-smi lists ``pid`` on chip 0 with its pod UID (what the table source reads from
    /proc/<pid>/cgroup, daemon/containers.py), and the kubelet allocates that chip to the pod:
    the store attributes the process to the pod's container."""
    table = parse_info(TABLE)  # a 910B4 with two chips, a process on each
    (process,) = [replace(p, pid=pid, pod_uid=POD_UID) for p in table.processes if p.npu == 0]
    mapping = ChipMapping((MappedChip(0, 0, 0, None), MappedChip(1, 0, 1, None)))
    store.publish_chips(
        ChipResults(table=replace(table, processes=(process,)), mapping=mapping),
        SourceStatus(IDENTITY_SOURCE, True, 0.0, 1.0, 0),
    )
    allocation = ContainerAllocation(
        NAMESPACE, POD, CONTAINER, "huawei.com/Ascend910", (DeviceRef("Ascend910-0", 0),)
    )
    store.publish_pod_resources(
        PodResourcesResults((allocation,)), SourceStatus("kubelet_pod_resources", True, 0, 1, 0)
    )


def iteration_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"elapsed time per iteration")
    except FileNotFoundError:
        return 0


def test_the_capture_inflation_is_read_from_the_pods_log(tmp_path: Path) -> None:
    pods = tmp_path / "pods"  # the kubelet's /var/log/pods
    log = pods / f"{NAMESPACE}_{POD}_{POD_UID}" / CONTAINER / "0.log"
    config = config_for(
        tmp_path,
        duration="2s",  # about 16 captured steps
        step_log={"enabled": True, "root": str(pods)},
    )
    profiler, _ = profiler_for(config, wait=time.sleep)  # msprof attach lasts the 2 s
    extra = ["--capture-inflation", str(INFLATION), "--step-log", str(log)]
    with train_job(tmp_path, "balanced", step_seconds=str(STEP_SECONDS), extra=extra) as job:
        attribute_to_pod(profiler.store, job.pid)
        (chip,) = [c for c in profiler.store.latest().chips if (c.npu, c.chip) == CHIP]
        assert [(p.pid, p.owner.pod, p.owner.container) for p in chip.processes] == [
            (job.pid, POD, CONTAINER)
        ]
        # uncaptured lines before the capture: the first line has no span
        wait_for(lambda: iteration_lines(log) >= MIN_LINES + 2, 10.0, "the job's first lines")
        workload = Workload("trainer", (job.pid,), "msprof_attach", frozenset({CHIP}))
        outcome = profiler.capture(workload)
    assert outcome.result == "ok", outcome.message
    found = profiler.step_log["trainer"]
    assert found.result == "ok", found
    text = exposition(profiler)
    promtool_ok(text)
    assert value(text, "npumon_step_log_reads_total", result="ok") == 1
    assert value(text, "npumon_step_log_reads_total", result="no_pod") == 0
    ratio = value(text, "npu_profile_capture_inflation_ratio", workload="trainer")
    assert ratio == pytest.approx(1 + INFLATION, abs=INFLATION / 4), found
