"""The analysis child process (pandas never enters the daemon): one job in, one report out.

`python -m npumon.daemon.analysis.worker` reads an AnalysisJob as JSON on stdin and writes the
AnalysisReport as JSON on stdout; exit 2 when the path holds no profile data, 3 on a bad job."""

from __future__ import annotations

import sys

from pydantic import ValidationError

from npumon.daemon.analysis.analysis import NoProfileData, analyze_path
from npumon.daemon.model.profile import job_adapter, report_adapter

EXIT_NO_DATA = 2
EXIT_BAD_JOB = 3


def main() -> int:
    try:
        job = job_adapter().validate_json(sys.stdin.buffer.read())
    except ValidationError as error:
        print(f"npumon worker: not an analysis job: {error}", file=sys.stderr)
        return EXIT_BAD_JOB
    try:
        report = analyze_path(job.path, job.thresholds, job.top_n, job.workload)
    except NoProfileData as error:
        print(f"npumon worker: {error}", file=sys.stderr)
        return EXIT_NO_DATA
    sys.stdout.buffer.write(report_adapter().dump_json(report) + b"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
