"""Step-aligned captures: a job's nodes capture in the same wall-clock slot, jobs spread out."""

from __future__ import annotations

import os
from pathlib import Path

from profiling_helpers import config_for, profiler_for

from npumon.daemon.profiling.align import GRACE_SECONDS, LEAD_SECONDS, slot_offset, slot_start
from npumon.daemon.profiling.workloads import Workload

INTERVAL = 600.0
JOB = "llama-master-0:23456"


def test_one_job_one_slot_and_jobs_spread_over_the_interval() -> None:
    offsets = {slot_offset(f"job-{i}", INTERVAL) for i in range(200)}
    assert all(0 <= o < INTERVAL for o in offsets)
    assert len(offsets) > 150  # spread, not bunched on one second
    start = slot_start(JOB, INTERVAL, 1_000_000.0)
    assert start <= 1_000_000.0 < start + INTERVAL
    assert (start - slot_offset(JOB, INTERVAL)) % INTERVAL == 0
    assert slot_start(JOB, INTERVAL, start) == start  # a node at the very slot agrees


def test_two_nodes_with_apart_clocks_and_ticks_start_at_the_same_slot(tmp_path: Path) -> None:
    """Node A ticks 3 s before the slot, node B 9 s before (their 15 s ticks are not in step):
    both take the same slot and wait for it; a node past the grace skips to the next slot."""
    slot = slot_start(JOB, INTERVAL, 2_000_000.0) + INTERVAL
    job = Workload(JOB, (os.getpid(),), "msprof_attach", frozenset(), source="master_addr")
    chosen = []
    for name, ahead in (("a", 3.0), ("b", 9.0)):
        wall = [slot - ahead]
        waited: list[float] = []
        config = config_for(tmp_path / name, interval="10m", msprof={"command": ["/nonexistent"]})
        profiler, _ = profiler_for(
            config, waited.append, clock=lambda w=wall: w[0], monotonic=lambda w=wall: w[0]
        )
        found = profiler.due((job,), wall[0])
        assert found is not None and found.slot == slot
        profiler.capture(found)
        assert waited == [ahead]  # started at the slot, not at its own tick
        chosen.append(found.slot)
        assert profiler.due((job,), wall[0] + 1.0) is None  # once per slot
    assert chosen[0] == chosen[1]
    late, _ = profiler_for(
        config_for(tmp_path / "c", interval="10m"),
        clock=lambda: slot + GRACE_SECONDS + 1,
        monotonic=lambda: slot + GRACE_SECONDS + 1,
    )
    assert late.due((job,), slot + GRACE_SECONDS + 1) is None
    assert late.due((job,), slot + INTERVAL - LEAD_SECONDS + 1) is not None


def test_a_process_named_workload_is_not_aligned(tmp_path: Path) -> None:
    profiler, _ = profiler_for(
        config_for(tmp_path, interval="10m"), clock=lambda: 0.0, monotonic=lambda: 0.0
    )
    found = profiler.due((Workload("python", (1,), "msprof_attach", frozenset()),), 700.0)
    assert found is not None and found.slot is None


def test_a_node_busier_than_the_interval_takes_its_jobs_in_turn(tmp_path: Path) -> None:
    """Two jobs whose slots come round while the node is busy: the one waiting longest wins,
    so neither starves."""
    wall = [3_000_000.0]
    profiler, _ = profiler_for(
        config_for(tmp_path, interval="10m", msprof={"command": ["/nonexistent"]}),
        lambda s: None,
        clock=lambda: wall[0],
        monotonic=lambda: wall[0],
    )
    jobs = [
        Workload(name, (os.getpid(),), "msprof_attach", frozenset(), source="master_addr")
        for name in ("job-a:1", "job-b:1")
    ]
    taken = []
    for _ in range(4):
        # the next moment either job's slot is within the lead
        wall[0] = min(
            slot_start(w.name, INTERVAL, wall[0] + INTERVAL) - LEAD_SECONDS / 2 for w in jobs
        )
        while (found := profiler.due(tuple(jobs), wall[0])) is None:
            wall[0] += 1.0
        profiler.capture(found)
        taken.append(found.name)
    assert sorted(taken) == ["job-a:1", "job-a:1", "job-b:1", "job-b:1"], taken
