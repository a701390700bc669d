"""The demo node's first 60 s on an advanced clock: the daemon's own schedule (Agent.schedule)
run in time order against the 910b-8 simulator in-process and the fake kubelet, no warning."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from npumon.daemon.app import Agent
from npumon.daemon.config import parse_config
from npumon.daemon.runner import CommandResult
from npumon.simulator import hccn, render_interconnect
from npumon.simulator.kubelet import scenario_pods, serve
from npumon.simulator.loader import load_scenario, read_scenario_text
from npumon.simulator.render import render
from npumon.simulator.scenario import validate
from npumon.simulator.state import node_state
from tests.support import ROOT

pytestmark = pytest.mark.integration  # the fake kubelet serves gRPC on a unix socket
SCENARIO = "910b-8"


class DemoNode:
    """npu-smi and hccn_tool answered in-process by the simulator at the injected time."""

    def __init__(self) -> None:
        self.scenario = load_scenario(SCENARIO)
        self.now = self.scenario.epoch + 1.0

    def clock(self) -> float:
        return self.now

    def __call__(self, argv: Sequence[str], timeout: float, **_: object) -> CommandResult:
        if argv[0] == "npu-smi":
            args, node = list(argv[1:]), node_state(self.scenario, self.now)
            links = render_interconnect.answer(args, self.scenario, node, self.now)
            result = links or render(args, node)  # as the simulator's npu-smi
        else:
            result = hccn.answer(list(argv[1:]), self.scenario, self.now)
        return CommandResult(tuple(argv), result.stdout, result.stderr, result.exit_code, 0.0)


def test_the_demo_nodes_first_minute_logs_no_warning(captured: io.StringIO, tmp_path: Path) -> None:
    node = DemoNode()
    socket = tmp_path / "kubelet.sock"
    source, text = read_scenario_text(SCENARIO)
    kubelet = serve(socket, scenario_pods(validate(text, source), node.clock))
    demo = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    demo["npu_smi"]["command"], demo["hccn_tool"]["command"] = ["npu-smi"], ["hccn_tool"]
    demo["state_directory"] = str(tmp_path / "state")
    demo["kubernetes"]["pod_resources_socket"] = str(socket)
    demo["profiling"]["enabled"] = False  # the capture side needs the training job's process
    agent = Agent(parse_config(demo), runner=node, clock=node.clock)
    try:
        start = node.now
        due = [
            (offset, order, func, every)
            for order, (func, every, offset) in enumerate(agent.schedule())
        ]
        while min(due)[0] <= 60.0:  # the schedule's runs in time order, each taking no time
            at, order, func, every = min(due)
            node.now = start + at
            func()
            due[order] = (at + every, order, func, every)
    finally:
        kubelet.stop(grace=None).wait()
    snapshot = agent.store.latest()
    assert {s.source: s.up for s in snapshot.sources} == {
        "npu_smi_table": True,
        "npu_smi_identity": True,
        "npu_smi_detail": True,
        "npu_smi_health": True,
        "hccn_tool": True,
        "hccn_tool_identity": True,
        "kubelet_pod_resources": True,
    }
    assert sum(bool(chip.owners) for chip in snapshot.chips) == 8  # every chip attributed
    assert snapshot.attribution_problems == ()
    lines = captured.getvalue().splitlines()
    assert [line for line in lines if " level=info " not in line] == []
