"""analyze_path over the three layouts, the 4-rank sample, graph step trace, and the CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from analysis_helpers import FIXTURES, column, four_rank_tree, rows, torch_tree

from npumon.daemon.analysis.analysis import NoProfileData, analyze_path
from npumon.daemon.analysis.report import format_report
from npumon.daemon.model.profile import Thresholds

OP_SUMMARY = "op_summary_msinsight_test_kernel_parse.csv"


def test_four_rank_breakdown_agrees_with_files(tmp_path: Path) -> None:
    report = analyze_path(four_rank_tree(tmp_path))
    summary = report.summary
    assert [r.rank for r in summary.ranks] == ["rank0", "rank1", "rank2", "rank3"]
    text = format_report(report)
    for rank in summary.ranks:
        header, body = rows(f"step_trace_time_torchnpu_cann8.3rc1_{rank.rank}.csv")
        cell = dict(zip(header, body[0], strict=True))
        parts = [float(cell[k]) for k in ("Computing", "Communication(Not Overlapped)", "Free")]
        assert rank.step_seconds == pytest.approx(sum(parts) / 1e6)
        assert rank.step_seconds == pytest.approx(float(cell["Stage"]) / 1e6, rel=1e-6)
        phases = {p.phase: p.seconds for p in rank.phases}
        assert phases["computing"] == pytest.approx(parts[0] / 1e6)
        assert phases["communication"] == pytest.approx(parts[1] / 1e6)
        assert rank.device_id == int(cell["Device_id"])
        line = next(ln for ln in text.splitlines() if ln.strip().startswith(rank.rank))
        assert f"{parts[0] / 1e3:.3f}" in line and f"{sum(parts) / 1e3:.3f}" in line
    # computing differs by ~170 ms across ranks (PP stages): flagged above 5 %
    spread = {s.phase: s for s in summary.rank_spread}
    assert spread["computing"].flagged and spread["computing"].slowest_rank == "rank3"
    assert "communication" in {b.kind for b in summary.bottlenecks}


def test_four_rank_top_operators_are_op_statistic(tmp_path: Path) -> None:
    summary = analyze_path(four_rank_tree(tmp_path)).summary
    name = "op_statistic_torchnpu_cann8.3rc1.csv"
    types, totals = (
        column(name, "OP Type"),
        [float(t or "") for t in column(name, "Total Time(us)")],
    )
    ranked = sorted(zip(types, totals, strict=True), key=lambda x: -x[1])
    shares = summary.op_time_ratio
    assert [o.op_type for o in shares[:10]] == [t for t, _ in ranked[:10]]
    assert shares[0].ratio == pytest.approx(ranked[0][1] / sum(totals))
    assert shares[-1].op_type == "other"
    assert shares[-1].seconds == pytest.approx(sum(t for _, t in ranked[10:]) / 1e6)
    assert summary.op_total_seconds == pytest.approx(sum(totals) / 1e6)
    # kernel_details of rank 0: every row says OP State dynamic, no AI_CPU
    assert summary.dynamic_shape_op_count == len(
        rows("kernel_details_torchnpu_cann8.3rc1_level2.csv")[1]
    )
    assert summary.ai_cpu_count == 0
    text = format_report(analyze_path(tmp_path))
    assert "FlashAttentionScoreGrad" in text and "advice:" in text


def test_msprof_slices_concatenate_in_slice_order(tmp_path: Path) -> None:
    out = tmp_path / "PROF_000001_20230919172304123_ABCDEFGHIJKLMNOP" / "mindstudio_profiler_output"
    out.mkdir(parents=True)
    header, body = rows(OP_SUMMARY)
    text = (FIXTURES / OP_SUMMARY).read_text().splitlines(keepends=True)
    # slice 1 carries the older timestamp, as real slices may: order must follow the index
    (out / "op_summary_slice_0_20230919172305.csv").write_text("".join(text[:11]))
    (out / "op_summary_slice_1_20230919172304.csv").write_text(text[0] + "".join(text[11:]))
    summary = analyze_path(tmp_path).summary
    assert summary.layout == "msprof"
    # HCCL tasks are communication, never operator time: their own family, by collective
    compute = [float(r[8]) for r in body if len(r) > 8 and r[6] != "HCCL"]
    assert summary.op_total_seconds == pytest.approx(sum(compute) / 1e6)
    hccl = sum(float(r[8]) for r in body if r[6] == "HCCL")
    assert hccl > 0
    assert sum(c.seconds for c in summary.communication) == pytest.approx(hccl / 1e6)
    cores = {c.core_type: c.seconds for c in summary.core_type_time_ratio}
    assert "communication" not in cores
    assert sum(cores.values()) == pytest.approx(sum(compute) / 1e6)


def test_legacy_layout(tmp_path: Path) -> None:
    summary_dir = (
        tmp_path / "PROF_000001_20220729204439087_FMDBBBNDOAKFEOIA" / "device_0" / "summary"
    )
    summary_dir.mkdir(parents=True)
    shutil.copyfile(FIXTURES / OP_SUMMARY, summary_dir / "op_summary_0_1_1.csv")
    shutil.copyfile(
        FIXTURES / "op_summary_old_style_mskpp_test_line.csv", summary_dir / "op_summary_0_1_2.csv"
    )
    summary = analyze_path(tmp_path).summary
    assert summary.layout == "legacy"
    total = sum(float(r[8]) for r in rows(OP_SUMMARY)[1] if r[6] != "HCCL") + 82.11
    assert summary.op_total_seconds == pytest.approx(total / 1e6)
    # AI_CPU Cast rows of >= 20 us in the fixture: 72.1612 and 72.8611
    assert summary.ai_cpu_count == 2
    assert summary.ai_cpu_seconds == pytest.approx((72.1612 + 72.8611) / 1e6)


GRAPH_HEADER = (
    "Device_id,Iteration ID,FP Start(us),BP End(us),Iteration End(us),Iteration Time(us),"
    "FP to BP Time(us),Grad Refresh Bound(us),Data Aug Bound(us),Model ID,"
    "Reduce Start(us),Reduce Duration(us),Reduce Start(us),Reduce Duration(us)\n"
)


def _graph_row(iteration: int, model: int, time_us: float, aug: str) -> str:
    return (
        f"0,{iteration},1.0\t,2.0\t,3.0\t,{time_us}\t,300.0\t,900.0\t,{aug}\t,{model},"
        "5.0\t,6.0\t,7.0\t,8.0\t\n"
    )


def test_graph_step_trace_model_choice_and_warmup(tmp_path: Path) -> None:
    out = tmp_path / "PROF_000001_20230919172304123_ABCDEFGHIJKLMNOP" / "mindstudio_profiler_output"
    out.mkdir(parents=True)
    lines = [GRAPH_HEADER, _graph_row(1, 6, 3790000.0, "N/A"), _graph_row(2, 6, 2000.0, "300.0")]
    lines += [_graph_row(i, 6, 1000.0 + 100 * i, "250.0") for i in range(3, 8)]
    lines += [_graph_row(i, 9, 99.0, "1.0") for i in range(1, 4)]  # fewer iterations: ignored
    (out / "step_trace_20230919172305.csv").write_text("".join(lines))
    summary = analyze_path(tmp_path).summary
    # iterations 1-2 are warm-up (default 2); 3..7 -> 1300..1700 us
    assert summary.step is not None and summary.step.count == 5
    assert summary.step.mean_seconds == pytest.approx(1500e-6)
    assert summary.step.p50_seconds == pytest.approx(1500e-6)
    assert summary.step.p90_seconds == pytest.approx(1660e-6)  # 1600 + 0.6 * 100
    assert summary.step.p99_seconds == pytest.approx(1696e-6)
    phases = {p.phase: p for p in summary.phases}
    assert phases["iteration_refresh"].seconds == pytest.approx(900e-6)
    assert phases["data_aug"].ratio == pytest.approx(250 / 1500)
    assert phases["fp_bp"].seconds == pytest.approx(300e-6)
    keep_all = analyze_path(tmp_path, Thresholds(warmup_steps=0)).summary
    assert keep_all.step is not None and keep_all.step.count == 7


def test_level0_kernel_details_infers_types(tmp_path: Path) -> None:
    torch_tree(tmp_path, 0, kernel_details="kernel_details_torchnpu_2025-01_level0.csv")
    summary = analyze_path(tmp_path).summary
    assert summary.op_types_inferred
    names, durations = (
        column("kernel_details_torchnpu_2025-01_level0.csv", "Name"),
        column("kernel_details_torchnpu_2025-01_level0.csv", "Duration(us)"),
    )
    trans = sum(
        float(d or "") for n, d in zip(names, durations, strict=True) if "TransData" in (n or "")
    )
    assert summary.format_conversion_seconds == pytest.approx(trans / 1e6)
    assert summary.dynamic_shape_op_count is None  # no OP State column: unknown, not 0


def test_half_written_file_does_not_stop_the_rest(tmp_path: Path) -> None:
    out = torch_tree(tmp_path, 0, step_trace_time="step_trace_time_torchnpu_2025-01_level1.csv")
    (out / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").write_bytes(b"")
    report = analyze_path(tmp_path)
    assert report.summary.step is not None
    assert any("kernel_details.csv: the file is empty" in p for p in report.problems)


def test_unreadable_only_table_is_exit_2(tmp_path: Path) -> None:
    out = torch_tree(tmp_path, 0, step_trace_time="step_trace_time_torchnpu_2023-09.csv")
    (out / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv").write_text("garbage\n")
    with pytest.raises(NoProfileData, match="no header row with Computing"):
        analyze_path(tmp_path)
