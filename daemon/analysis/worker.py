"""Analysis in a child process, so pandas never enters the daemon: `python -m` this module."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from npumon.daemon.analysis.diagnosis import Thresholds
from npumon.daemon.model.profile import AnalysisReport
from npumon.daemon.runner import CommandResult, run_command

EXIT_NO_DATA = 2

Runner = Callable[[Sequence[str], float], CommandResult]


def thresholds_from(overrides: Mapping[str, float]) -> Thresholds:
    """Config overrides onto the checklist defaults (integer fields stay integers)."""
    kinds = {f.name: f.type for f in fields(Thresholds)}
    values = {k: int(v) if kinds[k] in (int, "int") else float(v) for k, v in overrides.items()}
    return Thresholds(**values)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class WorkerOutcome:
    report: AnalysisReport | None
    result: str  # ok, timeout, failed
    message: str


def analyse_in_worker(
    path: Path,
    workload: str,
    *,
    top_n: int,
    thresholds: Mapping[str, float],
    timeout: float,
    runner: Runner = run_command,
) -> WorkerOutcome:
    """Run the analysis of ``path`` in a child Python with a deadline (process group killed)."""
    argv = [
        sys.executable, "-m", "npumon.daemon.analysis.worker", str(path),
        "--workload", workload, "--top", str(top_n),
        "--thresholds", json.dumps(dict(thresholds)),
    ]
    result = runner(argv, timeout)
    if result.timed_out:
        return WorkerOutcome(None, "timeout", f"analysis of {path} took over {timeout:g}s")
    if result.exit_code != 0:
        tail = (result.stderr.strip().splitlines() or [""])[-1][:300]
        return WorkerOutcome(None, "failed", f"analysis exited {result.exit_code}: {tail}")
    try:
        report = AnalysisReport.from_dict(json.loads(result.stdout))
    except (ValueError, KeyError, TypeError) as error:
        return WorkerOutcome(None, "failed", f"analysis output not understood: {error}")
    return WorkerOutcome(report, "ok", "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="npumon-analysis-worker")
    parser.add_argument("path", type=Path)
    parser.add_argument("--workload", required=True)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--thresholds", default="{}", help="JSON object of Thresholds overrides")
    parser.add_argument("--json", action="store_true", help="accepted; output is always JSON")
    args = parser.parse_args(argv)
    from npumon.daemon.analysis.analysis import NoProfileData, analyze_path

    try:
        report = analyze_path(
            args.path, thresholds_from(json.loads(args.thresholds)), args.top, args.workload
        )
    except NoProfileData as error:
        print(f"npumon worker: {error}", file=sys.stderr)
        return EXIT_NO_DATA
    sys.stdout.write(json.dumps(report.to_dict()) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
