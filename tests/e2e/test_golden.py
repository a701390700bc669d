"""Whole pipeline per fixture node: fake npu-smi (real captures) -> runner -> parsers -> store ->
collector -> exposition, compared with the checked-in expected.prom and linted by promtool."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.helpers.wait import scaled
from tests.support import NODES, fixture_agent

# last-success timestamps are tests.support.FROZEN_TIME (2025-11-29T10:00:00Z)
# durations are real wall time; the golden file keeps the series but not the value
_DURATION = re.compile(
    r"^((?:npumon_source_duration_seconds|npumon_scrape_collector_duration_seconds)\{[^}]*\}) .*$",
    re.MULTILINE,
)


def exposition(node: str) -> str:
    return str(fixture_agent(node).collect_once().decode())


@pytest.mark.parametrize("node", sorted(p.name for p in NODES.iterdir() if p.is_dir()))
def test_golden_exposition(node: str, update_golden: bool) -> None:
    text = exposition(node)
    lint = subprocess.run(
        ["promtool", "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        timeout=scaled(30),
    )
    assert lint.returncode == 0 and lint.stdout + lint.stderr == "", lint.stdout + lint.stderr
    normalised = _DURATION.sub(r"\1 <duration>", text)
    golden = NODES / node / "expected.prom"
    if update_golden:
        golden.write_text(normalised)
    assert golden.exists(), f"no golden file; run pytest {__file__} --update-golden and review"
    assert normalised == golden.read_text()
