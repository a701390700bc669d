"""Ingest of user directories (never modified, never analysed twice, not while being written);
`npumon collect --once` with ingest.paths on the real 4-rank sample. Real analysis workers."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from profiling_helpers import (
    config_for,
    exposition,
    profiler_for,
    promtool_ok,
    tree_digest,
    value,
)

from npumon.daemon.profiling.ingest import IngestGroup, is_profile_dir
from npumon.simulator.prof_dir import CaptureMeta, write_raw
from tests.helpers.wait import scaled

pytestmark = pytest.mark.integration
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "msprof"
RANK_FILES = {
    0: {
        "step_trace_time": "step_trace_time_torchnpu_cann8.3rc1_rank0.csv",
        "op_statistic": "op_statistic_torchnpu_cann8.3rc1.csv",
        "kernel_details": "kernel_details_torchnpu_cann8.3rc1_level2.csv",
    },
    **{
        r: {"step_trace_time": f"step_trace_time_torchnpu_cann8.3rc1_rank{r}.csv"}
        for r in (1, 2, 3)
    },
}


def four_ranks(root: Path) -> Path:
    """A copy of the real 4-rank torch_npu sample, aged past the settle time."""
    for rank, tables in RANK_FILES.items():
        out = root / f"node1_{1000 + rank}_2025_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
        out.mkdir(parents=True)
        for kind, fixture in tables.items():
            shutil.copyfile(FIXTURES / fixture, out / f"{kind}.csv")
    age(root)
    return root


def age(root: Path, seconds: float = 3600.0) -> None:
    stamp = time.time() - seconds
    for path in [root, *root.rglob("*")]:
        os.utime(path, (stamp, stamp), follow_symlinks=False)


def mean_stage_seconds(name: str) -> float:
    with (FIXTURES / name).open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    return sum(float(r["Stage"]) for r in rows) / len(rows) / 1e6


def test_ingest_never_modifies_the_users_dir_and_never_repeats(tmp_path: Path) -> None:
    user = tmp_path / "profiles"
    four_ranks(user / "llama")
    now = time.time()
    meta = CaptureMeta("aicpu_fallback", 4242, 0, 0.05, now - 5, now - 4, 10, 4, 7)
    write_raw(user / "resnet", meta, 1)  # raw msprof data: needs export, on our copy
    age(user)
    before = tree_digest(user)
    profiler, recorder = profiler_for(
        config_for(tmp_path, enabled=False, ingest={"paths": [str(user)]})
    )
    outcomes = profiler.ingest_once()
    assert sorted((o.workload, o.result) for o in outcomes) == [("llama", "ok"), ("resnet", "ok")]
    assert tree_digest(user) == before
    assert profiler.ingest_once() == []  # same path, same mtime: not analysed again
    assert recorder.calls == []  # ingest marks no chip as being profiled
    text = exposition(profiler)
    promtool_ok(text)
    assert value(text, "npumon_captures_total", result="ok") == 2
    assert value(text, "npu_profile_bottleneck", workload="resnet", kind="ai_cpu_fallback") == 1
    means = [mean_stage_seconds(RANK_FILES[r]["step_trace_time"]) for r in RANK_FILES]
    mean = value(text, "npu_step_duration_seconds", workload="llama", stat="mean")
    # Stage and computing + communication + free agree to ~1e-6 in the sample
    assert mean is not None and min(means) * (1 - 1e-5) <= mean <= max(means) * (1 + 1e-5)
    assert list((tmp_path / "state" / "captures").iterdir()) == []  # the export copy is gone
    # each workload's page names the user's own directory to open, never our deleted copy
    page = (tmp_path / "state" / "reports" / "llama.html").read_text(encoding="utf-8")
    assert f"<code>{user / 'llama'}</code>" in page
    assert f"<code>{user / 'resnet'}" in (tmp_path / "state" / "reports" / "resnet.html").read_text(
        encoding="utf-8"
    )


def test_a_profile_still_being_written_waits(tmp_path: Path) -> None:
    user = tmp_path / "profiles"
    four_ranks(user / "llama")
    os.utime(next(user.rglob("step_trace_time.csv")))  # just written
    profiler, _ = profiler_for(config_for(tmp_path, ingest={"paths": [str(user)]}))
    outcomes = profiler.ingest_once()
    # three settled ranks are analysed; the fresh one waits for the next scan
    assert len(outcomes) == 3 and {o.workload for o in outcomes} == {"llama"}


def test_collect_once_analyses_the_ingest_paths(tmp_path: Path) -> None:
    user = four_ranks(tmp_path / "profiles" / "qwen3")
    config = tmp_path / "npumon.yaml"
    sim = [str(Path(sys.executable).parent / "npumon-sim-npu-smi"), "--scenario", "910b-8"]
    config.write_text(
        json.dumps(
            {
                "npu_smi": {"command": sim},
                "chips": {"timeout": "30s"},
                "state_directory": str(tmp_path / "state"),
                "profiling": {"ingest": {"paths": [str(user.parent)]}},
            }
        )
    )
    before = tree_digest(user)
    result = subprocess.run(
        [sys.executable, "-m", "npumon.daemon", "collect", "--once", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=scaled(120),
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    text = result.stdout
    promtool_ok(text)
    assert tree_digest(user) == before
    assert value(text, "npumon_captures_total", result="ok") == 1
    expected = sorted(mean_stage_seconds(RANK_FILES[r]["step_trace_time"]) for r in RANK_FILES)
    mean = value(text, "npu_step_duration_seconds", workload="qwen3", stat="mean")
    assert mean is not None and expected[0] * (1 - 1e-5) <= mean
    assert value(text, "npu_profile_bottleneck", workload="qwen3", kind="communication") == 1
    assert value(text, "npu_aicore_utilization_ratio", npu="0", chip="0") is not None


def test_mindspore_profile_dirs_are_found_and_other_profiler_dirs_are_not(tmp_path: Path) -> None:
    """MindSpore <= 2.2 writes profiler/ with its tables, >= 2.3 *_ascend_ms/; a profiler/ folder
    without MindSpore's tables (another tool's) is not a profile."""
    ms22 = tmp_path / "job" / "profiler"
    shutil.copytree(FIXTURES / "trees" / "mindspore22_cluster" / "profiler", ms22)
    other = tmp_path / "other" / "profiler"
    other.mkdir(parents=True)
    (other / "hccl_raw_0.csv").write_text("step_num\n")
    ms23 = tmp_path / "rank0_20250101_ascend_ms"
    ms23.mkdir()
    assert is_profile_dir(ms22) and is_profile_dir(ms23)
    assert not is_profile_dir(other)


def test_ingest_is_capped_in_workloads_like_captures(tmp_path: Path) -> None:
    # Five jobs' folders with max_workloads 2: at most 2 analyses a pass, and the exposition
    # keeps the 2 workloads analysed last, not one more per job folder.
    user = tmp_path / "profiles"
    for job in range(5):
        out = user / f"job{job}" / "node1_1000_2025_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
        out.mkdir(parents=True)
        shutil.copyfile(FIXTURES / RANK_FILES[1]["step_trace_time"], out / "step_trace_time.csv")
    age(user)
    config = config_for(tmp_path, enabled=False, max_workloads=2, ingest={"paths": [str(user)]})
    profiler, _ = profiler_for(config)
    seen: list[str] = []
    for _ in range(3):
        outcomes = profiler.ingest_once()
        assert len(outcomes) <= 2 and all(o.result == "ok" for o in outcomes), outcomes
        seen += [o.workload for o in outcomes]
        shown = {w.workload for w in profiler.view().workloads}
        assert shown == set(seen[-2:]), (shown, seen)
    assert sorted(seen) == [f"job{j}" for j in range(5)]  # each analysed once, in turn
    assert profiler.ingest_once() == []


def test_a_profile_folder_swapped_for_a_link_after_it_was_found_is_not_read(
    tmp_path: Path,
) -> None:
    # the job swaps its found folder for a link to a root-only profile before the worker runs
    user, hidden = tmp_path / "profiles", tmp_path / "root-only" / "node1_1000_2025_ascend_pt"
    out = hidden / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    shutil.copyfile(FIXTURES / RANK_FILES[0]["step_trace_time"], out / "step_trace_time.csv")
    found = user / "job" / hidden.name
    found.parent.mkdir(parents=True)
    found.symlink_to(hidden)
    profiler, _ = profiler_for(config_for(tmp_path, ingest={"paths": [str(user)]}))
    group = IngestGroup("job", found, ((str(found), 1.0),), user)
    outcome = profiler._ingest(group)  # noqa: SLF001 (the analysis of one found group)
    assert outcome.result == "failed" and "symlink" in outcome.message, outcome


class _SwapAfterListing:
    """os.scandir that, once a listing holding ``victim``'s name is read, swaps ``victim`` for
    a symlink to ``target``: the job's move between a copier's check and its open."""

    def __init__(self, victim: Path, target: Path) -> None:
        self.victim, self.target, self.swapped = victim, target, False
        self._real = os.scandir

    def __call__(self, path: Any = ".") -> Any:
        with self._real(path) as listing:
            entries = list(listing)
        if not self.swapped and any(e.name == self.victim.name for e in entries):
            self.swapped = True
            if self.victim.is_dir():
                shutil.rmtree(self.victim)
            else:
                self.victim.unlink()
            self.victim.symlink_to(self.target)
        return contextlib.nullcontext(iter(entries))


@pytest.mark.parametrize("swapped", ["op_statistic.csv", "ASCEND_PROFILER_OUTPUT"])
def test_the_export_copy_never_follows_an_entry_swapped_for_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swapped: str
) -> None:
    secret = tmp_path / "root-only"
    secret.mkdir(mode=0o700)
    (secret / "op_statistic.csv").write_text("OP Type,Count\nTOPSECRETOP,1\n")
    member = tmp_path / "profiles" / "job" / "node1_1000_2025_ascend_pt"
    out = member / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "op_statistic.csv").write_text("OP Type,Count\nMatMul,1\n")
    (member / "profiler_info.json").write_text("{}")
    profiler, _ = profiler_for(config_for(tmp_path, enabled=False))
    group = IngestGroup("job", member, ((str(member), 1.0),), tmp_path / "profiles")
    victim = out / swapped if swapped.endswith(".csv") else out
    swap = _SwapAfterListing(victim, secret / swapped if victim.is_file() else secret)
    monkeypatch.setattr(os, "scandir", swap)
    scratch = profiler._copy_for_export(group)  # noqa: SLF001 (the copy of one group)
    monkeypatch.undo()
    assert swap.swapped
    copied = list(scratch.rglob("*"))
    assert not [p for p in copied if p.is_symlink()], copied
    assert not [p for p in copied if p.is_file() and "TOPSECRETOP" in p.read_text()], copied
    assert (scratch / member.name / "profiler_info.json").read_text() == "{}"
