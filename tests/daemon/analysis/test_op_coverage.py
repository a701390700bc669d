"""The operator tables' coverage of the compute they explain, per rank: their operator time over
the computing time (computing, or FP->BP) of the steps they cover. Under op_coverage_ratio the
operator-table rules do not judge and say why (summary.not_judged). The figures asserted on the
real exports are computed here from the files, with csv."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from analysis_helpers import FIXTURES

from npumon.daemon.analysis.analysis import NoProfileData, analyze_path
from npumon.daemon.analysis.evidence import Evidence, OpCoverage
from npumon.daemon.analysis.html import render
from npumon.daemon.analysis.report import format_report
from npumon.daemon.analysis.rules import RULES, diagnose, withheld
from npumon.daemon.model.profile import Thresholds

TREES = FIXTURES / "trees"
OUT = "ASCEND_PROFILER_OUTPUT"
OPERATOR_RULES = {r.kind for r in RULES if r.operator_table}


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return [{k.strip(): v.strip() for k, v in r.items() if k} for r in csv.DictReader(handle)]


def test_the_operator_rules_are_the_ones_that_read_the_operator_tables() -> None:
    assert {
        "compute_bound",
        "small_ops",
        "format_conversion",
        "ai_cpu_fallback",
        "dynamic_shape",
        "fusible_ops",
        "operator_pmu",
    } == OPERATOR_RULES


def test_mindspore22_run1_operator_findings_are_withheld_and_say_why(tmp_path: Path) -> None:
    """The AI Core type table sums to 3.465 ms over a capture of 322 steps of 118 ms FP->BP."""
    root = TREES / "mindspore22_run1" / "profiler"
    op_ms = sum(float(r["total_time"]) for r in _csv(root / "aicore_intermediate_1_type.csv"))
    steps = [
        r
        for r in _csv(root / "step_trace_raw_1_detail_time.csv")
        if r["step_num"].isdigit() and float(r["total"])
    ]
    fp_bp_ms = sum(float(r["fp_and_bp"]) for r in steps) / 1e5  # 10 ns ticks
    report = analyze_path(TREES / "mindspore22_run1")
    s = report.summary
    assert s.op_coverage == pytest.approx(op_ms / fp_bp_ms)
    assert s.op_coverage < 0.001
    (rank,) = report.scope.ranks
    assert rank.op_coverage == pytest.approx(op_ms / fp_bp_ms)
    kinds = {b.kind for b in s.bottlenecks}
    assert not kinds & {"compute_bound", "small_ops"}
    assert {n.kind for n in s.not_judged} == OPERATOR_RULES
    reason = s.not_judged[0].reason
    assert all(n.reason == reason for n in s.not_judged)
    assert reason.startswith("the operator table covers 0.0091% of compute (rank1: 3.465 ms of")
    assert f"in {len(steps)} step(s)" in reason and reason.endswith("operator findings withheld")
    text = format_report(report)
    assert "not judged: " in text and reason in text
    page = render(report)
    assert 'id="not-judged"' in page and "operator findings withheld" in page
    assert 'href="#not-judged"' in page  # the verdict points at it


def test_the_same_table_judged_when_its_steps_are_the_ones_it_covers() -> None:
    """mindspore22_run2: its table covers its one step (97.5 % of FP->BP): still judged."""
    s = analyze_path(TREES / "mindspore22_run2").summary
    assert s.op_coverage is not None and s.op_coverage > 0.9
    assert s.not_judged == ()
    assert {"compute_bound", "small_ops"} <= {b.kind for b in s.bottlenecks}


def test_pp2dp2_coverage_is_per_rank_against_its_own_steps() -> None:
    """Ranks 0 and 2 have an operator table, ranks 1 and 3 none: each table is set against its
    own rank's computing, never the job's (ranks 0 and 2 over all four: about 53 %)."""
    tree = TREES / "pp2dp2_level2"
    report = analyze_path(tree)
    own: dict[str, float] = {}
    everyone = 0.0
    for rank in sorted(tree.glob("rank_*_ascend_pt")):
        computing = sum(float(r["Computing"]) for r in _csv(rank / OUT / "step_trace_time.csv"))
        everyone += computing
        table = rank / OUT / "op_statistic.csv"
        if table.exists():
            own[rank.name] = sum(float(r["Total Time(us)"]) for r in _csv(table)) / computing
    coverage = {r.rank: r.op_coverage for r in report.scope.ranks}
    assert sorted(v for v in coverage.values() if v is not None) == pytest.approx(
        sorted(own.values())
    )
    assert sum(v is None for v in coverage.values()) == 2
    assert report.summary.op_coverage == pytest.approx(1.0, abs=1e-6)
    job_wide = (report.summary.op_total_seconds or 0) * 1e6 / everyone
    assert job_wide < 0.6  # a job-wide figure: half the compute has no operator table
    s = report.summary
    assert s.not_judged == ()
    assert {"communication", "pipeline_imbalance", "small_packets"} <= {
        b.kind for b in s.bottlenecks
    }


def test_legacy_tables_cover_the_iterations_they_name() -> None:
    """SYNTHETIC legacy export: op_statistic_0_6_{3,4} are read (iterations past warm-up), so
    their time is set against FP->BP of iterations 3 and 4, not of all 8."""
    summary_dir = next(TREES.glob("synthetic_tf_legacy/PROF_*/device_0/summary"))
    op_us = sum(
        float(r["Total Time(us)"])
        for i in (3, 4)
        for r in _csv(summary_dir / f"op_statistic_0_6_{i}.csv")
    )
    fp_bp = {
        int(r["Iteration ID"]): float(r["FP to BP Time(us)"])
        for r in _csv(summary_dir / "step_trace_0_6_1.csv")
    }
    s = analyze_path(TREES / "synthetic_tf_legacy").summary
    assert s.op_coverage == pytest.approx(op_us / (fp_bp[3] + fp_bp[4]))
    assert "compute_bound" in {b.kind for b in s.bottlenecks} and s.not_judged == ()


@pytest.mark.parametrize("tree", sorted(p.name for p in TREES.iterdir()))
def test_only_mindspore22_run1_withholds_in_the_corpus(tree: str) -> None:
    try:
        s = analyze_path(TREES / tree).summary
    except NoProfileData:
        return  # prof_not_exported: nothing to judge
    assert bool(s.not_judged) == (tree == "mindspore22_run1")
    if s.op_coverage is not None and tree != "mindspore22_run1":
        assert s.op_coverage >= Thresholds().op_coverage_ratio


def _matmul(op_us: float, compute_us: float = 100.0) -> Evidence:
    """Conv/MatMul at 90 % of operator time, the device free 30 % of the step."""
    return Evidence(
        conv_matmul_ratio=0.9,
        small_ops_ratio=0.9,
        phase_ratios={"free": 0.3},
        op_coverage=(OpCoverage("rank0", op_us, compute_us, 4),),
    )


def test_at_the_threshold_the_operator_table_is_judged() -> None:
    t = Thresholds(op_coverage_ratio=0.25)
    at = {b.kind for b in diagnose(_matmul(25.0), t)}
    assert {"compute_bound", "small_ops", "host_bound"} <= at
    assert withheld(_matmul(25.0), t) == ()
    below = {b.kind for b in diagnose(_matmul(24.9), t)}
    assert below == {"host_bound"}  # a rule on the step table still judges
    (reason,) = {n.reason for n in withheld(_matmul(24.9), t)}
    assert {n.kind for n in withheld(_matmul(24.9), t)} == OPERATOR_RULES
    assert reason == (
        "the operator table covers 24.9% of compute (rank0: 0.025 ms of operators against 0.100 "
        "ms of computing in 4 step(s), 24.9%; threshold 25%): operator findings withheld"
    )
    assert {b.kind for b in diagnose(_matmul(24.9), Thresholds(op_coverage_ratio=0.2))} == at


def test_without_a_coverage_figure_the_rules_judge_as_before() -> None:
    """No rank with both an operator and a step table: nothing to say the table misses."""
    evidence = Evidence(conv_matmul_ratio=0.9, small_ops_ratio=0.9)
    assert withheld(evidence) == ()
    assert {b.kind for b in diagnose(evidence)} == {"compute_bound", "small_ops"}


def test_coverage_is_summed_over_the_ranks_and_names_the_lowest() -> None:
    ranks = tuple(OpCoverage(f"rank{i}", float(i), 100.0, 1) for i in range(6))
    (reason,) = {n.reason for n in withheld(Evidence(op_coverage=ranks))}
    assert reason.startswith("the operator table covers 2.5% of compute (rank0: 0.000 ms")
    assert "rank3" in reason and "rank4" not in reason and "3.0% and 2 more rank(s);" in reason
    # one full table among empty ones: the merged table holds the full one's operators
    mixed = ranks[:1] + (OpCoverage("rank9", 500.0, 100.0, 1),)
    assert withheld(Evidence(op_coverage=mixed)) == ()
