"""A capture cut short inside its first or last step: that step is left out of the statistics."""

from __future__ import annotations

import csv

import pytest
from analysis_helpers import FIXTURES

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.model.profile import Thresholds

TREE = FIXTURES / "trees" / "synthetic_partial_last_step"
TABLE = TREE / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"


def _totals() -> dict[int, float]:
    """Step -> Computing + Communication(Not Overlapped) + Free, us, read with csv."""
    with TABLE.open(encoding="utf-8", newline="") as handle:
        return {
            int(r["Step"]): float(r["Computing"])
            + float(r["Communication(Not Overlapped)"])
            + float(r["Free"])
            for r in csv.DictReader(handle)
        }


def test_cut_short_last_step_is_left_out() -> None:
    totals = _totals()
    assert totals[10] < 0.05 * totals[9]  # the fixture's last step: Free 0, computing only
    report = analyze_path(TREE)
    step = report.summary.step
    assert step is not None
    kept = [totals[s] for s in range(3, 10)]  # warm-up 1-2 out, partial 10 out
    assert step.count == len(kept)
    assert step.mean_seconds == pytest.approx(sum(kept) / len(kept) / 1e6)
    assert [p for p in report.problems if "step 10 left out of the step statistics" in p]


def test_partial_rule_can_be_turned_off() -> None:
    step = analyze_path(TREE, Thresholds(partial_step_ratio=0)).summary.step
    assert step is not None and step.count == 8


def test_steps_of_a_normal_capture_all_stay() -> None:
    report = analyze_path(FIXTURES / "trees" / "pp2dp2_level2")
    assert not [p for p in report.problems if "left out of the step statistics" in p]


def test_partial_first_step_and_short_middle_step() -> None:
    from npumon.daemon.analysis.readers.steptime import StepRow
    from npumon.daemon.analysis.stepstats import partial_edges

    def row(key: int, us: float) -> StepRow:
        return StepRow(key, None, us, {})

    rows = [row(1, 30.0), row(2, 100.0), row(3, 20.0), row(4, 110.0), row(5, 90.0)]
    kept, cut = partial_edges(rows, 0.5)
    # step 1 is under half the median of steps 2-4 (100): a capture begun inside it; step 3 is
    # short too but not at an edge, so it is a real step and stays
    assert [r.key for r in cut] == [1]
    assert [r.key for r in kept] == [2, 3, 4, 5]
    assert partial_edges(rows[:2], 0.5) == (rows[:2], [])  # two steps: nothing to judge by
