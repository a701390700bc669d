"""A real Prometheus scrapes three simulated nodes, two of them profiling simulated training jobs:
every dashboard query answers, and the expected alerts go pending."""

from __future__ import annotations

import contextlib

import pytest
from fleet_scenario import POLLING, api_query, dashboard_exprs, may_be_empty, query
from promql_names import metric_names

from tests.helpers.http import get_json
from tests.helpers.wait import wait_for

pytestmark = pytest.mark.fleet


def test_every_dashboard_query_parses_and_returns_data(prometheus: str) -> None:
    exprs = dashboard_exprs()
    assert len(exprs) > 50 and any("npu_profile_bottleneck" in e for _, e in exprs)
    for where, expr in exprs:
        answer = api_query(prometheus, expr)
        assert answer["status"] == "success", (where, expr, answer)
    # Recording rules need an evaluation after the first scrapes, and the profiled workloads
    # a few captures: poll until every query answers.
    empty = [
        (w, e)
        for w, e in exprs  # (those MAY_BE_EMPTY excepted)
        if not may_be_empty(*w.split(" / ", 1), metric_names(e))
    ]

    def all_answer() -> bool:
        nonlocal empty
        empty = [(w, e) for w, e in empty if not api_query(prometheus, e)["data"]["result"]]
        return not empty

    with contextlib.suppress(AssertionError):  # the assertion below names what is missing
        wait_for(all_answer, 30, "every dashboard query to answer", **POLLING)
    assert empty == [], "no data for:\n" + "\n".join(f"{w}: {e}" for w, e in empty)


def test_the_torch_npu_job_shows_its_slow_link(prometheus: str) -> None:
    """communication.json of the simulated torch_npu capture reaches Prometheus: HCCS at the
    scenario's 3 GB/s, diagnosed slow_link; the msprof-attached jobs have no link figures."""
    hccs = 'npu_communication_link_bandwidth_bytes_per_second{workload="links", link_type="HCCS"}'
    slow = 'npu_profile_bottleneck{workload="links", kind="slow_link"}'
    wait_for(lambda: bool(query(prometheus, hccs)), 30, "the link bandwidth of links", **POLLING)
    assert query(prometheus, hccs) == [pytest.approx(3e9)]
    assert query(prometheus, slow) == [1.0]
    assert query(prometheus, 'npu_profile_bottleneck{kind="slow_link"} == 1') == [1.0]
    assert {
        s["metric"]["workload"]
        for s in api_query(prometheus, "npu_communication_link_bandwidth_bytes_per_second")["data"][
            "result"
        ]
    } == {"links"}


def pending(url: str) -> list[dict[str, str]]:
    return [a["metric"] for a in api_query(url, 'ALERTS{alertstate="pending"}')["data"]["result"]]


def has(alerts: list[dict[str, str]], **labels: str) -> bool:
    return any(labels.items() <= alert.items() for alert in alerts)


def node_of(url: str, name: str) -> str:
    chips = f'count by (instance) (npu_chip_info{{name="{name}"}})'
    return str(api_query(url, chips)["data"]["result"][0]["metric"]["instance"])


def test_expected_alerts_reach_pending(prometheus: str) -> None:
    instances = {
        t["labels"]["instance"]
        for t in get_json(f"{prometheus}/api/v1/targets")["data"]["activeTargets"]
        if t["health"] == "up"
    }
    assert len(instances) == 3  # and the dead target of cluster b
    n910b, na3 = node_of(prometheus, "910B3"), node_of(prometheus, "Ascend910")
    expected = [
        {"alertname": "NpuThermalThrottling", "instance": n910b, "npu": "3"},
        {"alertname": "NpuTemperatureNearLimit", "instance": n910b, "npu": "3"},
        {"alertname": "NpuHealthCritical", "instance": n910b, "npu": "5"},
        # the fault table: 8C03A000 is restart_npu (pages), A4025021 not_handle (silent)
        {
            "alertname": "NpuFaultNeedsChipAction",
            "instance": n910b,
            "npu": "5",
            "code": "8C03A000",
            "level": "restart_npu",
            "severity": "critical",
        },
        {"alertname": "NpuAllocatedChipLowUtilization", "instance": n910b, "npu": "6"},
        {"alertname": "NpuAllocatedChipIdle", "instance": n910b, "npu": "6"},
        {
            "alertname": "NpuAllocatedChipUnused",
            "instance": n910b,
            "npu": "7",
            "namespace": "research",
            "pod": "idle-notebook",
            "container": "jupyter",
        },
        {
            "alertname": "NpuWorkloadBottleneck",
            "instance": n910b,
            "workload": "convert",
            "kind": "format_conversion",
        },
        {
            "alertname": "NpuWorkloadBottleneck",
            "instance": n910b,
            "workload": "input",
            "kind": "input_pipeline",
        },
        {"alertname": "NpuStepTimeRegression", "instance": na3, "workload": "slowing"},
        {"alertname": "NpuNetworkLinkDownOnAllocatedChip", "instance": n910b, "npu": "0"},
        {"alertname": "NpuNetworkLinkFlapping", "instance": n910b, "npu": "2"},
        {"alertname": "NpuNetworkErrors", "instance": n910b, "npu": "4"},
        {"alertname": "NpuOpticalRxPowerOutOfRange", "instance": n910b, "npu": "1"},
        {"alertname": "NpuNetworkPfcStorm", "instance": n910b, "npu": "5"},
        {"alertname": "NpuHccsCrcErrors", "instance": n910b, "npu": "7"},
        {"alertname": "NpuSioCrcErrors", "instance": na3, "npu": "4", "chip": "1"},
    ]
    with contextlib.suppress(AssertionError):  # the assertion below names what is missing
        wait_for(
            lambda: all(has(pending(prometheus), **e) for e in expected),
            30,
            "alerts pending",
            **POLLING,
        )
    alerts = pending(prometheus)
    assert [e for e in expected if not has(alerts, **e)] == [], "not pending"
    # One alert per fault: the owner is the `owner` annotation, not part of the alert's labels
    # (the Unused alert, about the holding pod itself, keeps them).
    owned = [a for a in alerts if "pod" in a and a["alertname"] != "NpuAllocatedChipUnused"]
    assert owned == []
    owners = {
        (a["labels"]["alertname"], a["labels"].get("npu")): a["annotations"].get("owner")
        for a in get_json(f"{prometheus}/api/v1/alerts")["data"]["alerts"]
        if a["labels"].get("instance") == n910b
    }
    assert (
        owners[("NpuAllocatedChipLowUtilization", "6")] == "research/notebook (container jupyter)"
    )
    assert owners[("NpuThermalThrottling", "3")].startswith("ml/train-0 ")
    # NPU 3 of the A3 node idles with only the firmware's HBM: not allocated, so not an alert.
    assert not any(
        a["alertname"].startswith("NpuAllocatedChip") and a["instance"] == na3 and a["npu"] == "3"
        for a in alerts
    )
    # A chip whose pod runs a process is not "unused"; only the idle notebook's chip is.
    assert [a["npu"] for a in alerts if a["alertname"] == "NpuAllocatedChipUnused"] == ["7"]
    # Busy, allocated chips do not count as low utilization.
    assert not has(alerts, alertname="NpuAllocatedChipLowUtilization", instance=n910b, npu="0")
    # Healthy ports and links raise nothing; the 310P node has no hccn_tool and is not failing.
    assert not has(alerts, alertname="NpuNetworkLinkDownOnAllocatedChip", npu="3")
    assert not has(alerts, alertname="NpuOpticalRxPowerOutOfRange", npu="2")
    assert not has(alerts, alertname="NpuHccsCrcErrors", npu="0")
    assert not any(
        a["alertname"] == "NpumonSourceFailing" and a["source"].startswith("hccn") for a in alerts
    )
    assert not any(a.get("code") == "A4025021" for a in alerts)  # not_handle never alerts
    # Steady jobs are no regression; every capture succeeded or saw its job end.
    assert not has(alerts, alertname="NpuStepTimeRegression", workload="convert")
    assert not has(alerts, alertname="NpuStepTimeRegression", workload="input")
    assert not has(alerts, alertname="NpumonCapturesFailing")
    # Both bottleneck workloads are diagnosed with exactly their own cause.
    assert not has(
        alerts, alertname="NpuWorkloadBottleneck", workload="convert", kind="input_pipeline"
    )
    assert not has(
        alerts, alertname="NpuWorkloadBottleneck", workload="input", kind="format_conversion"
    )
