"""The analysis worker: a job JSON on stdin, the report JSON on stdout, both via TypeAdapter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from analysis_helpers import four_rank_tree

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.model.profile import AnalysisJob, Thresholds, job_adapter, report_adapter
from tests.helpers.wait import scaled


def test_report_round_trips_through_json(tmp_path: Path) -> None:
    report = analyze_path(four_rank_tree(tmp_path), workload="qwen3")
    assert report_adapter().validate_json(report_adapter().dump_json(report)) == report
    assert report.summary.workload == "qwen3"


def test_job_round_trips_and_unknown_thresholds_are_refused() -> None:
    job = AnalysisJob(Path("/data/prof"), "llama", 3, Thresholds(free_ratio=0.3, warmup_steps=4))
    assert job_adapter().validate_json(job_adapter().dump_json(job)) == job
    with pytest.raises(ValueError, match="bogus"):
        job_adapter().validate_json(
            b'{"path": "/x", "workload": "w", "top_n": 3, "thresholds": {"bogus": 1}}'
        )


def run_worker(stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "npumon.daemon.analysis.worker"],
        input=stdin,
        capture_output=True,
        timeout=scaled(120),
    )


@pytest.mark.integration
def test_worker_process_answers_a_job(tmp_path: Path) -> None:
    four_rank_tree(tmp_path)
    job = AnalysisJob(tmp_path, "qwen3", 3, Thresholds(warmup_steps=0))
    done = run_worker(job_adapter().dump_json(job))
    assert done.returncode == 0, done.stderr
    report = report_adapter().validate_json(done.stdout)
    assert report == analyze_path(tmp_path, Thresholds(warmup_steps=0), 3, "qwen3")
    assert len(report.summary.op_time_ratio) == 4  # top 3 + other


@pytest.mark.integration
def test_worker_writes_the_pages_or_says_why_not(tmp_path: Path) -> None:
    """With report_dir, <workload>.json (the stdout report) and .html (the step against the
    baseline and the capture named); a report_dir that cannot be made costs the pages, not
    the analysis."""
    tree = four_rank_tree(tmp_path / "profile")
    reports = tmp_path / "reports"
    job = AnalysisJob(
        tree, "qwen3", 3, Thresholds(), report_dir=reports, baseline_seconds=0.8, capture=tree
    )
    done = run_worker(job_adapter().dump_json(job))
    assert done.returncode == 0, done.stderr
    report = report_adapter().validate_json(done.stdout)
    assert report_adapter().validate_json((reports / "qwen3.json").read_bytes()) == report
    page = (reports / "qwen3.html").read_text(encoding="utf-8")
    assert f"<code>{tree}</code>" in page
    assert "on the workload's median step 800.000 ms" in page
    assert sorted(p.name for p in reports.iterdir()) == ["qwen3.html", "qwen3.json"]

    blocked = tmp_path / "a-file"
    blocked.write_text("")
    job = AnalysisJob(tree, "qwen3", 3, Thresholds(), report_dir=blocked / "reports")
    done = run_worker(job_adapter().dump_json(job))
    assert done.returncode == 0 and report_adapter().validate_json(done.stdout) == report
    assert b"report not written" in done.stderr


@pytest.mark.integration
def test_worker_exit_codes(tmp_path: Path) -> None:
    empty = AnalysisJob(tmp_path, "w", 10, Thresholds())
    assert run_worker(job_adapter().dump_json(empty)).returncode == 2
    bad = run_worker(b'{"path": 1}')
    assert bad.returncode == 3 and b"not an analysis job" in bad.stderr
