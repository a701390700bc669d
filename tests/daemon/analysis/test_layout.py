"""Profile units found on disk and their capture end time, read off the metadata files."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
from analysis_helpers import FIXTURES

from npumon.daemon.analysis.readers import confine, layout
from npumon.daemon.analysis.readers.tables import TableError, read_op_statistic


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


def _torch_run(parent: Path, name: str) -> Path:
    run = parent / name
    (run / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    (run / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv").write_text("Step\n")
    return run


def _msprof_run(parent: Path, name: str, *devices: int) -> Path:
    prof = parent / name
    (prof / "mindstudio_profiler_output").mkdir(parents=True)
    (prof / "mindstudio_profiler_output" / "op_statistic_20261202014034.csv").write_text("x\n")
    for device in devices:
        (prof / f"device_{device}").mkdir()
    return prof


def test_a_unit_is_named_by_rank_or_device_never_by_its_folder(tmp_path: Path) -> None:
    """Unit names become the rank label: profiler_info_<rank>, the metadata's rank, the device
    of the CANN data inside, else a slot by order; host, PID and time never show."""
    by_info = _torch_run(tmp_path / "a", "vm_101_20261202014048970_ascend_pt")
    (by_info / "profiler_info_3.json").write_text("{}")
    by_meta = _torch_run(tmp_path / "b", "vm_102_20261202014048970_ascend_pt")
    (by_meta / "profiler_info.json").write_text("{}")
    (by_meta / layout.METADATA).write_text('{"distributed_args": {"rank": 5, "world_size": 8}}')
    by_device = _torch_run(tmp_path / "c", "vm_103_20261202014048970_ascend_pt")
    (by_device / "PROF_000001_20261202014034999_NFDAJFXFBBYCKKQP" / "device_6").mkdir(parents=True)
    _torch_run(tmp_path / "d", "vm_104_20261202014048970_ascend_pt")
    _torch_run(tmp_path / "d", "vm_105_20261202014048970_ascend_pt")
    _msprof_run(tmp_path / "e", "PROF_000001_20261202014034999_NFDAJFXFBBYCKKQP", 2)
    _msprof_run(tmp_path / "e", "PROF_000002_20261202014035999_ABCDEFGHIJKLMNOP", 2)
    _msprof_run(tmp_path / "f", "PROF_000003_20261202014036999_QRSTUVWXYZABCDEF", 0, 1)
    names = {d: [u.name for u in layout.find_units(tmp_path / d)] for d in "abcdef"}
    assert names == {
        "a": ["rank3"],
        "b": ["rank5"],
        "c": ["device6"],
        "d": ["slot0", "slot1"],  # nothing names them: one slot per process, by order
        "e": ["device2", "device2.1"],  # two processes on one device
        "f": ["slot0"],  # several devices: analysis splits it by device
    }


def test_the_environment_of_the_captured_process_names_its_rank(tmp_path: Path) -> None:
    """A profile that names no rank takes its process's RANK / LOCAL_RANK (pid -> rank from the
    daemon), found by the pid the profile records: torch_npu's folder name, msprof's info.json."""
    _torch_run(tmp_path / "a", "vm_4242_20261202014048970_ascend_pt")
    prof = _msprof_run(tmp_path / "b", "PROF_000001_20261202014034999_NFDAJFXFBBYCKKQP", 2)
    (prof / "device_2" / "data").mkdir()
    (prof / "device_2" / "data" / "info.json.2").write_text('{"devices": "2", "pid": "4343"}')
    ranks = {4242: 7, 4343: 12}
    assert [u.name for u in layout.find_units(tmp_path / "a", ranks)] == ["rank7"]
    assert [u.name for u in layout.find_units(tmp_path / "b", ranks)] == ["rank12"]
    assert [u.name for u in layout.find_units(tmp_path / "b", {1: 3})] == ["device2"]


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
