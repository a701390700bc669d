"""How many steps apart the nodes of one job start an aligned capture: printed, never asserted.

Each simulated node runs the daemon's side (``align.slot_start`` with its own clock, skewed from
the true time by a normal error of ``--skew-ms``; the capture tick's phase at random; the trigger
written when the node's clock reaches the slot, as ``Profiler.capture`` waits for it) and the
job's side (the simulator's ``plan_from``, npumon-sim-train's reading of torch_npu's
``profiler_config.json`` at the start of each step, on the daemon's own ``trigger_config``). The
job is synchronous: step k starts at the same true time on every node, plus ``--jitter-ms`` of
uniform noise per node. Printed per step time: the share of runs whose nodes all capture the same
steps, and the largest spread in steps.

Usage: python bench/align_bench.py [--nodes 16] [--runs 2000] [--skew-ms 1 10 100] [--json F]
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path

from npumon.daemon.profiling.align import slot_start
from npumon.daemon.profiling.capture_torch import trigger_config
from npumon.simulator.torch_profile import plan_from

INTERVAL = 600.0
JOB = "llama-master-0:23456"


def first_steps(
    nodes: int, step: float, skew: float, jitter: float, rng: random.Random
) -> list[int]:
    """The first captured step of each node in one slot."""
    t0 = rng.uniform(0, INTERVAL)  # when the job's step 0 began (true time)
    wall = rng.uniform(10 * INTERVAL, 20 * INTERVAL)
    slot = slot_start(JOB, INTERVAL, wall) + INTERVAL  # the next slot, as every node sees it
    config = trigger_config(Path("/nonexistent"), 50)
    out = []
    for _ in range(nodes):
        error = rng.gauss(0.0, skew)  # node clock = true time + error
        trigger = slot - error  # true time at which the node's clock reads the slot
        lag = rng.uniform(0.0, jitter)
        # the job polls at the start of each step: the first start after the trigger
        k = math.floor((trigger - t0 - lag) / step) + 1
        plan = plan_from(config, k - 1, 0)
        assert plan is not None
        out.append(plan.first_step)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--skew-ms", type=float, nargs="+", default=[1.0, 10.0, 100.0])
    parser.add_argument("--jitter-ms", type=float, default=1.0)
    parser.add_argument("--steps", type=float, nargs="+", default=[0.3, 1.0, 5.0])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    rows = []
    rng = random.Random(41)
    print(f"{args.nodes} nodes, {args.runs} slots each, per-node step jitter {args.jitter_ms} ms")
    print("| clock error (sd) | step time | runs with all nodes on the same steps | max spread |")
    print("|---|---|---|---|")
    for skew in args.skew_ms:
        for step in args.steps:
            spreads = []
            for _ in range(args.runs):
                firsts = first_steps(args.nodes, step, skew / 1e3, args.jitter_ms / 1e3, rng)
                spreads.append(max(firsts) - min(firsts))
            same = sum(s == 0 for s in spreads) / len(spreads)
            print(f"| {skew:g} ms | {step:g} s | {same:.1%} | {max(spreads)} step(s) |")
            rows.append({"skew_ms": skew, "step_s": step, "same": same, "max": max(spreads)})
    if args.json:
        meta = {"nodes": args.nodes, "runs": args.runs, "jitter_ms": args.jitter_ms}
        args.json.write_text(json.dumps({**meta, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
