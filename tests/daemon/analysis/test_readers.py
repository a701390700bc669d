"""Readers against every real msprof / torch_npu table, expected values read with csv."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
from prof_helpers import FIXTURES, column, number, rows

from npumon.daemon.analysis import layout
from npumon.daemon.analysis.ops import infer_op_type
from npumon.daemon.analysis.readers import (
    TableError,
    read_kernel_names,
    read_kernels,
    read_op_statistic,
)
from npumon.daemon.analysis.steps import read_torch_steps

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


def test_level0_types_are_inferred_from_names() -> None:
    name = "kernel_details_torchnpu_2025-01_level0.csv"
    frame = read_kernels([FIXTURES / name]).frame
    assert frame["op_type"].isna().all()
    names = read_kernel_names([FIXTURES / name]).frame["name"].tolist()
    assert names == column(name, "Name")
    assert infer_op_type("trans_TransData_0") == "TransData"
    assert infer_op_type("aclnnInplaceRelu_Relu_Relu") == "Relu"
    assert infer_op_type("Conv2D1") == "Conv2D"
    assert infer_op_type("Cast16") == "Cast"
    assert (
        infer_op_type("StatelessDropOutGenMask/DSASTATELESSGENBITMASK") == "StatelessDropOutGenMask"
    )


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("op_statistic_*.csv")))
def test_op_statistic(name: str) -> None:
    frame = read_op_statistic([FIXTURES / name]).frame
    assert frame["op_type"].astype("object").tolist() == column(name, "OP Type")
    assert frame["total_us"].tolist() == [float(c or "") for c in column(name, "Total Time(us)")]
    assert frame["count"].sum() == sum(int(c or "") for c in column(name, "Count"))


STEP_TABLES = sorted(p.name for p in FIXTURES.glob("step_trace_time_*.csv")) + [
    "cluster_step_trace_time_msprof_analyze.csv"
]


@pytest.mark.parametrize("name", STEP_TABLES)
def test_step_trace_time(name: str) -> None:
    steps = read_torch_steps(FIXTURES / name, [])
    header, body = rows(name)
    assert len(steps) == len(body)
    for step, row in zip(steps, body, strict=True):
        cell = dict(zip(header, row, strict=True))
        assert step.computing_us == float(cell["Computing"])
        assert step.communication_us == float(cell["Communication(Not Overlapped)"])
        assert step.free_us == float(cell["Free"])
        assert step.preparing_us == number(cell.get("Preparing"))
        assert step.device_id == (int(cell["Device_id"]) if "Device_id" in cell else None)
        assert step.step == (int(cell["Step"]) if cell["Step"] else None)


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


def test_capture_time_from_metadata(tmp_path: Path) -> None:
    pt = tmp_path / "host_1_20251127_ascend_pt"
    (pt / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    shutil.copyfile(
        FIXTURES / "step_trace_time_torchnpu_cann8.3rc1_rank0.csv",
        pt / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv",
    )
    shutil.copyfile(
        FIXTURES / "profiler_info_torchnpu_cann8.3rc1.json", pt / "profiler_info_0.json"
    )
    prof = tmp_path / "PROF_000001_20220729204439087_FMDBBBNDOAKFEOIA"
    (prof / "mindstudio_profiler_output").mkdir(parents=True)
    (prof / "device_2").mkdir()
    shutil.copyfile(FIXTURES / "prof_dir_end_info.json", prof / "device_2" / "end_info")
    shutil.copyfile(
        FIXTURES / "op_statistic_torchnpu_cann8.3rc1.csv",
        prof / "mindstudio_profiler_output" / "op_statistic_20220729211650.csv",
    )
    units = {u.layout: u for u in layout.find_units(tmp_path)}
    # collectionTimeEnd 1764246878131995320 ns; 1659100610422400 us (read off the files)
    assert math.isclose(units["torch_npu"].capture_end_seconds or 0, 1764246878.131995)
    assert units["torch_npu"].name == "rank0"
    assert math.isclose(units["msprof"].capture_end_seconds or 0, 1659100610.4224)


def test_importing_the_package_does_not_import_pandas() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import npumon.daemon.analysis.report, npumon.daemon.analysis.analysis\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr
