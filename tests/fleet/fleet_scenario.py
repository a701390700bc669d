"""The live fleet scenario: three simulated nodes (two profiling simulated training jobs) in two
clusters, a dead target, and a real Prometheus with the shipped rules scraping them."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from fleet_processes import Processes

from tests.helpers.http import get_json
from tests.helpers.processes import PROMETHEUS_LISTENING, reported_port
from tests.helpers.wait import wait_for

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PROMETHEUS = shutil.which("prometheus")
RULES = ROOT / "config" / "prometheus" / "npumon-rules.yml"
DASHBOARDS = sorted((ROOT / "grafana" / "dashboards").glob("*.json"))
VARIABLES = {
    "$cluster": ".*",
    "$job": "npumon",
    "$instance": ".*",
    "$npu": ".*",
    "$workload": ".*",
    "$namespace": ".*",
    "$pod": ".*",
    "$__range": "2m",
    # Grafana's floor for it with a data source's default 15 s scrape interval (4 x 15 s)
    "$__rate_interval": "1m",
    # the fleet's scrape interval (Grafana's floor for it: the data source's scrape interval)
    "$__interval": "1s",
    # The fleet's alerts stay pending (rules_with_long_for: `for` 1 h), so the dashboards'
    # firing alerts are read with the pending ones.
    'alertstate="firing"': 'alertstate=~"firing|pending"',
}

# Profiled training jobs (npumon-sim-train), by workload name: the node whose daemon profiles
# it and the simulated workload kind. "slowing" later restarts with a longer step (a regression).
# "links" is captured through its torch_npu config file, not msprof: only torch_npu exports have
# communication.json, so only it gives the link bandwidth (its HCCS is slow: slow_link).
JOBS = {
    "convert": ("n910b", "conversion_bound"),
    "input": ("n910b", "input_bound"),
    "slowing": ("na3", "balanced"),
    "links": ("n910b", "slow_link"),
}
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


def start_job(
    procs: Processes, tmp: Path, name: str, step_seconds: float
) -> subprocess.Popen[bytes]:
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
    first capture on (default: five), so a regression can show within the test's minute."""
    # the command line is `python3 <script> ...`: the script path follows the interpreter
    targets = [
        {
            "workload": name,
            "cmdline": f" {re.escape(str(train_bin(tmp)))} --profile {kind} ",
            **(
                {"mode": "torch_npu_config", "config_dir": str(config_dir(tmp, name))}
                if name in TORCH_CONFIG
                else {}
            ),
        }
        for name, (where, kind) in JOBS.items()
        if where == node
    ]
    return {
        "enabled": True,
        "interval": "1s",
        "duration": "500ms",
        "discover": False,
        "targets": targets,
        "msprof": {"command": [str(BIN / "npumon-sim-msprof")]},
        "timeouts": {"start": "10s", "stop": "10s", "export": "20s", "analysis": "20s"},
        "disk_quota": "256MiB",
        "baseline": {"min_captures": 1},
        # captures of a few steps (500 ms of 50 ms steps; 4 torch_npu steps) still vote here
        "steps": 4,
        "thresholds": {"regression_min_steps": 2},
    }


def node_config(tmp: Path, name: str, scenario: str | Path) -> Path:
    config: dict[str, Any] = {
        "npu_smi": {"command": [str(BIN / "npumon-sim-npu-smi"), "--scenario", str(scenario)]},
        "chips": {
            # a full health pass asks 7 queries per chip (health, ecc, memory, hccs,
            # hccs-bw, pcie-err, sio-info): every 5 s, not every second, on 3 nodes. The
            # fixture waits for two health passes of the A3 node (its SIO counter): a detail
            # pass every 10 s, not back to back, leaves those passes the CPU; one detail pass
            # is all the dashboards and alerts need
            "intervals": {"table": "1s", "detail": "10s", "health": "5s"},
        },
        "state_directory": str(tmp / f"state-{name}"),
        # only n910b has a kubelet: the others judge allocation by memory
        "kubernetes": {"pod_resources_socket": str(tmp / f"kubelet-{name}.sock"), "interval": "1s"},
    }
    if name == "n910b":  # the 310P node has no hccn_tool (the source stays off there); the A3
        # node leaves it off too, to keep the machine's load down (its ports: tests/simulator)
        config["hccn_tool"] = {
            "command": [str(BIN / "npumon-sim-hccn-tool"), "--scenario", str(scenario)],
            "interval": "5s",
        }
    if any(where == name for where, _ in JOBS.values()):
        config["profiling"] = profiling(tmp, name)
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def start_nodes(procs: Processes, tmp: Path) -> list[int]:
    busy = "\n".join(
        f"  - {{npu: {n}, pid: {19330 + n}, name: python3, hbm_mb: 58472}}"
        for n in (0, 1, 2, 3, 4, 5)
    )
    scenario = tmp / "910b-test.yaml"
    scenario.write_text(SCENARIO_910B.format(epoch=time.time() - 600, processes=busy))
    procs.start(
        [
            str(BIN / "npumon-sim-kubelet"),
            "--scenario",
            str(scenario),
            "--socket",
            str(tmp / "kubelet-n910b.sock"),
        ],
        tmp / "kubelet.log",
    )
    wait_for((tmp / "kubelet-n910b.sock").exists, 10, "the fake kubelet's socket")
    nodes: dict[str, str | Path] = {"n910b": scenario, "na3": "a3-8x2", "n310p": "310p-duo"}
    started = {}
    for name, scen in nodes.items():  # port 0: each daemon logs the port it got
        log = tmp / f"{name}.log"
        started[log] = procs.start(
            [
                str(BIN / "npumon"),
                "run",
                "--config",
                str(node_config(tmp, name, scen)),
                "--web.listen-address",
                "127.0.0.1:0",
            ],
            log,
        )
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


def closed_port() -> int:
    """A loopback port nothing listens on: the scenario's dead target."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def scrape_config(ports: list[int]) -> dict[str, Any]:
    """Cluster "a": the 910B and A3 nodes; cluster "b": the 310P node and a dead target."""
    return {
        "global": {"scrape_interval": "1s"},
        "scrape_configs": [
            {
                "job_name": "npumon",
                "static_configs": [
                    {
                        "targets": [f"127.0.0.1:{p}" for p in ports[:2]],
                        "labels": {"cluster": "a"},
                    },
                    {
                        "targets": [f"127.0.0.1:{p}" for p in [*ports[2:], closed_port()]],
                        "labels": {"cluster": "b"},
                    },
                ],
            }
        ],
    }


def start_prometheus(procs: Processes, tmp: Path, scrape: dict[str, Any]) -> str:
    config = {
        **scrape,
        "global": {**scrape["global"], "evaluation_interval": "1s"},
        "rule_files": [str(rules_with_long_for(tmp))],
    }
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    assert PROMETHEUS is not None
    log = tmp / "prometheus.log"
    process = procs.start(
        [
            PROMETHEUS,
            f"--config.file={tmp / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp / 'tsdb'}",
            "--web.listen-address=127.0.0.1:0",
        ],
        log,
    )
    return f"http://127.0.0.1:{reported_port(log, PROMETHEUS_LISTENING, process)}"


def start_victoriametrics(procs: Processes, tmp: Path, scrape: dict[str, Any]) -> str:
    """VictoriaMetrics scraping the same targets with the same scrape config as Prometheus, and
    vmalert evaluating the same rules (every `for:` at 1h) at the same interval."""
    folder = tmp / "victoriametrics"
    folder.mkdir()
    (folder / "scrape.yml").write_text(yaml.safe_dump(scrape))
    url = procs.victoriametrics(folder, folder / "scrape.yml")
    # no alert fires (every `for:` is 1h): the notifier vmalert insists on is a closed port
    procs.vmalert(
        folder, rules_with_long_for(tmp), url, "1s", "5s", f"http://127.0.0.1:{closed_port()}"
    )
    return url


def slow_down(procs: Processes, tmp: Path, url: str, job: subprocess.Popen[bytes]) -> None:
    """Once "slowing" has a baseline, its next run takes 3x as long per step. That run ends after
    npumon captured it, so the regression stays the latest capture. The median is asked: a
    capture of a few steps exports no p99 (PERCENTILE_MIN_STEPS)."""
    has_baseline = 'npu_step_duration_baseline_seconds{workload="slowing"}'
    wait_for(
        lambda: bool(query(url, has_baseline)), 40, "a step-time baseline of slowing", **POLLING
    )
    procs.stop(job)
    slower = start_job(procs, tmp, "slowing", SLOWER_STEP_SECONDS)
    tripled = (
        'npu_step_duration_seconds{workload="slowing", stat="p50"} '
        "> ignoring (stat) 2 * npu_step_duration_baseline_seconds"
    )
    wait_for(lambda: bool(query(url, tripled)), 30, "a capture of the slower run", **POLLING)
    procs.stop(slower)


# Counters read by per-chip passes (hccn_tool: 6 calls per chip; the health tier's full pass: 7
# per chip, 104 calls on the A3 node) need two passes before rate() and increase() answer; on a
# loaded machine a pass takes tens of seconds, so the fixture waits for them (seconds when idle).
LINK_COUNTERS = (
    "npu_network_carrier_up_changes_total",
    "npu_network_receive_errors_total",
    "npu_network_pause_frames_total",
    "npu_hccs_errors_total",
    "npu_sio_crc_errors_total",
)


# What every dashboard test needs to have happened: two passes of every link counter, the
# ports' identity (the hccn_tool identity job: -ip, -lldp), the Alarm chip read by the health
# tier and recorded by the rules (the Unhealthy panels).
READY = (
    *(f"count(increase({name}[1h]) > 0)" for name in LINK_COUNTERS),
    "count(npu_network_info)",
    "sum(npu_node:chips_unhealthy:count) > 0",
)


def wait_for_link_counters(url: str) -> None:
    """Every READY expression answers."""
    wait_for(
        lambda: all(query(url, expr) for expr in READY),
        240,
        "two passes of the link counters",
        **POLLING,
    )


def substitute_variables(expr: str) -> str:
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
        found += [
            (f"{path.stem} / {p['title']}", t["expr"]) for p in panels for t in p.get("targets", [])
        ]
        found += [
            (
                f"{path.stem} / ${v['name']}",
                v["query"]["query"].removeprefix("label_values(").rsplit(",", 1)[0],
            )
            for v in dashboard["templating"]["list"]
            if v["type"] == "query"
        ]
    return [(where, substitute_variables(expr)) for where, expr in found]


def api_query(url: str, expr: str) -> dict[str, Any]:
    return get_json(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))


def query(url: str, expr: str) -> list[float]:
    return [float(s["value"][1]) for s in api_query(url, expr)["data"]["result"]]


@dataclass(frozen=True)
class Fleet:
    """The running scenario: Prometheus' URL, VictoriaMetrics' (None: not started), the scrape
    config both use, and the processes (a test may start more under them)."""

    prometheus: str
    victoriametrics: str | None
    scrape: dict[str, Any]
    tmp: Path
    procs: Processes


@contextlib.contextmanager
def running_fleet(
    tmp_path_factory: pytest.TempPathFactory, victoriametrics: bool = False
) -> Iterator[Fleet]:
    """Starts the scenario; yields it once every query can answer on Prometheus.
    ``victoriametrics``: VictoriaMetrics and vmalert too, started with Prometheus."""
    assert PROMETHEUS is not None, "prometheus is not installed: `make tools` installs it"
    tmp = tmp_path_factory.mktemp("fleet")
    (tmp / "home").mkdir()
    train_bin(tmp).parent.mkdir()
    train_bin(tmp).symlink_to(BIN / "npumon-sim-train")
    # one HOME for jobs and daemons: the simulated msprof looks for the job's socket there
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PROFILING_MODE", "NPUMON_SIM_MSPROF_HANG", "NPUMON_SIM_MSPROF_RAW_MB")
    }
    procs = Processes(f"{os.getpid()}-{tmp.name}", {**env, "HOME": str(tmp / "home")})
    try:
        jobs = {name: start_job(procs, tmp, name, STEP_SECONDS) for name in JOBS}
        scrape = scrape_config(start_nodes(procs, tmp))
        url = start_prometheus(procs, tmp, scrape)
        vm = start_victoriametrics(procs, tmp, scrape) if victoriametrics else None
        wait_for(
            lambda: query(url, 'count(up{job="npumon"} == 1)') == [3.0],
            60,
            "3 targets up",
            **POLLING,
        )
        slow_down(procs, tmp, url, jobs["slowing"])
        wait_for_link_counters(url)
        yield Fleet(url, vm, scrape, tmp, procs)
    finally:
        stragglers = procs.close()
        if stragglers:
            warnings.warn(
                f"killed processes left after their parent stopped: {stragglers}", stacklevel=1
            )


# (dashboard, panel title, metric) of dashboard targets whose metric may add nothing to the
# answer in this scenario, and why. test_dashboards_live.py checks each one still is.
MAY_BE_EMPTY: dict[tuple[str, str, str], str] = {
    (
        "npumon-fleet",
        "Rejected values, state errors, skipped families",
        "fleet:npumon_values_rejected:sum",
    ): "npumon_values_rejected_total is exported once npumon rejects a value; none is rejected",
    (
        "npumon-fleet",
        "Rejected values, state errors, skipped families",
        "fleet:npumon_state_errors:sum",
    ): "npumon_state_errors_total is exported once a state file cannot be read or written",
    **{
        ("npumon-attention", title, "fleet:alerts_firing:count"): (
            "the fleet's alerts stay pending (rules_with_long_for): none is recorded as firing"
        )
        for title in ("Firing alerts by severity", "Firing alerts by name")
    },
    **{
        ("npumon-node", "UB links (Ascend 950): state, lanes, bandwidth", name): (
            "UB ports are the Ascend 950's and this fleet has none (tests/e2e/test_950.py)"
        )
        for name in ("npu_ub_link_state", "npu_ub_lanes", "npu_ub_bandwidth_bytes_per_second")
    },
}


def may_be_empty(dashboard: str, title: str, names: set[str]) -> bool:
    """Whether every metric of a target may be absent in the scenario (MAY_BE_EMPTY)."""
    return bool(names) and all((dashboard, title, name) in MAY_BE_EMPTY for name in names)
