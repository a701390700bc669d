"""The fake kubelet's scenario section: pods come and go with the scenario clock."""

from __future__ import annotations

from npumon.simulator.kubelet import scenario_pods
from npumon.simulator.loader import read_scenario_text
from npumon.simulator.scenario import validate

SCENARIO = """
family: 910b
epoch: 1000
period: 600
kubernetes:
  pods:
    - {namespace: ml, name: always, containers: [{name: c, devices: [Ascend910-0]}]}
    - {namespace: ml, name: later, start: 100, end: 200,
       containers: [{name: c, resource: huawei.com/Ascend910-2c, devices: [Ascend910-2c-100-0]}]}
"""


def names_at(t: float) -> list[str]:
    pods = scenario_pods(validate(SCENARIO), clock=lambda: t)
    return [p.name for p in pods().pod_resources]


def test_pods_come_and_go_and_loop_with_the_period() -> None:
    assert names_at(1050) == ["always"]
    assert names_at(1150) == ["always", "later"]
    assert names_at(1250) == ["always"]
    assert names_at(1750) == ["always", "later"]  # 150 s into the second period


def test_the_demo_scenario_has_churn_an_unused_pod_and_a_vnpu() -> None:
    scenario = validate(read_scenario_text("910b-8")[1])
    pods = scenario["kubernetes"]["pods"]
    assert any(p["end"] is not None for p in pods)
    ids = [d for p in pods for c in p["containers"] for d in c["devices"]]
    assert any(d.count("-") == 3 for d in ids)  # a vNPU
    assert any(p["name"] == "idle-notebook" for p in pods)
