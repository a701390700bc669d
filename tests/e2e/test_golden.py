"""Whole pipeline per fixture node: fake npu-smi (real captures) -> runner -> parsers -> store ->
collector -> exposition, compared with the checked-in expected.prom and linted by promtool; the
nodes that replay hccn_tool also with every detail collector on (expected-detail.prom)."""

from __future__ import annotations

import re
import subprocess

import pytest

from npumon.exporters.collector import DETAIL_COLLECTORS
from tests.helpers.wait import scaled
from tests.support import NODES, fixture_agent, has_hccn_tool

# last-success timestamps are tests.support.FROZEN_TIME (2025-11-29T10:00:00Z)
# durations are real wall time; the golden file keeps the series but not the value
_DURATION = re.compile(
    r"^((?:npumon_source_duration_seconds|npumon_scrape_collector_duration_seconds)\{[^}]*\}) .*$",
    re.MULTILINE,
)


def exposition(node: str, enabled: tuple[str, ...] = ()) -> str:
    return str(fixture_agent(node, enabled).collect_once().decode())


ALL_NODES = sorted(p.name for p in NODES.iterdir() if p.is_dir())
GOLDENS = [
    *((node, "expected.prom", ()) for node in ALL_NODES),
    *(
        (node, "expected-detail.prom", DETAIL_COLLECTORS)
        for node in ALL_NODES
        if has_hccn_tool(node)
    ),
]


@pytest.mark.parametrize(
    ("node", "name", "enabled"), GOLDENS, ids=[f"{n}/{name}" for n, name, _ in GOLDENS]
)
def test_golden_exposition(
    node: str, name: str, enabled: tuple[str, ...], update_golden: bool
) -> None:
    text = exposition(node, enabled)
    lint = subprocess.run(
        ["promtool", "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        timeout=scaled(30),
    )
    assert lint.returncode == 0 and lint.stdout + lint.stderr == "", lint.stdout + lint.stderr
    normalised = _DURATION.sub(r"\1 <duration>", text)
    golden = NODES / node / name
    if update_golden:
        golden.write_text(normalised)
    assert golden.exists(), f"no golden file; run pytest {__file__} --update-golden and review"
    assert normalised == golden.read_text()
