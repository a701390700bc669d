"""npumon-sim-npu-smi and npumon-sim-hccn-tool answered in this process: a Runner for tests
about what npumon makes of a simulated node (series, merging, rendering), not about the process
boundary. The simulators run as processes in tests/simulator and the live fleet tests; deadlines,
process groups and output limits are daemon/runner.py's, tested there."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path

from npumon.daemon.runner import DEFAULT_MAX_OUTPUT_BYTES, CommandResult, run_command
from npumon.simulator import render_interconnect
from npumon.simulator.hccn import answer as hccn_answer
from npumon.simulator.loader import load_scenario
from npumon.simulator.model import Scenario
from npumon.simulator.render import render
from npumon.simulator.state import SimNode, node_state

NPU_SMI = "npumon-sim-npu-smi"
HCCN_TOOL = "npumon-sim-hccn-tool"


class SimulatorRunner:
    """Answers ``<simulator> --scenario S <tool argv>`` at simulated time ``at`` (what
        NPUMON_SIM_TIME gives the processes); any other command runs as a process. A scripted hang
        longer than the deadline reads as the runner's timeout, returned at once, and an answer over
    ``max_output_bytes`` as its output limit."""

    def __init__(self, at: float) -> None:
        self.at = at

    def __call__(
        self,
        argv: Sequence[str],
        timeout: float,
        *,
        stdin: str | None = None,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    ) -> CommandResult:
        tool = Path(argv[0]).name
        if tool not in (NPU_SMI, HCCN_TOOL):
            return run_command(argv, timeout, stdin=stdin, max_output_bytes=max_output_bytes)
        assert argv[1] == "--scenario", f"not a plain simulator call: {argv}"
        scenario, rest = _scenario(argv[2]), list(argv[3:])
        node = _node(argv[2], self.at)
        if tool == NPU_SMI:
            result = render_interconnect.answer(rest, scenario, node, self.at) or render(rest, node)
            hang = result.hang_seconds
        else:
            result = hccn_answer(rest, scenario, self.at)
            # as npumon-sim-hccn-tool: the scenario's hangs whose tokens occur in order
            hang = max((h.seconds for h in node.hangs if _in_order(h.argv, rest)), default=0.0)
        if hang > timeout:
            return CommandResult(tuple(argv), "", "", None, timeout, timed_out=True)
        if len(result.stdout.encode()) > max_output_bytes:
            return CommandResult(tuple(argv), "", result.stderr, None, 0.0, output_too_large=True)
        return CommandResult(tuple(argv), result.stdout, result.stderr, result.exit_code, 0.0)


def _in_order(pattern: Sequence[str], argv: list[str]) -> bool:
    it = iter(argv)
    return all(token in it for token in pattern)


@cache
def _scenario(ref: str) -> Scenario:
    return load_scenario(ref)


@cache
def _node(ref: str, at: float) -> SimNode:
    """The node at ``at``: every call of one collect reads the same moment."""
    return node_state(_scenario(ref), at)
