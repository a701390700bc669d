"""npu-smi calls per minute and the daemon's and its children's CPU with `chips.backend: cli`
and `dcmi`, side by side, against the simulator: printed, never asserted (docs/architecture.md,
"The DCMI backend").

The real sources, the real DcmiBackend and a real helper process over the fake libdcmi.so (compiled
with gcc into a temp dir from tests/fakes/dcmi, its state printed by npumon.simulator.dcmi), on
the 8-chip (910B) and 16-chip (A3) nodes. The scheduler is replayed by hand at the default
intervals with an injected clock, as bench/calls_bench.py does (whose in-process npu-smi this
reuses), so one simulated minute of polls runs in a fraction of a real one; CPU time per
simulated minute over 60 s is the share of a core it would take at the real pace. The daemon's
figure leaves out the in-process npu-smi stand-in's own CPU (it stands for a child process);
the children are the helper (dcmi) and one npu-smi process per call (cli), whose cost is the
real npu-smi's (a dcmi_init each) and cannot be measured without the hardware. The fake answers
from memory: the driver's own cost per call is not in these figures either.

Usage: python bench/dcmi_bench.py [--minutes 10] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import psutil
from calls_bench import Clock, runner

from npumon.daemon.config import Config
from npumon.daemon.runner import CommandResult
from npumon.daemon.sources.chips import ChipSources
from npumon.daemon.sources.dcmi.client import DcmiHelper
from npumon.daemon.sources.dcmi.serving import DcmiBackend
from npumon.daemon.sources.npu_smi import NpuSmi
from npumon.daemon.store import SnapshotStore
from npumon.simulator.dcmi import state_text
from npumon.simulator.loader import load_scenario
from npumon.simulator.state import node_state

FAKE = Path(__file__).resolve().parents[1] / "tests" / "fakes" / "dcmi"


def build(folder: Path) -> Path:
    library = folder / "libdcmi.so"
    subprocess.run(
        [
            "gcc",
            "-std=c11",
            "-D_DEFAULT_SOURCE",
            "-O2",
            "-shared",
            "-fPIC",
            "-I",
            str(FAKE),
            "-o",
            str(library),
            str(FAKE / "fake_dcmi.c"),
        ],
        check=True,
        timeout=120,
    )
    return library


class StandIn:
    """calls_bench's in-process npu-smi, with the CPU it spends (not the daemon's) counted."""

    def __init__(self, scenario: str, clock: Clock, calls: Counter[str]) -> None:
        self._run = runner(scenario, clock, calls)
        self.cpu = 0.0

    def __call__(self, argv: Sequence[str], timeout: float, **options: Any) -> CommandResult:
        started = time.process_time()
        try:
            return cast(CommandResult, self._run(argv, timeout, **options))
        finally:
            self.cpu += time.process_time() - started


def simulate(
    scenario: str, backend: str, minutes: int, library: Path, folder: Path
) -> dict[str, Any]:
    loaded = load_scenario(scenario)
    state = folder / f"{scenario}.state"
    at = 1_000_000.0
    state.write_text(state_text(node_state(loaded, at), loaded.vnpus, loaded, at))
    os.environ["NPUMON_FAKE_DCMI_STATE"] = str(state)
    clock, calls = Clock(), Counter[str]()
    config = Config()
    stand_in = StandIn(scenario, clock, calls)
    helper = DcmiHelper(library, 10.0, monotonic=clock) if backend == "dcmi" else None
    smi = DcmiBackend(
        NpuSmi(["npu-smi"], 10.0, stand_in),
        mode="dcmi" if backend == "dcmi" else "cli",
        helper=helper,
        monotonic=clock,
    )
    store = SnapshotStore(config.throttle, clock=clock)
    sources = ChipSources(
        smi, store.publish_chips, health_interval=60.0, clock=clock, monotonic=clock
    )
    intervals = config.chips.intervals
    jobs = [
        (sources.poll_table, intervals.table),
        (sources.poll_identity, intervals.identity),
        (sources.poll_detail, intervals.detail),
        (sources.poll_health, intervals.table),
    ]
    first: Counter[str] = Counter()
    helper_cpu_start, daemon_cpu_start, stand_in_start, wall = 0.0, 0.0, 0.0, 0.0
    for second in range(minutes * 60):
        clock.now = float(second)
        if second == 60:  # after start-up: the cross-check and identity are behind
            first = Counter(calls)
            helper_cpu_start = _cpu(helper)
            daemon_cpu_start, wall = time.process_time(), time.monotonic()
            stand_in_start = stand_in.cpu
        for job, every in jobs:
            if second % int(every) == 0:
                job()
    helper_cpu = (_cpu(helper) - helper_cpu_start) / (minutes - 1)
    stand_in_cpu = stand_in.cpu - stand_in_start
    daemon_cpu = (time.process_time() - daemon_cpu_start - stand_in_cpu) / (minutes - 1)
    wall = (time.monotonic() - wall) / (minutes - 1)
    if helper is not None:
        helper.close()
    rest = calls - first
    return {
        "npu_smi_calls_per_minute": sum(rest.values()) / (minutes - 1),
        "npu_smi_calls_first_minute": float(sum(first.values())),
        "helper_cpu_percent": 100.0 * helper_cpu / 60.0,
        "daemon_cpu_percent": 100.0 * daemon_cpu / 60.0,
        "wall_seconds_per_minute": wall,
        "by_query": dict(
            sorted(((k, v / (minutes - 1)) for k, v in rest.items()), key=lambda kv: -kv[1])
        ),
        "first_minute_by_query": dict(sorted(first.items(), key=lambda kv: -kv[1])),
    }


def _cpu(helper: DcmiHelper | None) -> float:
    """The helper process's CPU seconds so far (0 without one)."""
    if helper is None or helper.pid is None:
        return 0.0
    times = psutil.Process(helper.pid).cpu_times()
    return float(times.user + times.system)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=int, default=10)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    assert shutil.which("gcc"), "gcc builds the fake libdcmi.so"
    figures = {}
    with tempfile.TemporaryDirectory(prefix="npumon-dcmi-bench-") as tmp:
        library = build(Path(tmp))
        for label, scenario in (
            ("8 chips (910B, 8x1)", "910b-8"),
            ("16 chips (A3, 8x2)", "a3-8x2"),
        ):
            for backend in ("cli", "dcmi"):
                found = simulate(scenario, backend, args.minutes, library, Path(tmp))
                figures[f"{label}, backend {backend}"] = found
                print(f"== {label}, backend {backend}, minutes 2..{args.minutes}")
                print(
                    f"   npu-smi calls/min {found['npu_smi_calls_per_minute']:6.1f} "
                    f"(first minute {found['npu_smi_calls_first_minute']:.0f})"
                )
                children = (
                    f"helper {found['helper_cpu_percent']:.3f} %"
                    if backend == "dcmi"
                    else "one npu-smi process per call (its dcmi_init: hardware only)"
                )
                print(
                    f"   CPU, % of a core: daemon (sources, conversion, store merge) "
                    f"{found['daemon_cpu_percent']:.3f} %; children: {children}"
                )
                for name, rate in found["by_query"].items():
                    print(f"   {rate:6.2f}/min  {name}")
                if backend == "dcmi":
                    first = found["first_minute_by_query"]
                    print("   first minute: " + ", ".join(f"{n} {c}" for n, c in first.items()))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
