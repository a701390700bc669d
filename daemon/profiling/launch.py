"""Start the analysis worker by module name with a deadline; this side never imports pandas."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from npumon.daemon.config import Profiling
from npumon.daemon.model.capture_info import CaptureInfo
from npumon.daemon.model.profile import (
    WORKER_EXIT_TOO_LARGE,
    AnalysisJob,
    AnalysisReport,
    ProfileSummary,
    job_adapter,
    report_adapter,
)
from npumon.daemon.model.rank_hardware import RankHardware
from npumon.daemon.profiling.captureerror import CaptureError
from npumon.daemon.profiling.statefile import first_problem
from npumon.daemon.runner import CHILD_PYTHON, CommandRunner, run_command

WORKER_MODULE = "npumon.daemon.analysis.worker"
WORKER_NEEDS = ("pandas", "numpy")  # the npumon[profiling] extra, in the -profiling image


def analysis_unavailable() -> str | None:
    """Why this Python cannot analyse profiles (the worker's packages are not installed), or
    None; looked up without importing them, on the sys.path the worker has too (CHILD_PYTHON)."""
    missing = [name for name in WORKER_NEEDS if not _installed(name)]
    if not missing:
        return None
    return (
        f"{' and '.join(missing)} not installed, so profiles cannot be analysed: install "
        "npumon[profiling] (pip install 'npumon[profiling]') or run the -profiling image"
    )


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a finder that refuses it, a broken entry in sys.modules
        return False


@dataclass(frozen=True, slots=True)
class WorkerOutcome:
    report: AnalysisReport | None
    result: str  # ok, timeout, failed
    message: str


def analyse_in_worker(
    job: AnalysisJob, timeout: float, runner: CommandRunner = run_command
) -> WorkerOutcome:
    """Run ``job`` in a child Python with a deadline (its process group is killed after)."""
    argv = [*CHILD_PYTHON, "-m", WORKER_MODULE]
    result = runner(argv, timeout, stdin=job_adapter().dump_json(job).decode())
    if result.timed_out:
        return WorkerOutcome(None, "timeout", f"analysis of {job.path} took over {timeout:g}s")
    if result.cancelled:
        return WorkerOutcome(None, "failed", f"analysis of {job.path} stopped: npumon is stopping")
    if result.exit_code != 0:
        tail = (result.stderr.strip().splitlines() or [""])[-1][:300]
        reason = "skipped_too_large" if result.exit_code == WORKER_EXIT_TOO_LARGE else "failed"
        return WorkerOutcome(None, reason, f"analysis exited {result.exit_code}: {tail}")
    try:
        report = report_adapter().validate_json(result.stdout)
    except ValidationError as error:  # e.g. a NaN (written as null) where a number must be
        return WorkerOutcome(
            None, "failed", f"analysis output not understood: {first_problem(error)}"
        )
    return WorkerOutcome(report, "ok", "")


def analyse(
    path: Path,
    workload: str,
    s: Profiling,
    runner: CommandRunner,
    reports: Path | None = None,
    baseline: float | None = None,
    capture: Path | None = None,
    process_ranks: tuple[tuple[int, int], ...] = (),
    confine: Path | None = None,
    reference: tuple[ProfileSummary | None, str | None] = (None, None),
    hardware: tuple[RankHardware, ...] = (),
    capture_info: CaptureInfo | None = None,
) -> AnalysisReport:
    """The worker's report for ``path``; CaptureError (timeout, failed) when there is none.
    With ``reports``, the worker also writes it there as <workload>.json and .html, the page
    naming ``capture`` (the raw data kept to open) and drawing ``baseline``. ``confine``: a
    trusted folder above ``path`` that no link below is followed from. ``reference``: the
    workload's reference capture (summary, raw directory) the report compares with.
    ``capture_info``: the daemon's capture (job, slot, telemetry), completed and reported."""
    job = AnalysisJob(
        path,
        workload,
        s.top_n,
        s.thresholds,
        s.limits,
        reports,
        baseline,
        capture,
        process_ranks,
        confine,
        reference[0],
        reference[1],
        hardware,
        capture_info,
    )
    outcome = analyse_in_worker(job, s.timeouts.analysis, runner)
    if outcome.report is None:
        raise CaptureError(outcome.result, outcome.message)
    return outcome.report
