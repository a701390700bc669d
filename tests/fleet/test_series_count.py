"""The series per simulated node stay what deploy/README.md says: new families do not grow unseen.

When a change adds or removes series on purpose, run this test, read the new counts it prints,
and update the table in deploy/README.md ("Series per node") with them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.exposition import samples
from tests.helpers.wait import scaled
from tests.support import ROOT

pytestmark = pytest.mark.integration  # `npumon collect --once` against the simulator
NODES = {"8 x 910B3": "910b-8", "A3, 8 NPUs x 2 dies": "a3-8x2", "4 x 310P3 Duo": "310p-duo"}
SIM_TIME = "30"  # seconds into each scenario: before its scripted faults


def documented() -> dict[str, int]:
    table = (ROOT / "deploy" / "README.md").read_text()
    rows = re.findall(r"^\| (.+?) \| \d+ \| (\d+) \|", table, flags=re.MULTILINE)
    return {name: int(count) for name, count in rows}


def series(scenario: str, folder: Path) -> int:
    config = folder / f"{scenario}.yaml"
    sim = Path(sys.executable).parent / "npumon-sim-npu-smi"
    hccn = Path(sys.executable).parent / "npumon-sim-hccn-tool"
    # hccn_tool on the training nodes; the 310P inference node has none (the source is off)
    nic = (
        ""
        if scenario == "310p-duo"
        else (f'hccn_tool:\n  command: ["{hccn}", "--scenario", "{scenario}"]\n')
    )
    config.write_text(
        f'npu_smi:\n  command: ["{sim}", "--scenario", "{scenario}"]\n'
        f"{nic}state_directory: {folder}\n"
    )
    done = subprocess.run(
        [str(Path(sys.executable).parent / "npumon"), "collect", "--once", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=scaled(120),
        env={**os.environ, "NPUMON_SIM_TIME": SIM_TIME},
    )
    return len(samples(done.stdout))


def test_series_per_simulated_node_match_the_readme(tmp_path: Path) -> None:
    table = documented()
    measured = {name: series(scenario, tmp_path) for name, scenario in NODES.items()}
    print(f"series per node: {measured}")
    assert measured == {name: table.get(name) for name in NODES}, (
        f"series per node changed: {measured}; update deploy/README.md if that is intended"
    )
