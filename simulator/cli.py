"""`npumon-sim-npu-smi [--scenario S] [--time T] <npu-smi argv...>`: a stand-in for npu-smi."""

from __future__ import annotations

import argparse
import os
import sys
import time

from npumon.simulator import render_interconnect
from npumon.simulator.loader import SCENARIO_ENV, load_scenario
from npumon.simulator.model import ScenarioError
from npumon.simulator.render import render
from npumon.simulator.state import node_state

TIME_ENV = "NPUMON_SIM_TIME"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="npumon-sim-npu-smi",
        description="Print what npu-smi would print on a simulated node. The simulator's "
        "own options come first; everything after them is the npu-smi argv "
        "(e.g. `info -t common -i 3`).",
    )
    parser.add_argument(
        "--scenario",
        help="scenario YAML path or built-in name (910b-8, a3-8x2, 310p-duo); "
        f"default ${SCENARIO_ENV}",
    )
    parser.add_argument(
        "--time", type=float, help=f"simulated wall-clock seconds; default ${TIME_ENV} or now"
    )
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="the npu-smi arguments")
    return parser


def _now(option: float | None) -> float:
    if option is not None:
        return option
    env = os.environ.get(TIME_ENV)
    return float(env) if env else time.time()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        scenario = load_scenario(args.scenario)
        t = _now(args.time)
    except (ScenarioError, ValueError) as exc:
        print(f"npumon-sim-npu-smi: {exc}", file=sys.stderr)
        return 2
    node = node_state(scenario, t)
    result = render_interconnect.answer(args.argv, scenario, node, t) or render(args.argv, node)
    if result.hang_seconds:
        # a hung npu-smi blocks in the driver; the caller's timeout must kill us
        time.sleep(result.hang_seconds)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    sys.stdout.flush()
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
