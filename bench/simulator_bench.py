"""Cost of one `npumon-sim-npu-smi` call (the daemon runs one process per npu-smi call).

Prints ms per call, median over N runs, wall and CPU (user+sys of the child), for: the bare
interpreter with and without site (site loads the editable-install finder), the console script
with a cold scenario cache (fresh temp dir each run) and a warm one, and `python -m` without the
console-script wrapper; then the -X importtime cumulative figures of the big imports.

    .venv/bin/python bench/simulator_bench.py [--runs 20] [--scenario 910b-8]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = str(Path(sys.executable).parent / "npumon-sim-npu-smi")
NPU_SMI_ARGV = ["info", "-t", "common", "-i", "3"]
TIMEOUT_SECONDS = 30.0
_IMPORTS = (
    "site",
    "__editable___npumon_0_1_0_finder",
    "npumon.simulator.cli",
    "npumon.simulator.loader",
    "npumon.simulator.render",
    "dataclasses",
    "pydantic",
    "yaml",
)


def _run_once(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, child CPU ms) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(cmd, env=env, capture_output=True, timeout=TIMEOUT_SECONDS, check=True)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu * 1000


def _median(cmd: list[str], runs: int, cold: bool) -> tuple[float, float]:
    walls: list[float] = []
    cpus: list[float] = []
    with tempfile.TemporaryDirectory() as warm_tmp:
        for _ in range(runs + (0 if cold else 1)):
            with tempfile.TemporaryDirectory() as cold_tmp:
                env = {**os.environ, "TMPDIR": cold_tmp if cold else warm_tmp}
                wall, cpu = _run_once(cmd, env)
            walls.append(wall)
            cpus.append(cpu)
    if not cold:  # the first run filled the cache
        walls, cpus = walls[1:], cpus[1:]
    return statistics.median(walls), statistics.median(cpus)


def _importtime(args: list[str]) -> dict[str, int]:
    """Cumulative microseconds per module name of one warm run under -X importtime."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "TMPDIR": tmp}
        cmd = [sys.executable, "-X", "importtime", *args]
        subprocess.run(cmd, env=env, capture_output=True, timeout=TIMEOUT_SECONDS, check=True)
        proc = subprocess.run(
            cmd,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
            check=True,
        )
    found: dict[str, int] = {}
    for line in proc.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \|\s*(\S+)$", line)
        if match and match.group(2) in _IMPORTS:
            found[match.group(2)] = int(match.group(1))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--scenario", default="910b-8")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    sim = ["--scenario", args.scenario, "--time", "200", *NPU_SMI_ARGV]
    py = sys.executable
    cases = [
        ("python -S -c pass (no site)", [py, "-S", "-c", "pass"], False),
        ("python -c pass (site + editable finder)", [py, "-c", "pass"], False),
        ("npumon-sim-npu-smi, cold cache", [SCRIPT, *sim], True),
        ("npumon-sim-npu-smi, warm cache", [SCRIPT, *sim], False),
        ("python -m npumon.simulator.cli, warm", [py, "-m", "npumon.simulator.cli", *sim], False),
    ]
    print(f"median over {args.runs} runs; load average {os.getloadavg()[0]:.2f}")
    print(f"{'case':45} {'wall ms':>8} {'cpu ms':>8}")
    figures = {}
    for name, cmd, cold in cases:
        wall, cpu = _median(cmd, args.runs, cold)
        figures[name] = {"wall_ms": wall, "cpu_ms": cpu}
        print(f"{name:45} {wall:8.1f} {cpu:8.1f}")
    if args.json:
        args.json.write_text(json.dumps({"runs": args.runs, "cases": figures}, indent=1))
    print("\n-X importtime, warm cache, cumulative ms:")
    for module, micros in _importtime([SCRIPT, *sim]).items():
        print(f"  {module:45} {micros / 1000:8.1f}")


if __name__ == "__main__":
    main()
