"""Samples per scrape of every simulator scenario stay within the per-node budget (700 for an
8-chip node, 1,200 for a 16-die A3 node) with the kubelet and profiling on, and are what
deploy/README.md says: new series do not grow unseen.

bench/series_bench.py measures them (one `npumon collect --once` per scenario, the default
collectors). When a change adds or removes series on purpose, run this test, read the counts it
prints, and update the table in deploy/README.md ("Series per node") and bench/RESULTS.md.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.wait import scaled
from tests.support import ROOT

pytestmark = pytest.mark.integration  # `npumon collect --once` against the simulator


def documented() -> dict[str, int]:
    """Scenario -> default samples per scrape, from deploy/README.md's table."""
    table = (ROOT / "deploy" / "README.md").read_text()
    rows = re.findall(r"^\| `([\w-]+)` \| \d+ \| (\d+) \|", table, flags=re.MULTILINE)
    return {name: int(count) for name, count in rows}


def test_every_scenario_is_within_the_budget_and_documented(tmp_path: Path) -> None:
    out = tmp_path / "series.json"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "series_bench.py"),
            "--no-detail",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=scaled(900),
    )
    assert done.returncode == 0, done.stderr
    measured = json.loads(out.read_text())
    print(done.stdout)
    assert set(measured) == {p.stem for p in (ROOT / "simulator" / "scenarios").glob("*.yaml")}
    over = {
        name: (r["default"], r["budget"])
        for name, r in measured.items()
        if r["budget"] is None or r["default"] > r["budget"]
    }
    assert not over, f"samples per scrape over the budget (samples, budget): {over}"
    assert measured["910b-8"]["chips"] == 8 and measured["a3-8x2"]["chips"] == 16
    counts = {name: r["default"] for name, r in measured.items()}
    assert counts == documented(), (
        f"samples per scrape changed: {counts}; update deploy/README.md if that is intended"
    )
