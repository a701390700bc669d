"""The profiling state file: the format released versions wrote still loads, with its baselines."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from npumon.daemon.profiling.state import STATE_FILE, ProfileState

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "state"


def loaded(tmp_path: Path, name: str) -> ProfileState:
    shutil.copyfile(FIXTURE / name, tmp_path / STATE_FILE)
    state = ProfileState(tmp_path, window=20, min_captures=3)
    state.load()
    return state


def test_state_written_by_0_1_0_still_loads(tmp_path: Path) -> None:
    state = loaded(tmp_path, "profiling-state-v0.1.0.json")
    assert not state.errors
    assert sorted(state.workloads) == ["qwen3", "resnet"]
    qwen = state.workloads["qwen3"]
    assert qwen.p99s == [0.40, 0.44, 0.42, 0.41, pytest.approx(0.81015034)]
    assert state.baseline("qwen3") == pytest.approx(0.415)  # the latest p99 is judged, not used
    assert (qwen.last_success, qwen.capture_seconds) == (1764248400.0, 3.25)
    summary = qwen.summary
    assert summary is not None and summary.step is not None
    assert summary.step.p99_seconds == pytest.approx(0.81015034)
    assert [b.kind for b in summary.bottlenecks] == ["communication", "dynamic_shape"]
    assert [r.rank for r in summary.ranks] == ["rank0", "rank1", "rank2", "rank3"]
    assert summary.ranks[0].phases and summary.ranks[0].phases[0].phase == "computing"
    spread = {s.phase: s for s in summary.rank_spread}
    assert spread["computing"].flagged and spread["computing"].slowest_rank == "rank3"
    assert summary.op_time_ratio[0].op_type == "FlashAttentionScoreGrad"
    assert summary.op_time_ratio[-1].op_type == "other"
    resnet = state.workloads["resnet"]
    assert resnet.summary is not None and resnet.summary.step is None
    assert resnet.capture_seconds is None and state.baseline("resnet") is None
    assert [b.kind for b in resnet.summary.bottlenecks] == [
        "format_conversion", "ai_cpu_fallback", "dynamic_shape"]
    assert state.ingested["/data/prof/llama/node1_1000_2025_ascend_pt"] == 1764240000.25


def test_a_loaded_0_1_0_state_saves_and_loads_unchanged(tmp_path: Path) -> None:
    first = loaded(tmp_path, "profiling-state-v0.1.0.json")
    assert first.save()
    again = ProfileState(tmp_path, window=20, min_captures=3)
    again.load()
    assert not again.errors
    assert again.workloads == first.workloads and again.ingested == first.ingested
