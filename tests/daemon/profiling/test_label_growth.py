"""Labels that cannot grow: 20 captures of one job in each capture mode, through the real
simulators (msprof attach, torch_npu's config trigger), export the same profile series as the
first capture did: a rank is the job's rank or device, never a capture directory's name. The 20
captures analyse in this process (what is exported is the question, not the worker's process
boundary); the rank test below goes through the worker process."""

from __future__ import annotations

from pathlib import Path

import pytest
from profiling_helpers import config_for, exposition, profiler_for, train_job, worker_in_process

from npumon.daemon.profiling.service import Profiler
from npumon.daemon.profiling.workloads import Workload
from npumon.exporters.profiles import FAMILIES
from tests.helpers.exposition import Key, samples

pytestmark = pytest.mark.integration  # real msprof and training-job simulators

CAPTURES = 20
PROFILE_FAMILIES = {f.name for f in FAMILIES}


def _series(text: str) -> set[Key]:
    return {k for k in samples(text) if k[0].removesuffix("_total") in PROFILE_FAMILIES}


def _captures(profiler: Profiler, workload: Workload) -> list[set[Key]]:
    seen: list[set[Key]] = []
    for _ in range(CAPTURES):
        outcome = profiler.capture(workload)
        assert outcome.result == "ok", outcome.message
        seen.append(_series(exposition(profiler)))
    return seen


# one series per workload each, from the capture on whose baseline is ready: not a label growing
BASELINE_FAMILIES = {
    "npu_step_duration_baseline_seconds",
    "npu_step_duration_baseline_band_ratio",
    "npu_step_regression",
}


def _assert_no_growth(seen: list[set[Key]]) -> None:
    first, every = seen[0], set().union(*seen)
    ranks = {dict(labels)["rank"] for name, labels in first if name.startswith("npu_rank_step")}
    assert ranks and all(not r.startswith(("PROF_", "vm_")) and "_" not in r for r in ranks)
    grown = {k for k in every - first if k[0] not in BASELINE_FAMILIES}
    assert grown == set(), f"series added after the first capture: {sorted(grown)[:5]}"
    assert every == seen[-1], f"series gone stale: {sorted(every - seen[-1])[:5]}"


def test_msprof_attach_captures_keep_one_label_set(tmp_path: Path) -> None:
    profiler, _ = profiler_for(config_for(tmp_path), runner=worker_in_process)
    with train_job(tmp_path, "balanced") as job:
        workload = Workload("trainer", (job.pid,), "msprof_attach", frozenset({(0, 0)}), True)
        seen = _captures(profiler, workload)
    _assert_no_growth(seen)


def test_torch_npu_captures_keep_one_label_set(tmp_path: Path) -> None:
    config_dir = tmp_path / "job-config"
    target = {
        "workload": "torchjob",
        "cmdline": f"--dynamic-config-dir {config_dir}",
        "mode": "torch_npu_config",
        "config_dir": str(config_dir),
    }
    profiler, _ = profiler_for(
        config_for(tmp_path, targets=[target], steps=5), runner=worker_in_process
    )
    with train_job(tmp_path, "balanced", dynamic=False, config_dir=config_dir):
        (workload,) = profiler.workloads()
        seen = _captures(profiler, workload)
    _assert_no_growth(seen)


def test_an_attached_jobs_rank_comes_from_its_environment(tmp_path: Path) -> None:
    """msprof's PROF_* names no rank: the RANK of the job's environment does."""
    profiler, _ = profiler_for(config_for(tmp_path))
    with train_job(tmp_path, "balanced", environ={"RANK": "5", "WORLD_SIZE": "8"}) as job:
        workload = Workload("trainer", (job.pid,), "msprof_attach", frozenset({(0, 0)}), True)
        outcome = profiler.capture(workload)
    assert outcome.result == "ok", outcome.message
    ranks = {
        dict(labels)["rank"]
        for name, labels in _series(exposition(profiler))
        if name == "npu_rank_step_duration_seconds"
    }
    assert ranks == {"rank5"}
