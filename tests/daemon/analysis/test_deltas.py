"""What changed between two captures: per phase, operator type, collective and rank, in
seconds per step, the largest change first; `npumon analyze A --against B` on two real
profiles (MindSpore 2.2 runs of one job, tests/fixtures/msprof/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.analysis.deltas import compare, parts
from npumon.daemon.cli import main
from npumon.daemon.model.profile import ProfileSummary

TREES = Path(__file__).resolve().parents[2] / "fixtures" / "msprof" / "trees"
RUN1, RUN2 = TREES / "mindspore22_run1", TREES / "mindspore22_run2"


@pytest.fixture(scope="module")
def runs() -> tuple[ProfileSummary, ProfileSummary]:
    return analyze_path(RUN1).summary, analyze_path(RUN2).summary


def test_every_part_of_either_run_with_its_change_largest_first(
    runs: tuple[ProfileSummary, ProfileSummary],
) -> None:
    first, second = runs
    c = compare(second, first, "/kept/run1")
    before, after = parts(first), parts(second)
    assert {(d.part_kind, d.part) for d in c.deltas} == before.keys() | after.keys()
    sizes = [abs(d.seconds_per_step) for d in c.deltas]
    assert sizes == sorted(sizes, reverse=True)
    for d in c.deltas:
        key = (d.part_kind, d.part)
        assert d.seconds_per_step == pytest.approx(after.get(key, 0.0) - before.get(key, 0.0))
        assert d.reference_seconds_per_step == before.get(key)
    phases = {p.phase: p.seconds for p in second.phases}
    assert after[("phase", "fp_bp")] == phases["fp_bp"]
    assert second.step is not None and first.step is not None
    assert c.step_change_ratio == pytest.approx(
        second.step.p50_seconds / first.step.p50_seconds - 1
    )
    assert c.reference_capture == "/kept/run1"
    assert not [d for d in compare(first, first).deltas if d.seconds_per_step != 0]


def test_analyze_against_prints_the_deltas(
    runs: tuple[ProfileSummary, ProfileSummary], capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = runs
    assert main(["analyze", str(RUN2), "--against", str(RUN1)]) == 0
    out = capsys.readouterr().out
    largest = compare(second, first).deltas[0]
    assert f"Against {RUN1}:" in out and "What changed (ms per step, largest first" in out
    assert f"{largest.seconds_per_step * 1e3:+10.3f}  {largest.part_kind:<10} {largest.part}" in out
    assert main(["analyze", str(RUN2), "--against", str(RUN1 / "missing")]) == 2
