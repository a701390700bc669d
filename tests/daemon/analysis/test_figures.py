"""Figures that add up and say what they sum, on the real profiles under tests/fixtures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from analysis_helpers import FIXTURES

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.analysis.figures import distinct_links, partition, percentiles
from npumon.daemon.analysis.report import format_report
from npumon.daemon.model.profile import LinkStat, PhaseStat, StepStats

TREES = FIXTURES / "trees"
STEPPED = sorted(
    p.name for p in TREES.iterdir() if p.is_dir() and p.name != "prof_not_exported"
)  # every tree with a step table


@pytest.mark.parametrize("tree", STEPPED)
def test_phases_partition_the_step(tree: str) -> None:
    """The workload's phases and every rank's add up to its step within 1 %."""
    report = analyze_path(TREES / tree)
    s = report.summary
    assert s.step is not None
    assert sum(v for _, v in partition(s.phases, s.step.mean_seconds)) == pytest.approx(
        s.step.mean_seconds, rel=0.01
    )
    for rank in s.ranks:
        parts = partition(rank.phases, rank.step_seconds)
        assert sum(v for _, v in parts) == pytest.approx(rank.step_seconds, rel=0.01)
        assert all(v >= 0 for _, v in parts)
    # the printed line: its percentages add up to 100 within rounding
    line = next(ln for ln in format_report(report).splitlines() if ln.startswith("  = "))
    shares = [float(x) for x in re.findall(r"\(([\d.]+)%\)", line)]
    assert sum(shares) == pytest.approx(100.0, abs=0.3)


def test_preparing_is_printed_inside_free() -> None:
    """text_level1 rank0: Free 25.744 ms of which Preparing 17.902 ms; the step is 136.581 ms,
    and the lines no longer sum to 113 %."""
    text = format_report(analyze_path(TREES / "text_level1"))
    assert "free: preparing 17.902 ms (13.1%) + free: other 7.842 ms (5.7%)" in text


@pytest.mark.parametrize("tree", ["text_level1", "pp2dp2_level2", "text_level0"])
def test_every_multi_rank_figure_names_its_ranks(tree: str) -> None:
    report = analyze_path(TREES / tree)
    s = report.summary
    assert len(s.ranks) > 1
    lines = format_report(report).splitlines()
    step = next(ln for ln in lines if ln.startswith("Step time"))
    assert f"({report.scope.step_rank}, the slowest of {len(s.ranks)} ranks)" in step
    slowest = max(s.ranks, key=lambda r: r.step_seconds)
    assert report.scope.step_rank == slowest.rank
    assert s.step is not None and s.step.mean_seconds == slowest.step_seconds
    cross = [
        ln
        for ln in lines
        if ln.startswith(("Top operators", "Communication tasks"))
        or "communication.json," in ln
        or "bandwidth by link type" in ln
    ]
    assert cross
    for line in cross:
        named = re.search(r"ranks ([\w, ]+) \(summed\)", line) or re.search(r", (rank\d+) ", line)
        assert named, line


def test_pp2dp2_operators_are_ranks_0_and_2() -> None:
    """Qwen3 PP2 DP2: only ranks 0 and 2 have op_statistic.csv; the 631.738 ms are theirs
    summed, and each rank's own total is beside it."""
    report = analyze_path(TREES / "pp2dp2_level2")
    assert report.scope.op_ranks == ("rank0", "rank2")
    assert report.scope.comm_ranks == ("rank0", "rank1", "rank2", "rank3")
    own = {r.rank: r.op_total_seconds for r in report.scope.ranks}
    assert own["rank1"] is None and own["rank3"] is None
    assert (own["rank0"] or 0) + (own["rank2"] or 0) == pytest.approx(
        report.summary.op_total_seconds or 0
    )
    text = format_report(report)
    assert "Top operators by time, ranks rank0, rank2 (summed) over the whole capture" in text
    assert "per rank: rank0 231.290 ms" in text
    assert (
        "Diagnosis (step and phase figures: rank3, the slowest rank; operator figures: ranks "
        "rank0, rank2 (summed)):" in text
    )


def test_rank_steps_carry_what_the_statistics_counted() -> None:
    """The synthetic partial last step: 10 steps captured, warm-up 1-2 and the partial step
    10 not counted, 7 counted: the step statistics' count."""
    report = analyze_path(TREES / "synthetic_partial_last_step")
    (rank,) = report.scope.ranks
    assert [p.step for p in rank.steps] == list(range(1, 11))
    assert [p.step for p in rank.steps if p.counted] == list(range(3, 10))
    assert report.summary.step is not None and report.summary.step.count == 7


def test_percentiles_need_their_steps() -> None:
    few = StepStats(9, 1.0, 1.0, 1.1, 1.2)
    assert percentiles(few) == ((50, 1.0), (90, None), (99, None))
    many = StepStats(320, 1.0, 1.0, 1.1, 1.2)
    assert percentiles(many) == ((50, 1.0), (90, 1.1), (99, 1.2))
    text = format_report(analyze_path(TREES / "mindspore22_run1"))  # 320 steps
    assert re.search(r"p90 [\d.]+  p99 [\d.]+", text)


def test_sdma_is_not_counted_again() -> None:
    """communication.json's SDMA entry is HCCS + PCIE + SIO: listed once."""
    hccs = LinkStat("HCCS", 1e9, 0.05, 2e10)
    sdma = LinkStat("SDMA", 1e9, 0.05, 2e10)
    rdma = LinkStat("RDMA", 1e8, 0.01, 1e10)
    assert distinct_links((hccs, rdma, sdma)) == (hccs, rdma)
    assert distinct_links((sdma,)) == (sdma,)  # nothing else names these transfers
    text = format_report(analyze_path(TREES / "text_level1"))
    assert "HCCS" in text and not re.search(r"^\s+SDMA ", text, re.M)


def test_partition_keeps_preparing_inside_free_and_names_the_rest() -> None:
    torch = (
        PhaseStat("computing", 0.5, None),
        PhaseStat("communication", 0.2, None),
        PhaseStat("free", 0.3, None),
        PhaseStat("preparing", 0.4, None),  # more than free: at most all of it
    )
    assert partition(torch, 1.0) == (
        ("computing", 0.5),
        ("communication", 0.2),
        ("preparing", 0.3),
        ("free", 0.0),
    )
    graph = (PhaseStat("fp_bp", 0.6, None), PhaseStat("data_aug", 0.2, None))
    parts = partition(graph, 1.0)
    assert [n for n, _ in parts] == ["fp_bp", "data_aug", "other"]
    assert parts[2][1] == pytest.approx(0.2)


def test_report_scope_survives_json(tmp_path: Path) -> None:
    from npumon.daemon.model.profile import report_adapter

    report = analyze_path(TREES / "pp2dp2_level2")
    again = report_adapter().validate_json(report_adapter().dump_json(report))
    assert again == report
