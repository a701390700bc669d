"""Launching the analysis worker: its job on stdin, what each way of ending becomes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from npumon.daemon.model.profile import AnalysisJob, Thresholds, job_adapter
from npumon.daemon.profiling.launch import WORKER_MODULE, analyse_in_worker
from npumon.daemon.runner import CHILD_PYTHON, CommandResult
from tests.helpers.wait import scaled

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "msprof"
JOB = AnalysisJob(Path("/data/prof"), "llama", 3, Thresholds(free_ratio=0.3))


class FakeRunner:
    def __init__(self, result: CommandResult) -> None:
        self.result = result
        self.calls: list[tuple[list[str], float, str | None]] = []

    def __call__(
        self, argv: Sequence[str], timeout: float, *, stdin: str | None = None
    ) -> CommandResult:
        self.calls.append((list(argv), timeout, stdin))
        return self.result


def ended(stdout: str = "", exit_code: int | None = 0, **flags: bool) -> FakeRunner:
    return FakeRunner(
        CommandResult(
            ("python",), stdout, "line 1\nNoProfileData: nothing", exit_code, 0.1, **flags
        )
    )


def test_the_job_goes_on_stdin_by_module_name() -> None:
    runner = ended(exit_code=2)
    analyse_in_worker(JOB, 60.0, runner)
    ((argv, timeout, stdin),) = runner.calls
    assert argv == [sys.executable, "-P", "-m", WORKER_MODULE] and timeout == 60.0
    assert stdin is not None and job_adapter().validate_json(stdin) == JOB


@pytest.mark.integration
def test_a_child_python_imports_from_pythonpath_and_not_from_the_working_directory(
    tmp_path: Path,
) -> None:
    """What the daemon finds installed (analysis_unavailable, in its own Python), its worker can
    import: a package that only PYTHONPATH makes visible (pandas installed with pip --target,
    say) is on the child's path too; a module in the working directory is not."""
    on_path, cwd = tmp_path / "on_path", tmp_path / "cwd"
    on_path.mkdir()
    cwd.mkdir()
    (on_path / "npumon_probe_on_path.py").write_text("")
    (cwd / "npumon_probe_in_cwd.py").write_text("")
    names = ("npumon_probe_on_path", "npumon_probe_in_cwd")
    code = f"import importlib.util as u\nprint(*(u.find_spec(n) is not None for n in {names!r}))"
    found = subprocess.run(
        [*CHILD_PYTHON, "-c", code],
        env={**os.environ, "PYTHONPATH": str(on_path)},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=scaled(60),
        check=True,
    )
    assert found.stdout.split() == ["True", "False"], found.stderr


def test_timeout_failure_and_bad_output() -> None:
    timed_out = analyse_in_worker(JOB, 60.0, ended(exit_code=None, timed_out=True))
    assert (timed_out.report, timed_out.result) == (None, "timeout")
    failed = analyse_in_worker(JOB, 60.0, ended(exit_code=2))
    assert failed.result == "failed" and "NoProfileData: nothing" in failed.message
    garbled = analyse_in_worker(JOB, 60.0, ended('{"summary": 1}'))
    assert garbled.result == "failed" and "not understood" in garbled.message


@pytest.mark.integration
def test_a_real_worker_analyses_a_real_profile(tmp_path: Path) -> None:
    out = tmp_path / "rank_0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    shutil.copyfile(FIXTURES / "op_statistic_torchnpu_cann8.3rc1.csv", out / "op_statistic.csv")
    outcome = analyse_in_worker(AnalysisJob(tmp_path, "qwen3", 3, Thresholds()), 120.0)
    assert outcome.result == "ok", outcome.message
    assert outcome.report is not None and outcome.report.summary.workload == "qwen3"
    assert [o.op_type for o in outcome.report.summary.op_time_ratio][-1] == "other"
    assert len(outcome.report.summary.op_time_ratio) == 4
