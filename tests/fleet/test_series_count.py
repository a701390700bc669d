"""Samples per scrape of every simulator scenario stay within the per-node budget (700 for an
8-chip node, 1,200 for a 16-die A3 node) with the kubelet and profiling on, and are what
deploy/README.md says: new series do not grow unseen.

bench/series_bench.py measures them (one `npumon collect --once` per scenario, the default
collectors); this test reads the same nodes (the bench's config, kubelet and profiling state)
through an in-process Agent whose simulators answer in this process (tests/helpers/
simulator_runner.py): the process boundary of `collect --once` and the simulator CLIs is tested
in tests/e2e and tests/simulator. When a change adds or removes series on purpose, run this test,
read the counts it prints, and update the table in deploy/README.md ("Series per node") and
bench/RESULTS.md.
"""

from __future__ import annotations

import importlib.util
import re
from types import ModuleType

import pytest

from npumon.daemon.app import Agent
from npumon.daemon.config import parse_config
from tests.helpers.simulator_runner import SimulatorRunner
from tests.support import ROOT

pytestmark = pytest.mark.integration  # every simulator scenario through a whole Agent


def series_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "npumon_series_bench", ROOT / "bench" / "series_bench.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def documented() -> dict[str, int]:
    """Scenario -> default samples per scrape, from deploy/README.md's table."""
    table = (ROOT / "deploy" / "README.md").read_text()
    rows = re.findall(r"^\| `([\w-]+)` \| \d+ \| (\d+) \|", table, flags=re.MULTILINE)
    return {name: int(count) for name, count in rows}


def test_every_scenario_is_within_the_budget_and_documented() -> None:
    bench = series_bench()
    runner = SimulatorRunner(float(bench.SIM_TIME))
    measured = {}
    for name in bench.scenarios():
        with bench.node(name) as config:
            agent = Agent(parse_config(config), runner=runner)
            agent.collect_once()
            counted = bench.counted(agent.collector.exposition(False).decode())
        measured[name] = {**counted, "budget": bench.budget(counted["chips"])}
        print(f"{name:10} {counted['chips']:3} chips: {counted['samples']:5} samples per scrape")
    assert set(measured) == {p.stem for p in (ROOT / "simulator" / "scenarios").glob("*.yaml")}
    over = {
        name: (r["samples"], r["budget"])
        for name, r in measured.items()
        if r["budget"] is None or r["samples"] > r["budget"]
    }
    assert not over, f"samples per scrape over the budget (samples, budget): {over}"
    assert measured["910b-8"]["chips"] == 8 and measured["a3-8x2"]["chips"] == 16
    counts = {name: r["samples"] for name, r in measured.items()}
    assert counts == documented(), (
        f"samples per scrape changed: {counts}; update deploy/README.md if that is intended"
    )
