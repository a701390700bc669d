"""Profile units found on disk and their capture end time, read off the metadata files."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
from analysis_helpers import FIXTURES

from npumon.daemon.analysis import confine, layout
from npumon.daemon.analysis.readers import TableError, read_op_statistic


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


def test_metadata_is_read_inside_the_unit_only(tmp_path: Path) -> None:
    unit, outside = tmp_path / "node_1_ascend_pt", tmp_path / "secret.json"
    unit.mkdir()
    outside.write_text('{"ENV_VARIABLES": {"ASCEND_GLOBAL_LOG_LEVEL": "0"}}')
    assert layout.metadata(unit) is None  # absent
    (unit / layout.METADATA).symlink_to(outside)
    assert layout.metadata(unit) is None  # a symlink out of the unit is not followed
    (unit / layout.METADATA).unlink()
    (unit / layout.METADATA).write_text('# a comment line\n{"parallel_group_info": {}}')
    assert layout.metadata(unit) == {"parallel_group_info": {}}


def _swap_after_finding(tmp_path: Path, swap_dir: bool) -> tuple[layout.ProfileUnit, str]:
    """A torch_npu unit whose op_statistic.csv (or its folder) becomes a symlink to a secret
    table once the unit was found: what a job can do between the check and the read."""
    real = (FIXTURES / "op_statistic_torchnpu_cann8.3rc1.csv").read_text()
    secret = tmp_path / "root-only"
    secret.mkdir(mode=0o700)
    (secret / "op_statistic.csv").write_text(real.replace("FlashAttentionScoreGrad", "TOPSECRET"))
    (secret / "op_statistic.csv").chmod(0o600)
    out = tmp_path / "job" / "node_1_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "op_statistic.csv").write_text(real)
    (unit,) = layout.find_units(tmp_path / "job")
    if swap_dir:
        moved = out.with_name("moved")
        out.rename(moved)
        out.symlink_to(secret)
    else:
        (out / "op_statistic.csv").unlink()
        (out / "op_statistic.csv").symlink_to(secret / "op_statistic.csv")
    return unit, "TOPSECRET"


@pytest.mark.parametrize("swap_dir", [False, True])
def test_a_table_swapped_for_a_symlink_after_the_check_is_not_read(
    tmp_path: Path, swap_dir: bool
) -> None:
    unit, secret = _swap_after_finding(tmp_path, swap_dir)
    with pytest.raises(TableError, match="symlink"):
        frame = read_op_statistic(unit.tables[layout.OP_STATISTIC]).frame
        assert secret not in set(frame["op_type"].astype(str))  # never reached: raised


def test_the_analysis_root_swapped_for_a_symlink_is_not_read_below_a_trusted_root(
    tmp_path: Path,
) -> None:
    # The ingest path is the admin's; the job's folder under it is the job's: a profile
    # folder swapped for a link to a root-only one after it was found is not read.
    real = (FIXTURES / "op_statistic_torchnpu_cann8.3rc1.csv").read_text()
    hidden = tmp_path / "root-only" / "node_1_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    hidden.mkdir(parents=True)
    (hidden / "op_statistic.csv").write_text(real.replace("FlashAttentionScoreGrad", "TOPSECRET"))
    profile = tmp_path / "job" / "node_1_ascend_pt"
    profile.parent.mkdir()
    profile.symlink_to(hidden.parent)
    confine.add_root(tmp_path)  # what the worker is told: the ingest path above the job
    try:
        (found,) = layout.find_units(profile)
        with pytest.raises(TableError, match="symlink"):
            read_op_statistic(found.tables[layout.OP_STATISTIC])
    finally:
        confine.forget_roots()
