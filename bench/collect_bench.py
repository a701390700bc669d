"""Wall time of one `npumon collect --once` on a simulated node, npu-smi and hccn_tool
simulators as real subprocesses (every query its own process, as on a node).

Prints the median over N runs of the wall time, and of the sum of the steps' own times that
`collect --once` reports on stderr (what running the steps one after another would take); each
tool's steps run one after another, the tools side by side.

    .venv/bin/python bench/collect_bench.py [--runs 3] [--scenario a3-8x2] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
STEP = re.compile(r"^npumon: collect: (\S+) \S+ in ([\d.]+) s$", re.MULTILINE)
SIM_TIME = "30"  # seconds into the scenario: before its scripted faults
TIMEOUT_SECONDS = 600.0


def _once(scenario: str, folder: Path) -> tuple[float, dict[str, float]]:
    """(wall seconds, {step: seconds}) of one run."""
    config = folder / "npumon.yaml"
    config.write_text(
        f'npu_smi:\n  command: ["{BIN / "npumon-sim-npu-smi"}", "--scenario", "{scenario}"]\n'
        f'hccn_tool:\n  command: ["{BIN / "npumon-sim-hccn-tool"}", "--scenario", "{scenario}"]\n'
        f"state_directory: {folder}\n"
    )
    started = time.perf_counter()
    done = subprocess.run(
        [str(BIN / "npumon"), "collect", "--once", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        env={**os.environ, "NPUMON_SIM_TIME": SIM_TIME, "TMPDIR": str(folder)},
        check=False,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"collect --once exited {done.returncode}: {done.stderr[-2000:]}")
    return wall, {step: float(s) for step, s in STEP.findall(done.stderr)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scenario", default="a3-8x2")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    walls, sums, steps = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            wall, step = _once(args.scenario, Path(tmp))
            walls.append(wall)
            sums.append(sum(step.values()))
            steps.append(step)
            print(f"wall {wall:.1f} s, steps {sum(step.values()):.1f} s: {step}", flush=True)
    figures = {
        "scenario": args.scenario,
        "runs": args.runs,
        "wall_s": statistics.median(walls),
        "steps_sum_s": statistics.median(sums),
        "steps_s": {k: statistics.median(s[k] for s in steps) for k in steps[-1]},
        "load_average": os.getloadavg()[0],
    }
    print(json.dumps(figures, indent=1))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
