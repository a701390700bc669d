"""`npumon-sim-npu-smi [--scenario S] [--time T] <npu-smi argv...>`: a stand-in for npu-smi."""

from __future__ import annotations

import argparse
import os
import sys
import time

from npumon.simulator import render_interconnect
from npumon.simulator.loader import SCENARIO_ENV, load_scenario
from npumon.simulator.model import Scenario, ScenarioError
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
        help="scenario YAML path or built-in name (910b-8, a3-8x2, 310p-duo, 310b); "
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


def load_at(prog: str, scenario: str | None, at: float | None) -> tuple[Scenario, float] | None:
    """The scenario and the simulated time, or None after saying why on stderr (exit 2)."""
    try:
        return load_scenario(scenario), _now(at)
    except (ScenarioError, ValueError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return None


def emit(stdout: str, stderr: str, exit_code: int, hang_seconds: float = 0.0) -> int:
    """Print a simulated tool's answer; a hung driver first blocks (the caller must kill us)."""
    if hang_seconds:
        time.sleep(hang_seconds)
    sys.stdout.write(stdout)
    sys.stderr.write(stderr)
    sys.stdout.flush()
    return exit_code


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    loaded = load_at("npumon-sim-npu-smi", args.scenario, args.time)
    if loaded is None:
        return 2
    scenario, t = loaded
    node = node_state(scenario, t)
    result = render_interconnect.answer(args.argv, scenario, node, t) or render(args.argv, node)
    return emit(result.stdout, result.stderr, result.exit_code, result.hang_seconds)


if __name__ == "__main__":
    sys.exit(main())
