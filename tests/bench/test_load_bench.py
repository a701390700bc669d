"""bench/load_bench.py --short against a real daemon, with loose bounds (real figures: bench)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # real daemons, sockets, seconds of load

BENCH = Path(__file__).resolve().parents[2] / "bench" / "load_bench.py"


def test_short_load_bench_serves_every_scrape() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--short", "--scenario", "plain", "--scenario", "tls_auth"],
        capture_output=True, text=True, timeout=120, check=True,
    )
    results = json.loads(done.stdout.splitlines()[-1].removeprefix("RESULT "))
    for name, r in results.items():
        assert r["errors"] == 0 and r["busy_503"] == 0, (name, done.stdout)
        assert r["ok"] > 100, (name, done.stdout)
        assert r["p99_ms"] < 1000, (name, done.stdout)
        assert r["rss_after_mb"] - r["rss_before_mb"] < 60, (name, done.stdout)
        assert r["threads_after"] <= r["threads_before"] + 5, (name, done.stdout)


def test_short_default_limit_run_refuses_the_burst_surplus_and_times_nothing_out() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--short", "--scenario", "default_40", "--scrapers", "100"],
        capture_output=True, text=True, timeout=120, check=True,
    )
    r = json.loads(done.stdout.splitlines()[-1].removeprefix("RESULT "))["default_40"]
    # 100 at once on a cold cache: 40 wait for the first render, the rest get a 503 (unless
    # that render ended before 40 were read); every one is answered
    assert r["burst"] == 100 and r["burst_errors"] == 0, done.stdout
    assert r["burst_503"] + r["burst_200"] == 100 and r["burst_503"] <= 60, done.stdout
    if r["burst_503"]:
        assert r["burst_503_p99_ms"] < 1000, done.stdout
    assert r["errors"] == 0 and r["ok"] > 100, done.stdout
