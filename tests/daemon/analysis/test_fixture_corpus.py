"""Every file in tests/fixtures/msprof is either read by a reader test or not analysed by design,
and the ones npumon does not analyse are refused cleanly, never with a traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from analysis_helpers import FIXTURES

from npumon.daemon.analysis.analysis import NoProfileData, analyze_path

READ_BY_TESTS = (  # the globs/lists test_prof_readers.py parametrizes over
    "kernel_details_*.csv",
    "op_summary_*.csv",
    "op_statistic_*.csv",
    "step_trace_time_*.csv",
    "cluster_step_trace_time_msprof_analyze.csv",
    "profiler_info_torchnpu_cann8.3rc1.json",
    "prof_dir_end_info.json",
    "trace_view_mstt_advisor_2024-01_adam.json",  # test_affinity_api.py, as a unit's timeline
)
NOT_ANALYSED = {
    # host-side API statistics and timeline: read (host.py) only beside the device tables of a
    # unit, for on-line compilation and the data loader; whole ones are in trees/text_level1
    "api_statistic_torchnpu_cann8.3rc1.csv": "host API statistics",
    "trace_view_torchnpu_2025-01_level1_excerpt.jsonl": "timeline excerpt",
    # capture metadata of other generations / PROF dir bookkeeping: only end times are used
    "profiler_info_torchnpu_2025-01.json": "capture metadata",
    "profiler_metadata_torchnpu_cann8.3rc1.json": "parallel-group metadata",
    "prof_dir_info.json": "PROF dir bookkeeping",
    "prof_dir_sample.json": "PROF dir bookkeeping",
    "prof_dir_start_info.json": "PROF dir bookkeeping",
    "SOURCES.md": "provenance",
    "trees": "whole exports (directory trees), analysed in test_real_profiles.py",
}


def test_every_fixture_is_accounted_for() -> None:
    covered = {p.name for pattern in READ_BY_TESTS for p in FIXTURES.glob(pattern)}
    everything = {p.name for p in FIXTURES.iterdir()}
    assert everything - covered == set(NOT_ANALYSED)
    sources = (FIXTURES / "SOURCES.md").read_text()
    assert all(name in sources for name in everything - {"SOURCES.md"})


@pytest.mark.parametrize("name", sorted(set(NOT_ANALYSED) - {"SOURCES.md", "trees"}))
def test_files_npumon_does_not_analyse_are_refused_cleanly(name: str, tmp_path: Path) -> None:
    output = tmp_path / "job_1_20250101_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    output.mkdir(parents=True)
    shutil.copyfile(FIXTURES / name, output / name)
    with pytest.raises(NoProfileData):
        analyze_path(tmp_path)
