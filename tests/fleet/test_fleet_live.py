"""A real Prometheus scrapes three simulated nodes: dashboard queries answer, alerts go pending."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from promql_names import metric_names

pytestmark = pytest.mark.fleet

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PROMETHEUS = shutil.which("prometheus")
RULES = ROOT / "config" / "prometheus" / "npumon-rules.yml"
DASHBOARDS = sorted((ROOT / "grafana" / "dashboards").glob("*.json"))
# Written by profiler captures; absent until a node has profiled something (none of these do).
PROFILING_METRICS = frozenset({
    "npu_step_duration_seconds", "npu_step_duration_baseline_seconds", "npu_step_phase_seconds",
    "npu_step_phase_ratio", "npu_op_time_ratio", "npu_core_type_time_ratio",
    "npu_profile_bottleneck", "npumon_captures_total", "npumon_capture_duration_seconds",
    "npumon_capture_last_success_timestamp_seconds",
})
VARIABLES = {"$instance": ".*", "$npu": ".*", "$workload": ".*", "$__range": "2m"}

# 8 x 910B: NPU 3 overheats and clocks down, NPU 5 is in Alarm, NPU 6 holds HBM but idles.
# The epoch lies 10 minutes back so the overheat ramp is over when the test starts.
SCENARIO_910B = """
family: 910b
npu_smi_version: "25.2.2"
epoch: {epoch}
seed: 910
load: {{base_percent: 75, amplitude_percent: 10}}
processes:
{processes}
  - {{npu: 6, pid: 31337, name: jupyter-lab, hbm_mb: 20480}}
events:
  - {{kind: overheat, npu: 3, temperature_celsius: 96, throttled_mhz: 1100, load_percent: 96}}
  - {{kind: alarm, npu: 5, health: Alarm, error_codes: [A4025021]}}
  - {{kind: idle, npu: 6}}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def get_json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=5) as response:
        data: dict[str, Any] = json.load(response)
        return data


def wait_for(what: str, check: Callable[[], bool], deadline_seconds: float = 60.0) -> None:
    deadline = time.monotonic() + deadline_seconds
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.5)  # polling a live Prometheus: there is no clock to advance
    pytest.fail(f"timed out waiting for {what}")


def start(argv: list[str], log: Path, processes: list[subprocess.Popen[bytes]]) -> None:
    with log.open("wb") as out:
        processes.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                          start_new_session=True, cwd=log.parent))


def node_config(tmp: Path, name: str, scenario: str | Path) -> Path:
    config = {
        "npu_smi": {"command": [str(BIN / "npumon-sim-npu-smi"), "--scenario", str(scenario)],
                    "intervals": {"table": "1s", "detail": "1s", "health": "1s"}},
        "state_directory": str(tmp / f"state-{name}"),
    }
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def rules_with_long_for(tmp: Path) -> Path:
    """The shipped rules with every `for:` at 1h: a holding condition stays pending."""
    rules = yaml.safe_load(RULES.read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            if "alert" in rule:
                rule["for"] = "1h"
    path = tmp / "rules.yml"
    path.write_text(yaml.safe_dump(rules))
    return path


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if PROMETHEUS is None:
        pytest.skip("prometheus not installed (make tools)")
    tmp = tmp_path_factory.mktemp("fleet")
    busy = "\n".join(f"  - {{npu: {n}, pid: {19330 + n}, name: python3, hbm_mb: 58472}}"
                     for n in (0, 1, 2, 3, 4, 5, 7))
    scenario = tmp / "910b-test.yaml"
    scenario.write_text(SCENARIO_910B.format(epoch=time.time() - 600, processes=busy))
    nodes: dict[str, str | Path] = {"n910b": scenario, "na3": "a3-8x2", "n310p": "310p-duo"}
    ports = {name: free_port() for name in nodes}
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for name, scen in nodes.items():
            start([str(BIN / "npumon"), "run", "--config", str(node_config(tmp, name, scen)),
                   "--web.listen-address", f"127.0.0.1:{ports[name]}"], tmp / f"{name}.log",
                  processes)
        prom_port = free_port()
        (tmp / "prometheus.yml").write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(rules_with_long_for(tmp))],
            "scrape_configs": [{"job_name": "npumon", "static_configs": [
                {"targets": [f"127.0.0.1:{port}" for port in ports.values()]}]}],
        }))
        start([PROMETHEUS, f"--config.file={tmp / 'prometheus.yml'}",
               f"--storage.tsdb.path={tmp / 'tsdb'}",
               f"--web.listen-address=127.0.0.1:{prom_port}"],
              tmp / "prometheus.log", processes)
        url = f"http://127.0.0.1:{prom_port}"
        wait_for("3 targets up", lambda: query(url, 'count(up{job="npumon"} == 1)') == [3.0])
        yield url
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def api_query(url: str, expr: str) -> dict[str, Any]:
    return get_json(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))


def query(url: str, expr: str) -> list[float]:
    return [float(s["value"][1]) for s in api_query(url, expr)["data"]["result"]]


def substitute(expr: str) -> str:
    for variable, value in VARIABLES.items():
        expr = expr.replace(variable, value)
    return expr


def dashboard_exprs() -> list[str]:
    found: list[str] = []
    for path in DASHBOARDS:
        dashboard = json.loads(path.read_text())
        rows = dashboard["panels"]
        panels = [*rows, *(p for row in rows for p in row.get("panels", []))]
        found += [t["expr"] for p in panels for t in p.get("targets", [])]
        found += [v["query"]["query"].removeprefix("label_values(").rsplit(",", 1)[0]
                  for v in dashboard["templating"]["list"] if v["type"] == "query"]
    return [substitute(expr) for expr in found]


def exported_names(url: str) -> set[str]:
    return set(get_json(f"{url}/api/v1/label/__name__/values")["data"])


def test_every_dashboard_query_parses_and_returns_data(prometheus: str) -> None:
    # Recording rules need an evaluation after the first scrapes; all of them have data here.
    groups = yaml.safe_load(RULES.read_text())["groups"]
    records = {rule["record"] for group in groups for rule in group["rules"] if "record" in rule}
    wait_for("every recording rule", lambda: all(query(prometheus, name) for name in records))
    throttled = 'npu_throttled{reason="thermal"} == 1'
    wait_for("a throttled chip", lambda: bool(query(prometheus, throttled)))
    exported = exported_names(prometheus)
    missing: list[str] = []
    for expr in dashboard_exprs():
        answer = api_query(prometheus, expr)
        assert answer["status"] == "success", (expr, answer)
        if answer["data"]["result"]:
            continue
        absent = metric_names(expr) - exported
        # Only profiler-fed panels may be empty, and only because their metric is not exported.
        assert absent and absent <= PROFILING_METRICS, f"no data for {expr!r}"
        missing.append(expr)
    assert len(missing) < len(dashboard_exprs()) // 2


def pending(url: str) -> set[tuple[str, str, str]]:
    answer = api_query(url, 'ALERTS{alertstate="pending"}')["data"]["result"]
    return {(a["metric"]["alertname"], a["metric"].get("instance", ""), a["metric"].get("npu", ""))
            for a in answer}


def test_expected_alerts_reach_pending(prometheus: str) -> None:
    instances = {t["labels"]["instance"]
                 for t in get_json(f"{prometheus}/api/v1/targets")["data"]["activeTargets"]}
    assert len(instances) == 3
    def node_of(name: str) -> str:
        chips = f'count by (instance) (npu_chip_info{{name="{name}"}})'
        return str(api_query(prometheus, chips)["data"]["result"][0]["metric"]["instance"])

    node_910b, node_a3 = node_of("910B3"), node_of("Ascend910")
    expected = {
        ("NpuThermalThrottling", node_910b, "3"),
        ("NpuTemperatureNearLimit", node_910b, "3"),
        ("NpuHealthCritical", node_910b, "5"),
        ("NpuErrorCodePresent", node_910b, "5"),
        ("NpuAllocatedChipLowUtilization", node_910b, "6"),
        ("NpuAllocatedChipIdle", node_910b, "6"),
    }
    wait_for("alerts pending", lambda: expected <= pending(prometheus), 30)
    alerts = pending(prometheus)
    # NPU 3 of the A3 node idles with only the firmware's HBM: not allocated, so not an alert.
    assert not {a for a in alerts
                if a[0].startswith("NpuAllocatedChip") and a[1:] == (node_a3, "3")}
    # Busy, allocated chips do not count as low utilization.
    assert ("NpuAllocatedChipLowUtilization", node_910b, "0") not in alerts
