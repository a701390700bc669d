"""How many npu-smi and hccn_tool calls npumon makes per minute at the default intervals: printed,
never asserted (docs/polling.md).

The real sources run against the simulator answering in-process (no processes, an injected
clock), on an 8-chip node (910B: 8 NPUs x 1) and a 16-chip node (A3: 8 NPUs x 2 dies), for one
simulated hour. The scheduler is replayed by hand at the default intervals: table 5 s, detail
15 s, health on the table clock with a full pass every 60 s, identity at start and hourly,
hccn_tool every 30 s and its identity job at start and hourly. Queries a chip does not offer
("not supported") are asked again hourly, as in the daemon, and are counted when asked.

Usage: python bench/calls_bench.py [--minutes 60] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from npumon.daemon.config import Config
from npumon.daemon.runner import CommandResult
from npumon.daemon.sources.chips import ChipSources
from npumon.daemon.sources.hccn_tool import HccnSources, HccnTool, nic_chips
from npumon.daemon.sources.npu_smi import NpuSmi
from npumon.daemon.store import SnapshotStore
from npumon.simulator import hccn, render_interconnect
from npumon.simulator.loader import load_scenario
from npumon.simulator.render import render
from npumon.simulator.state import node_state


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def runner(scenario_name: str, clock: Clock, calls: Counter[str]):  # type: ignore[no-untyped-def]
    scenario = load_scenario(scenario_name)

    def run(argv: Sequence[str], timeout: float, *, max_output_bytes: int = 0) -> CommandResult:
        args = list(argv[1:])
        tool = "hccn_tool" if argv[0] == "hccn_tool" else "npu-smi"
        query = (
            next(
                (a for a in args if a.startswith("-") and a not in ("-i", "-c", "-g", "-t")),
                "table",
            )
            if tool == "hccn_tool"
            else (args[2] if len(args) > 2 else " ".join(args) or "table")
        )
        calls[f"{tool} {query}"] += 1
        t = 1_000_000.0 + clock.now
        if tool == "hccn_tool":
            result = hccn.answer(args, scenario, t)
        else:
            node = node_state(scenario, t)
            result = render_interconnect.answer(args, scenario, node, t) or render(args, node)
        return CommandResult(tuple(argv), result.stdout, result.stderr, result.exit_code, 0.0)

    return run


def simulate(scenario: str, minutes: int) -> tuple[Counter[str], Counter[str]]:
    """(calls in the first minute, calls in the minutes after it)."""
    clock, calls = Clock(), Counter[str]()
    run = runner(scenario, clock, calls)
    config = Config()
    store = SnapshotStore(config.throttle, clock=clock)
    smi = ChipSources(
        NpuSmi(["npu-smi"], 10.0, run),
        store.publish_chips,
        health_interval=config.chips.intervals.health,
        clock=clock,
        monotonic=clock,
    )
    net = HccnSources(
        HccnTool(["hccn_tool"], 10.0, run),
        store.publish_hccn_tool,
        lambda: nic_chips(smi.results()),
        clock=clock,
        monotonic=clock,
    )
    intervals = config.chips.intervals
    jobs = [
        (smi.poll_table, intervals.table),
        (smi.poll_identity, intervals.identity),
        (smi.poll_detail, intervals.detail),
        (smi.poll_health, intervals.table),
        (net.poll_hccn_tool_identity, config.hccn_tool.identity_interval),
        (net.poll_hccn_tool, config.hccn_tool.interval),
    ]
    first: Counter[str] = Counter()
    for second in range(minutes * 60):
        clock.now = float(second)
        if second == 60:
            first = Counter(calls)
        for job, every in jobs:
            if second % int(every) == 0:
                job()
    return first, calls - first


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    minutes, figures = args.minutes, {}
    for label, scenario in (("8 chips (910B, 8x1)", "910b-8"), ("16 chips (A3, 8x2)", "a3-8x2")):
        first, rest = simulate(scenario, minutes)
        per_minute = {k: v / (minutes - 1) for k, v in rest.items()}
        smi = sum(v for k, v in per_minute.items() if k.startswith("npu-smi"))
        net = sum(v for k, v in per_minute.items() if k.startswith("hccn_tool"))
        print(f"== {label}: calls per minute, averaged over minutes 2..{minutes}")
        print(f"   npu-smi {smi:6.1f}   hccn_tool {net:6.1f}   total {smi + net:6.1f}")
        figures[label] = {"npu_smi": smi, "hccn_tool": net}
        print(
            f"   first minute (identity, every query tried once): "
            f"npu-smi {sum(v for k, v in first.items() if k.startswith('npu-smi'))}, "
            f"hccn_tool {sum(v for k, v in first.items() if k.startswith('hccn_tool'))}"
        )
        for name, rate in sorted(per_minute.items(), key=lambda kv: -kv[1]):
            print(f"   {rate:6.2f}/min  {name}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
