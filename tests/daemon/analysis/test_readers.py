"""Readers against every real msprof / torch_npu table, expected values read with csv."""

from __future__ import annotations

from pathlib import Path

import pytest
from analysis_helpers import FIXTURES, column, number, rows

from npumon.daemon.analysis.readers.tables import (
    TableError,
    read_kernel_names,
    read_kernels,
    read_op_statistic,
)

KERNEL_TABLES = sorted(p.name for p in FIXTURES.glob("kernel_details_*.csv")) + [
    "op_summary_msinsight_test_kernel_parse.csv",
    "op_summary_old_style_mskpp_test_line.csv",
]
DURATION = ("Duration(us)", "Task Duration(us)")


@pytest.mark.parametrize("name", KERNEL_TABLES)
def test_kernel_tables_rows_and_durations(name: str) -> None:
    frame = read_kernels([FIXTURES / name]).frame
    expected = [number(c) for c in column(name, *DURATION)]
    assert len(frame) == len(expected)
    assert frame["duration_us"].sum() == pytest.approx(sum(v for v in expected if v is not None))
    header, _ = rows(name)
    types = column(name, "Type", "OP Type")
    if any(t not in (None, "N/A") for t in types):
        got = frame["op_type"].astype("object").where(frame["op_type"].notna(), None).tolist()
        assert got == [None if t == "N/A" else t for t in types]


def test_header_aliases_old_style_op_summary() -> None:
    """`Task Start Time` without unit, `Op Name`/`OP Type`/`Task Type`, `Block Dim`."""
    frame = read_kernels([FIXTURES / "op_summary_old_style_mskpp_test_line.csv"]).frame
    assert frame["duration_us"].tolist() == [82.11]  # read off the file
    assert frame["op_type"].tolist() == ["add_custom"]
    assert frame["core_type"].tolist() == ["AI_CORE"]


def test_ragged_row_is_kept_with_missing_cells_absent() -> None:
    name = "kernel_details_torchnpu_2023-09_memoryl0.csv"
    header, body = rows(name)
    short = [r for r in body if len(r) < len(header)]
    assert len(short) == 1 and short[0][4] == "FlashAttentionScore"
    assert len(read_kernels([FIXTURES / name]).frame) == len(body)


def test_quoted_start_time_with_tab_and_no_final_newline() -> None:
    name = "kernel_details_mstt_advisor_2025-01_pipeutil.csv"
    assert not (FIXTURES / name).read_bytes().endswith(b"\n")
    table = read_kernels([FIXTURES / name])
    assert len(table.frame) == len(rows(name)[1])  # last row complete: kept
    assert table.notes == ()
    assert (table.frame["op_state"] == "dynamic").all()


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("op_statistic_*.csv")))
def test_op_statistic(name: str) -> None:
    frame = read_op_statistic([FIXTURES / name]).frame
    assert frame["op_type"].astype("object").tolist() == column(name, "OP Type")
    assert frame["total_us"].tolist() == [float(c or "") for c in column(name, "Total Time(us)")]
    assert frame["count"].sum() == sum(int(c or "") for c in column(name, "Count"))


def test_level0_tables_have_no_op_types_but_names() -> None:
    name = "kernel_details_torchnpu_2025-01_level0.csv"
    frame = read_kernels([FIXTURES / name]).frame
    assert frame["op_type"].isna().all()
    names = read_kernel_names([FIXTURES / name]).frame["name"].tolist()
    assert names == column(name, "Name")


def test_half_written_files(tmp_path: Path) -> None:
    empty = tmp_path / "kernel_details.csv"
    empty.write_bytes(b"")
    with pytest.raises(TableError, match=r"kernel_details\.csv: the file is empty"):
        read_kernels([empty])
    headless = tmp_path / "op_statistic.csv"
    headless.write_text("0,MatMulV3,AI_CORE,280,48000.78\n")
    with pytest.raises(TableError, match=r"op_statistic\.csv: no header row with OP Type"):
        read_op_statistic([headless])
    cut = tmp_path / "cut.csv"
    source = (FIXTURES / "kernel_details_torchnpu_cann8.3rc1_level2.csv").read_bytes()
    cut.write_bytes(source[: source.rindex(b"\n", 0, len(source) - 1) + 60])
    table = read_kernels([cut])
    assert len(table.frame) == len(rows("kernel_details_torchnpu_cann8.3rc1_level2.csv")[1]) - 1
    assert "cut.csv: last line incomplete" in table.notes[0]


def test_ranges_read_in_parallel_from_one_descriptor_equal_one_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from npumon.daemon.analysis.readers import chunks

    path = FIXTURES / KERNEL_TABLES[0]
    whole = read_kernels([path]).frame
    monkeypatch.setattr(chunks, "PARALLEL_MIN_BYTES", 0)  # forked readers, pread at offsets
    monkeypatch.setattr(chunks.os, "cpu_count", lambda: 4)
    parts = read_kernels([path]).frame
    assert parts["duration_us"].tolist() == whole["duration_us"].tolist()
