"""A real Prometheus scrapes three simulated nodes, two of them profiling simulated training jobs:
every dashboard query answers, and the expected alerts go pending."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fleet_processes import Processes

from tests.helpers.http import get_json
from tests.helpers.processes import PROMETHEUS_LISTENING, reported_port
from tests.helpers.wait import wait_for

pytestmark = pytest.mark.fleet

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PROMETHEUS = shutil.which("prometheus")
RULES = ROOT / "config" / "prometheus" / "npumon-rules.yml"
DASHBOARDS = sorted((ROOT / "grafana" / "dashboards").glob("*.json"))
VARIABLES = {"$cluster": ".*", "$instance": ".*", "$npu": ".*", "$workload": ".*",
             "$namespace": ".*",
             "$pod": ".*", "$__range": "2m"}

# Profiled training jobs (npumon-sim-train), by workload name: the node whose daemon profiles
# it and the simulated workload kind. "slowing" later restarts with a longer step (a regression).
# "links" is captured through its torch_npu config file, not msprof: only torch_npu exports have
# communication.json, so only it gives the link bandwidth (its HCCS is slow: slow_link).
JOBS = {"convert": ("n910b", "conversion_bound"), "input": ("n910b", "input_bound"),
        "slowing": ("na3", "balanced"), "links": ("n910b", "slow_link")}
TORCH_CONFIG = {"links"}
STEP_SECONDS = 0.05
# a live Prometheus (each check is a query) is polled every 0.5 s; OSError: not up yet
POLLING: dict[str, Any] = {"poll": 0.5, "tolerate": (OSError,)}
SLOWER_STEP_SECONDS = 0.15

# 8 x 910B: NPU 3 overheats and clocks down, NPU 5 is in Alarm (a restart_npu and a not_handle
# code), NPU 6 holds HBM but idles,
# NPU 7 is held by a pod that never uses it. A fake kubelet (npumon-sim-kubelet) serves the pods.
# Network: NPU 0's link is down while it is in use, NPU 2's port flaps, NPU 4 counts FCS errors,
# NPU 1's optical RX power is below its low threshold, NPU 5 gets a PFC storm, NPU 7 HCCS CRCs.
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
  - {{kind: alarm, npu: 5, health: Alarm, error_codes: [A4025021, 8C03A000]}}
  - {{kind: idle, npu: 6}}
  - {{kind: idle, npu: 7}}
kubernetes:
  pods:
    - {{namespace: ml, name: train-0, containers: [{{name: trainer,
        devices: [Ascend910-0, Ascend910-1, Ascend910-2, Ascend910-3]}}]}}
    - {{namespace: serving, name: vllm-0, containers: [{{name: engine,
        devices: [Ascend910-4, Ascend910-5]}}]}}
    - {{namespace: research, name: notebook, containers: [{{name: jupyter,
        devices: [Ascend910-6]}}]}}
    - {{namespace: research, name: idle-notebook, containers: [{{name: jupyter,
        devices: [Ascend910-7]}}]}}
network:
  events:
    - {{kind: link_down, npu: 0}}
    - {{kind: flap, npu: 2, period_seconds: 20}}
    - {{kind: crc_errors, npu: 4, per_second: 30}}
    # (rates far above the alert thresholds: a 5m rate() of a series a minute old, updated by
    # polls tens of seconds apart on a loaded machine, reads a fraction of the true rate)
    - {{kind: optical_rx_low, npu: 1, ramp_seconds: 60, rx_power_mw: 0.05}}
    - {{kind: pfc_storm, npu: 5, per_second: 500000}}
    - {{kind: hccs_crc_errors, npu: 7, per_second: 0.5}}
"""


def train_bin(tmp: Path) -> Path:
    """npumon-sim-train through a link in this run's tmp dir: the profiling targets match that
    path, so they never pick up a simulated job of another test running on the machine."""
    return tmp / "jobs" / "npumon-sim-train"


def config_dir(tmp: Path, name: str) -> Path:
    """Where a TORCH_CONFIG job polls profiler_config.json (dynamic_profile.init's directory)."""
    return tmp / f"dynamic-profile-{name}"


def start_job(procs: Processes, tmp: Path, name: str,
              step_seconds: float) -> subprocess.Popen[bytes]:
    """A training job started with PROFILING_MODE=dynamic, so msprof can attach to it."""
    argv = [str(train_bin(tmp)), "--profile", JOBS[name][1], "--step-seconds", f"{step_seconds:g}"]
    if name in TORCH_CONFIG:
        argv += ["--dynamic-config-dir", str(config_dir(tmp, name))]
    job = procs.start(argv, tmp / f"job-{name}.log", {"PROFILING_MODE": "dynamic"})
    socket_file = tmp / "home" / f"dynamic_profiling_socket_{job.pid}"
    wait_for(socket_file.exists, 10, f"job {name} up")
    return job


def profiling(tmp: Path, node: str) -> dict[str, Any]:
    """Captures back to back (interval 1 s; each takes seconds here), and a baseline from the
    first capture on (default: three), so a regression can show within the test's minute."""
    # the command line is `python3 <script> ...`: the script path follows the interpreter
    targets = [{"workload": name, "cmdline": f" {re.escape(str(train_bin(tmp)))} --profile {kind} ",
                **({"mode": "torch_npu_config", "config_dir": str(config_dir(tmp, name))}
                   if name in TORCH_CONFIG else {})}
               for name, (where, kind) in JOBS.items() if where == node]
    return {
        "enabled": True, "interval": "1s", "duration": "500ms", "discover": False,
        "targets": targets, "msprof": {"command": [str(BIN / "npumon-sim-msprof")]},
        "timeouts": {"start": "10s", "stop": "10s", "export": "20s", "analysis": "20s"},
        "disk_quota": "256MiB", "baseline": {"min_captures": 1},
    }


def node_config(tmp: Path, name: str, scenario: str | Path) -> Path:
    config: dict[str, Any] = {
        "npu_smi": {"command": [str(BIN / "npumon-sim-npu-smi"), "--scenario", str(scenario)],
                    # a full health pass asks 7 queries per chip (health, ecc, memory, hccs,
                    # hccs-bw, pcie-err, sio-info): every 5 s, not every second, on 3 nodes
                    "intervals": {"table": "1s", "detail": "1s", "health": "5s"}},
        "state_directory": str(tmp / f"state-{name}"),
        # only n910b has a kubelet: the others judge allocation by memory
        "kubernetes": {"pod_resources_socket": str(tmp / f"kubelet-{name}.sock"),
                       "interval": "1s"},
    }
    if name == "n910b":  # the 310P node has no hccn_tool (the source stays off there); the A3
        # node leaves it off too, to keep the machine's load down (its ports: tests/simulator)
        config["hccn_tool"] = {"command": [str(BIN / "npumon-sim-hccn-tool"), "--scenario",
                                           str(scenario)], "interval": "5s"}
    if any(where == name for where, _ in JOBS.values()):
        config["profiling"] = profiling(tmp, name)
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def start_nodes(procs: Processes, tmp: Path) -> list[int]:
    busy = "\n".join(f"  - {{npu: {n}, pid: {19330 + n}, name: python3, hbm_mb: 58472}}"
                     for n in (0, 1, 2, 3, 4, 5))
    scenario = tmp / "910b-test.yaml"
    scenario.write_text(SCENARIO_910B.format(epoch=time.time() - 600, processes=busy))
    procs.start([str(BIN / "npumon-sim-kubelet"), "--scenario", str(scenario),
                 "--socket", str(tmp / "kubelet-n910b.sock")], tmp / "kubelet.log")
    wait_for((tmp / "kubelet-n910b.sock").exists, 10, "the fake kubelet's socket")
    nodes: dict[str, str | Path] = {"n910b": scenario, "na3": "a3-8x2", "n310p": "310p-duo"}
    started = {}
    for name, scen in nodes.items():  # port 0: each daemon logs the port it got
        log = tmp / f"{name}.log"
        started[log] = procs.start([str(BIN / "npumon"), "run",
                                    "--config", str(node_config(tmp, name, scen)),
                                    "--web.listen-address", "127.0.0.1:0"], log)
    return [reported_port(log, process=process) for log, process in started.items()]


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


def start_prometheus(procs: Processes, tmp: Path, ports: Iterable[int]) -> str:
    (tmp / "prometheus.yml").write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules_with_long_for(tmp))],
        "scrape_configs": [{"job_name": "npumon", "static_configs": [
            {"targets": [f"127.0.0.1:{p}" for p in ports]}]}],
    }))
    assert PROMETHEUS is not None
    log = tmp / "prometheus.log"
    process = procs.start([PROMETHEUS, f"--config.file={tmp / 'prometheus.yml'}",
                           f"--storage.tsdb.path={tmp / 'tsdb'}",
                           "--web.listen-address=127.0.0.1:0"], log)
    return f"http://127.0.0.1:{reported_port(log, PROMETHEUS_LISTENING, process)}"


def slow_down(procs: Processes, tmp: Path, url: str, job: subprocess.Popen[bytes]) -> None:
    """Once "slowing" has a baseline, its next run takes 3x as long per step. That run ends after
    npumon captured it, so the regression stays the latest capture: a slower run that went on
    would, after as many captures as the fast run had, be its own baseline (a rolling median)."""
    has_baseline = 'npu_step_duration_baseline_seconds{workload="slowing"}'
    wait_for(lambda: bool(query(url, has_baseline)), 40, "a step-time baseline of slowing",
             **POLLING)
    procs.stop(job)
    slower = start_job(procs, tmp, "slowing", SLOWER_STEP_SECONDS)
    tripled = ('npu_step_duration_seconds{workload="slowing", stat="p99"} '
               '> ignoring (stat) 2 * npu_step_duration_baseline_seconds')
    wait_for(lambda: bool(query(url, tripled)), 30, "a capture of the slower run", **POLLING)
    procs.stop(slower)


# Counters read by per-chip passes (hccn_tool: 6 calls per chip; the health tier's full pass: 7
# per chip, 104 calls on the A3 node) need two passes before rate() and increase() answer; on a
# loaded machine a pass takes tens of seconds, so the fixture waits for them (seconds when idle).
LINK_COUNTERS = (
    "npu_network_carrier_up_changes_total", "npu_network_receive_errors_total",
    "npu_network_pause_frames_total", "npu_hccs_crc_errors_total", "npu_sio_crc_errors_total",
)


def wait_for_link_counters(url: str) -> None:
    """Two passes of every link counter, and the ports' identity."""
    grown = [f"count(increase({name}[1h]) > 0)" for name in LINK_COUNTERS]
    grown.append("count(npu_network_info)")  # the hccn_tool identity job (-ip, -lldp)
    wait_for(lambda: all(query(url, expr) for expr in grown), 240,
             "two passes of the link counters", **POLLING)


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    assert PROMETHEUS is not None, "prometheus is not installed: `make tools` installs it"
    tmp = tmp_path_factory.mktemp("fleet")
    (tmp / "home").mkdir()
    train_bin(tmp).parent.mkdir()
    train_bin(tmp).symlink_to(BIN / "npumon-sim-train")
    # one HOME for jobs and daemons: the simulated msprof looks for the job's socket there
    env = {k: v for k, v in os.environ.items()
           if k not in ("PROFILING_MODE", "NPUMON_SIM_MSPROF_HANG", "NPUMON_SIM_MSPROF_RAW_MB")}
    procs = Processes(f"{os.getpid()}-{tmp.name}", {**env, "HOME": str(tmp / "home")})
    try:
        jobs = {name: start_job(procs, tmp, name, STEP_SECONDS) for name in JOBS}
        url = start_prometheus(procs, tmp, start_nodes(procs, tmp))
        wait_for(lambda: query(url, 'count(up{job="npumon"} == 1)') == [3.0], 60,
                 "3 targets up", **POLLING)
        slow_down(procs, tmp, url, jobs["slowing"])
        wait_for_link_counters(url)
        yield url
    finally:
        stragglers = procs.close()
        if stragglers:
            warnings.warn(f"killed processes left after their parent stopped: {stragglers}",
                          stacklevel=1)


def api_query(url: str, expr: str) -> dict[str, Any]:
    return get_json(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))


def query(url: str, expr: str) -> list[float]:
    return [float(s["value"][1]) for s in api_query(url, expr)["data"]["result"]]


def substitute(expr: str) -> str:
    for variable, value in VARIABLES.items():
        expr = expr.replace(variable, value)
    return expr


def dashboard_exprs() -> list[tuple[str, str]]:
    """(where, query) for every panel target and query variable of every dashboard."""
    found: list[tuple[str, str]] = []
    for path in DASHBOARDS:
        dashboard = json.loads(path.read_text())
        rows = dashboard["panels"]
        panels = [*rows, *(p for row in rows for p in row.get("panels", []))]
        found += [(f"{path.stem} / {p['title']}", t["expr"])
                  for p in panels for t in p.get("targets", [])]
        found += [(f"{path.stem} / ${v['name']}",
                   v["query"]["query"].removeprefix("label_values(").rsplit(",", 1)[0])
                  for v in dashboard["templating"]["list"] if v["type"] == "query"]
    return [(where, substitute(expr)) for where, expr in found]


def test_every_dashboard_query_parses_and_returns_data(prometheus: str) -> None:
    exprs = dashboard_exprs()
    assert len(exprs) > 50 and any("npu_profile_bottleneck" in e for _, e in exprs)
    for where, expr in exprs:
        answer = api_query(prometheus, expr)
        assert answer["status"] == "success", (where, expr, answer)
    # Recording rules need an evaluation after the first scrapes, and the profiled workloads
    # a few captures: poll until every query answers.
    empty = exprs

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
    assert {s["metric"]["workload"] for s in api_query(
        prometheus, "npu_communication_link_bandwidth_bytes_per_second")["data"]["result"]} \
        == {"links"}


def pending(url: str) -> list[dict[str, str]]:
    return [a["metric"] for a in api_query(url, 'ALERTS{alertstate="pending"}')["data"]["result"]]


def has(alerts: list[dict[str, str]], **labels: str) -> bool:
    return any(labels.items() <= alert.items() for alert in alerts)


def node_of(url: str, name: str) -> str:
    chips = f'count by (instance) (npu_chip_info{{name="{name}"}})'
    return str(api_query(url, chips)["data"]["result"][0]["metric"]["instance"])


def test_expected_alerts_reach_pending(prometheus: str) -> None:
    instances = {t["labels"]["instance"]
                 for t in get_json(f"{prometheus}/api/v1/targets")["data"]["activeTargets"]}
    assert len(instances) == 3
    n910b, na3 = node_of(prometheus, "910B3"), node_of(prometheus, "Ascend910")
    expected = [
        {"alertname": "NpuThermalThrottling", "instance": n910b, "npu": "3"},
        {"alertname": "NpuTemperatureNearLimit", "instance": n910b, "npu": "3"},
        {"alertname": "NpuHealthCritical", "instance": n910b, "npu": "5"},
        # the fault table: 8C03A000 is restart_npu (pages), A4025021 not_handle (silent)
        {"alertname": "NpuFaultNeedsChipAction", "instance": n910b, "npu": "5",
         "code": "8C03A000", "level": "restart_npu", "severity": "critical"},
        {"alertname": "NpuAllocatedChipLowUtilization", "instance": n910b, "npu": "6"},
        {"alertname": "NpuAllocatedChipIdle", "instance": n910b, "npu": "6"},
        {"alertname": "NpuAllocatedChipLowUtilization", "instance": n910b, "npu": "6",
         "namespace": "research", "pod": "notebook"},
        {"alertname": "NpuAllocatedChipUnused", "instance": n910b, "npu": "7",
         "namespace": "research", "pod": "idle-notebook", "container": "jupyter"},
        {"alertname": "NpuThermalThrottling", "instance": n910b, "npu": "3",
         "namespace": "ml", "pod": "train-0"},
        {"alertname": "NpuWorkloadBottleneck", "instance": n910b, "workload": "convert",
         "kind": "format_conversion"},
        {"alertname": "NpuWorkloadBottleneck", "instance": n910b, "workload": "input",
         "kind": "input_pipeline"},
        {"alertname": "NpuStepTimeRegression", "instance": na3, "workload": "slowing"},
        {"alertname": "NpuNetworkLinkDownOnAllocatedChip", "instance": n910b, "npu": "0"},
        {"alertname": "NpuNetworkLinkFlapping", "instance": n910b, "npu": "2"},
        {"alertname": "NpuNetworkErrors", "instance": n910b, "npu": "4"},
        {"alertname": "NpuOpticalRxPowerOutOfRange", "instance": n910b, "npu": "1", "lane": "0"},
        {"alertname": "NpuNetworkPfcStorm", "instance": n910b, "npu": "5"},
        {"alertname": "NpuHccsCrcErrors", "instance": n910b, "npu": "7", "link": "6"},
        {"alertname": "NpuSioCrcErrors", "instance": na3, "npu": "4", "chip": "1"},
    ]
    with contextlib.suppress(AssertionError):  # the assertion below names what is missing
        wait_for(lambda: all(has(pending(prometheus), **e) for e in expected), 30,
                 "alerts pending", **POLLING)
    alerts = pending(prometheus)
    assert [e for e in expected if not has(alerts, **e)] == [], "not pending"
    # NPU 3 of the A3 node idles with only the firmware's HBM: not allocated, so not an alert.
    assert not any(a["alertname"].startswith("NpuAllocatedChip") and a["instance"] == na3
                   and a["npu"] == "3" for a in alerts)
    # A chip whose pod runs a process is not "unused"; only the idle notebook's chip is.
    assert [a["npu"] for a in alerts if a["alertname"] == "NpuAllocatedChipUnused"] == ["7"]
    # Busy, allocated chips do not count as low utilization.
    assert not has(alerts, alertname="NpuAllocatedChipLowUtilization", instance=n910b, npu="0")
    # Healthy ports and links raise nothing; the 310P node has no hccn_tool and is not failing.
    assert not has(alerts, alertname="NpuNetworkLinkDownOnAllocatedChip", npu="3")
    assert not has(alerts, alertname="NpuOpticalRxPowerOutOfRange", npu="2")
    assert not has(alerts, alertname="NpuHccsCrcErrors", npu="0")
    assert not any(a["alertname"] == "NpumonSourceFailing" and a["source"].startswith("hccn")
                   for a in alerts)
    assert not any(a.get("code") == "A4025021" for a in alerts)  # not_handle never alerts
    # Steady jobs are no regression; every capture succeeded or saw its job end.
    assert not has(alerts, alertname="NpuStepTimeRegression", workload="convert")
    assert not has(alerts, alertname="NpuStepTimeRegression", workload="input")
    assert not has(alerts, alertname="NpumonCapturesFailing")
    # Both bottleneck workloads are diagnosed with exactly their own cause.
    assert not has(alerts, alertname="NpuWorkloadBottleneck", workload="convert",
                   kind="input_pipeline")
    assert not has(alerts, alertname="NpuWorkloadBottleneck", workload="input",
                   kind="format_conversion")
