"""The analysis child process (pandas never enters the daemon): one job in, one report out.

`python -m npumon.daemon.analysis.worker` reads an AnalysisJob as JSON on stdin and writes the
AnalysisReport as JSON on stdout (and, when the job names a report_dir, as <workload>.json and
the HTML page <workload>.html there). Before pandas is imported it limits its own address space to
the job's `limits.worker_memory` (RLIMIT_AS), so a profile too big for it ends this process,
never the daemon. Exit codes: 2 no profile data, 3 a bad job, 4 a table over its size cap,
5 out of memory."""

from __future__ import annotations

import os
import sys
from dataclasses import replace

from pydantic import ValidationError

from npumon.daemon.model.profile import (
    WORKER_EXIT_BAD_JOB,
    WORKER_EXIT_NO_DATA,
    WORKER_EXIT_OUT_OF_MEMORY,
    WORKER_EXIT_TOO_LARGE,
    AnalysisJob,
    AnalysisReport,
    job_adapter,
    report_json,
)

EXIT_NO_DATA = WORKER_EXIT_NO_DATA
EXIT_BAD_JOB = WORKER_EXIT_BAD_JOB
EXIT_TOO_LARGE = WORKER_EXIT_TOO_LARGE
EXIT_OUT_OF_MEMORY = WORKER_EXIT_OUT_OF_MEMORY


def main() -> int:
    try:
        job = job_adapter().validate_json(sys.stdin.buffer.read())
    except ValidationError as error:
        print(f"npumon worker: not an analysis job: {error}", file=sys.stderr)
        return EXIT_BAD_JOB
    from npumon.daemon.analysis.limits import TooLarge, limit_memory

    for pool in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        # one BLAS thread: pandas does not need more, and each reserves address space per core
        os.environ.setdefault(pool, "1")
    limit_memory(int(job.limits.worker_memory))
    from npumon.daemon.analysis.analysis import NoProfileData
    from npumon.daemon.analysis.readers import confine

    if job.confine is not None:
        confine.add_root(job.confine)

    try:
        report = run_job(job)
        data = report_json(report) + b"\n"
    except MemoryError:
        print(
            f"npumon worker: out of memory (limit {int(job.limits.worker_memory)} bytes, "
            "profiling.limits.worker_memory)",
            file=sys.stderr,
        )
        return EXIT_OUT_OF_MEMORY
    except TooLarge as error:
        print(f"npumon worker: {error}", file=sys.stderr)
        return EXIT_TOO_LARGE
    except NoProfileData as error:
        print(f"npumon worker: {error}", file=sys.stderr)
        return EXIT_NO_DATA
    if job.report_dir is not None:
        _write_pages(job, report)
    sys.stdout.buffer.write(data)
    return 0


def run_job(job: AnalysisJob) -> AnalysisReport:
    """The job's report: its profile analysed, compared with the reference capture if any."""
    from npumon.daemon.analysis.analysis import analyze_path
    from npumon.daemon.analysis.deltas import compare

    report = analyze_path(
        job.path,
        job.thresholds,
        job.top_n,
        job.workload,
        job.limits,
        dict(job.process_ranks),
        job.hardware,
    )
    if job.capture_info is not None:  # the daemon's capture: the global steps its ranks took
        steps = [(r.rank, [p.step for p in r.steps]) for r in report.scope.ranks]
        report = replace(report, capture_info=job.capture_info.with_steps(steps))
    if job.reference is None:
        return report
    return replace(report, comparison=compare(report.summary, job.reference, job.reference_capture))


def _write_pages(job: AnalysisJob, report: AnalysisReport) -> None:
    """<workload>.json and .html in job.report_dir, each written whole and by descriptor
    (nofollow.write_in: a link planted in the folder, or in its place, is never followed); a
    directory that cannot take them costs the pages (said on stderr), never the analysis."""
    from npumon.daemon.analysis.html import render
    from npumon.daemon.nofollow import write_in

    assert job.report_dir is not None
    try:
        job.report_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
        write_in(
            job.report_dir,
            f"{job.workload}.json",
            report_json(report, indent=2) + b"\n",
        )
        page = render(
            report,
            None if job.capture is None else str(job.capture),
            job.baseline_seconds,
            job.thresholds,
        )
        write_in(job.report_dir, f"{job.workload}.html", page.encode("utf-8"))
    except OSError as error:
        print(f"npumon worker: report not written: {error}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
