"""The daemon's Python children (DCMI helper, analysis worker) take no module from the
working directory: a `json.py` planted where root started npumon never runs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from npumon.daemon.model.profile import AnalysisJob, Thresholds
from npumon.daemon.profiling.launch import analyse_in_worker
from npumon.daemon.runner import ProcessGroups
from npumon.daemon.sources.dcmi.client import DcmiHelper
from tests.helpers.fake_dcmi import STATE_ENV, build_fake_dcmi

pytestmark = pytest.mark.integration  # real child processes

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "msprof"
PLANTED = "open({marker!r}, 'w').write('ran')\n"


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory holding json.py, which leaves ``marker`` when imported."""
    cwd, marker = tmp_path / "cwd", tmp_path / "marker"
    cwd.mkdir()
    (cwd / "json.py").write_text(PLANTED.format(marker=str(marker)))
    monkeypatch.chdir(cwd)
    return marker


def test_the_dcmi_helper_takes_no_module_from_the_working_directory(
    tmp_path: Path, planted: Path
) -> None:
    library = build_fake_dcmi(tmp_path / "lib")
    (tmp_path / "state").write_text("version 25.2.2 25.2.2.b001\nchip 0 0 0 0 power=1234\n")
    env = {**os.environ, STATE_ENV: str(tmp_path / "state")}
    helper = DcmiHelper(library, 10.0, env=env, groups=ProcessGroups())
    try:
        assert len(helper.hello().chips) == 1
        assert helper.call([("power", 0, 0, 0)]) == [(0, 1234)]
    finally:
        helper.close()
    assert not planted.exists()


def test_the_analysis_worker_takes_no_module_from_the_working_directory(
    tmp_path: Path, planted: Path
) -> None:
    out = tmp_path / "job" / "node1_1000_2025_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    step_trace = "step_trace_time_torchnpu_cann8.3rc1_rank0.csv"
    shutil.copyfile(FIXTURES / step_trace, out / "step_trace_time.csv")
    job = AnalysisJob(tmp_path / "job", "job", 10, Thresholds())
    outcome = analyse_in_worker(job, 120.0)
    assert outcome.result == "ok", outcome.message
    assert not planted.exists()
