"""`collect --once` progress on stderr: silent within a second, then a line per step."""

from __future__ import annotations

import io
import threading

import pytest

from npumon.daemon.app import Agent
from npumon.daemon.cli import _Progress
from npumon.daemon.config import parse_config
from tests.helpers.wait import scaled
from tests.support import fake_npu_smi


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_nothing_is_printed_when_the_collect_ends_within_a_second() -> None:
    clock, stream = Clock(), io.StringIO()
    progress = _Progress(lambda step: "up", clock=clock, stream=stream)
    for step in ("npu_smi_table", "npu_smi_identity"):
        clock.now += 0.3
        progress(step, 0.3)
    assert stream.getvalue() == ""


def test_past_a_second_every_step_gets_its_line_including_the_first_ones() -> None:
    clock, stream = Clock(), io.StringIO()
    progress = _Progress(
        {"npu_smi_table": "up", "npu_smi_detail": "down"}.get, clock=clock, stream=stream
    )
    clock.now += 0.4
    progress("npu_smi_table", 0.4)
    assert stream.getvalue() == ""
    clock.now += 6.0
    progress("npu_smi_detail", 6.0)
    assert stream.getvalue().splitlines() == [
        "npumon: collect: npu_smi_table up in 0.4 s",
        "npumon: collect: npu_smi_detail down in 6.0 s",
    ]


@pytest.mark.integration  # the fake npu-smi as subprocesses
def test_collect_once_reports_each_step_once_each_tool_in_its_order() -> None:
    heard: list[str] = []
    agent = Agent(parse_config({"npu_smi": {"command": fake_npu_smi("910b4-1_25.2.2")}}))
    agent.collect_once(lambda step, seconds: heard.append(step))
    assert sorted(heard) == sorted(
        [
            "npu_smi_table",
            "npu_smi_identity",
            "npu_smi_detail",
            "npu_smi_health",
            "hccn_tool_identity",
            "hccn_tool",
            "kubelet_pod_resources",
        ]
    )
    # the tools run side by side; one tool's steps one after another, and hccn_tool only
    # once npu-smi's table and identity told it which chips have NICs
    npu_smi = [s for s in heard if s.startswith("npu_smi_")]
    assert npu_smi == ["npu_smi_table", "npu_smi_identity", "npu_smi_detail", "npu_smi_health"]
    assert heard.index("npu_smi_identity") < heard.index("hccn_tool_identity")
    assert heard.index("hccn_tool_identity") < heard.index("hccn_tool")


def test_npu_smi_and_hccn_tool_steps_run_side_by_side(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = Agent(parse_config({"npu_smi": {"command": ["npu-smi-not-called"]}}))
    # npu-smi's detail step and hccn_tool's first step meet: one after the other never would
    meet = threading.Barrier(2, timeout=scaled(10))
    heard: list[str] = []
    for name in ("poll_table", "poll_identity", "poll_health"):
        monkeypatch.setattr(agent.sources, name, lambda: None)
    monkeypatch.setattr(agent.sources, "poll_detail", meet.wait)
    monkeypatch.setattr(agent.hccn, "poll_hccn_tool_identity", meet.wait)
    monkeypatch.setattr(agent.hccn, "poll_hccn_tool", lambda: None)
    monkeypatch.setattr(agent.pod_resources, "poll", lambda: None)
    agent.collect_once(lambda step, seconds: heard.append(step))
    assert len(heard) == 7 and not meet.broken
