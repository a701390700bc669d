"""One training job on two simulated nodes, seen whole: the same identity on both, captures in the
same slot over the same steps, the slow rank named across nodes by a real Prometheus with the
shipped rules, and its finding naming its own chip's throttling; the node without it says it saw
nothing. A second job on the first node stays its own workload.

The job is four npumon-sim-train ranks (torchrun's environment: MASTER_ADDR/MASTER_PORT, RANK,
WORLD_SIZE) started on a shared step epoch (a synchronous job: step k begins at the same time
on every rank); node "a" runs ranks 0 and 1 on NPUs 0 and 1, node "b" ranks 2 and 3, and the
simulator's npu-smi on node "b" overheats NPU 1 (rank 3), which clocks down and computes
longer. Each daemon discovers the ranks in its npu-smi process table (the scenario lists their
real PIDs) and captures them with the simulator's msprof. NpuSlowestRank's `for` is divided by
SCALE through the chart's tuning path (tests/fleet/tuned_rules.py)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from fleet_processes import Processes
from fleet_scenario import BIN, POLLING, PROMETHEUS, api_query, query
from tuned_rules import write_scaled

from tests.helpers.wait import wait_for

ALERT = "NpuSlowestRank"
SCALE = 60
INTERVAL = 30  # seconds between a workload's captures (its slot's period)
STEP_SECONDS = 0.2
SLOW_STEP_SECONDS = 0.3  # rank 3 on its throttled chip
LAUNCHER = {"MASTER_ADDR": "llama-master-0.llama", "MASTER_PORT": "23456", "WORLD_SIZE": "4"}
JOB = "llama-master-0.llama:23456"
OTHER = {"MASTER_ADDR": "bert-master-0.bert", "MASTER_PORT": "23456", "WORLD_SIZE": "1"}
SCENARIO = """
family: 910b
npus: {npus}
npu_smi_version: "25.2.2"
epoch: {epoch}
seed: 41
load: {{base_percent: 80, amplitude_percent: 5}}
processes:
{processes}
events:
{events}
"""


def _start_rank(
    procs: Processes, tmp: Path, rank: int, npu: int, epoch: float, env: dict[str, str]
) -> int:
    step = SLOW_STEP_SECONDS if rank == 3 and env is LAUNCHER else STEP_SECONDS
    argv = [
        str(BIN / "npumon-sim-train"),
        "--profile",
        "balanced",
        "--step-seconds",
        f"{step:g}",
        "--device",
        str(npu),
        "--epoch",
        f"{epoch:.3f}",
    ]
    job = procs.start(
        argv,
        tmp / f"rank-{env['MASTER_ADDR']}-{rank}.log",
        {**env, "RANK": str(rank), "PROFILING_MODE": "dynamic"},
    )
    wait_for((tmp / "home" / f"dynamic_profiling_socket_{job.pid}").exists, 10, f"rank {rank}")
    return job.pid


def _node(tmp: Path, name: str, pids: dict[int, int], events: str) -> Path:
    """A node whose npu-smi shows ``pids`` (npu -> pid) and the profiler discovering them."""
    processes = "\n".join(
        f"  - {{npu: {npu}, pid: {pid}, name: python, hbm_mb: 30000}}" for npu, pid in pids.items()
    )
    scenario = tmp / f"scenario-{name}.yaml"
    scenario.write_text(
        SCENARIO.format(
            npus=max(pids) + 1, epoch=time.time() - 600, processes=processes, events=events
        )
    )
    config: dict[str, Any] = {
        "npu_smi": {"command": [str(BIN / "npumon-sim-npu-smi"), "--scenario", str(scenario)]},
        "chips": {"intervals": {"table": "1s", "detail": "1s", "health": "5s"}},
        "state_directory": str(tmp / f"state-{name}"),
        "profiling": {
            "enabled": True,
            "interval": f"{INTERVAL}s",
            "duration": "2s",
            "discover": True,
            "msprof": {"command": [str(BIN / "npumon-sim-msprof")]},
            "timeouts": {"start": "10s", "stop": "10s", "export": "20s", "analysis": "30s"},
            "disk_quota": "256MiB",
            "keep_raw": "none",
            "baseline": {"min_captures": 1},
            "thresholds": {"regression_min_steps": 2},
        },
    }
    path = tmp / f"node-{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _capture_meta(tmp: Path, node: str, workload: str) -> dict[str, Any] | None:
    path = tmp / f"state-{node}" / "reports" / f"{workload}.capture.json"
    try:
        meta: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return meta if meta.get("slot") is not None else None


@pytest.mark.fleet
def test_one_job_on_two_nodes_is_seen_whole(tmp_path: Path) -> None:
    assert PROMETHEUS is not None, "prometheus is not installed: `make tools` installs it"
    rules = tmp_path / "tuned-rules.yml"
    write_scaled(rules, ALERT, SCALE)
    (tmp_path / "home").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPUMON_SIM_MSPROF")}
    procs = Processes(f"{os.getpid()}-{tmp_path.name}", {**env, "HOME": str(tmp_path / "home")})
    epoch = time.time()
    try:
        a = {n: _start_rank(procs, tmp_path, n, n, epoch, LAUNCHER) for n in (0, 1)}
        b = {n - 2: _start_rank(procs, tmp_path, n, n - 2, epoch, LAUNCHER) for n in (2, 3)}
        a[2] = _start_rank(procs, tmp_path, 0, 2, epoch, OTHER)  # another job, also `python`
        hot = (
            "  - {kind: overheat, npu: 1, temperature_celsius: 96, throttled_mhz: 1100,"
            " load_percent: 96}"
        )
        ports = {
            node: procs.npumon(BIN, _node(tmp_path, node, pids, events), tmp_path / f"{node}.log")
            for node, pids, events in (("a", a, "  []"), ("b", b, hot))
        }
        scrape = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(rules)],
            "scrape_configs": [
                {
                    "job_name": "npumon",
                    "static_configs": [
                        {"targets": [f"127.0.0.1:{p}"], "labels": {"node": n}}
                        for n, p in ports.items()
                    ],
                }
            ],
        }
        (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(scrape))
        url = procs.prometheus(PROMETHEUS, tmp_path)
        metas: dict[str, dict[str, Any] | None] = {}

        def same_slot() -> bool:
            """Both nodes' latest captures of the job are of one slot (node a, busy with two
            jobs, skips the slots it reaches late)."""
            metas.update({n: _capture_meta(tmp_path, n, JOB) for n in ("a", "b")})
            slots = {m["slot"] if m else None for m in metas.values()}
            return None not in slots and len(slots) == 1

        wait_for(same_slot, 5 * INTERVAL + 60, "a capture of the job in one slot on both nodes")
        firing = f'ALERTS{{alertname="{ALERT}", alertstate="firing"}}'
        wait_for(
            lambda: bool(query(url, firing)),
            2 * INTERVAL + 15 + 60,
            f"{ALERT} to fire",
            **POLLING,
        )
        alerts = [s["metric"] for s in _api(url, firing)]
        # node a's other job shows once it has had its turn (a capture)
        wait_for(
            lambda: len(query(url, "npu_workload_info")) == 3,
            3 * INTERVAL + 60,
            "both jobs of node a and the job of node b",
            **POLLING,
        )
        sources = [s["metric"] for s in _api(url, "npu_workload_info")]
        report = json.loads((tmp_path / "state-b" / "reports" / f"{JOB}.json").read_text())
    finally:
        procs.close()

    # the same identity on both nodes, and the second job on node a its own workload
    named = {(m["node"], m["workload"], m["workload_source"]) for m in sources}
    assert named == {
        ("a", JOB, "master_addr"),
        ("b", JOB, "master_addr"),
        ("a", "bert-master-0.bert:23456", "master_addr"),
    }
    # the same slot, and (a synchronous job) the same global steps, within one step: compared
    # between ranks 0 and 2 (the simulator's slow rank 3 steps slower, so numbers its own)
    meta_a, meta_b = metas["a"], metas["b"]
    assert meta_a is not None and meta_b is not None
    assert meta_a["slot"] == meta_b["slot"]
    # Each node starts msprof at the slot; its attach then takes its own time on a loaded
    # machine (a process start, the prompt): within two steps of 200 ms here
    first_a, first_b = meta_a["rank_steps"]["rank0"][0], meta_b["rank_steps"]["rank2"][0]
    print(f"first captured step: node a {first_a}, node b {first_b}")
    assert abs(first_a - first_b) <= 2, (meta_a["rank_steps"], meta_b["rank_steps"])
    # the cross-node rule names rank 3 on node b's NPU 1, and never the other job
    assert [(m["node"], m["workload"], m["rank"], m.get("npu")) for m in alerts] == [
        ("b", JOB, "rank3", "1")
    ]
    # what node b saw of rank 3's chip in the window names the throttling; rank 2's chip and
    # node a's ranks' hardware were quiet, and say so. (The simulated msprof profile is graph
    # mode, whose fp_bp phase the analysis does not spread across ranks, so no slow_rank finding
    # carries the sentence here: tests/daemon/analysis/test_real_profiles.py checks that part.)
    said_b = {h["rank"]: h["said"] for h in meta_b["hardware"]}
    assert said_b[3].startswith("rank 3 on NPU 1: throttled by thermal"), said_b
    assert "AI Core clock 1.1 of 1.8 GHz" in said_b[3], said_b
    assert "nothing seen on this node" in said_b[2], said_b
    assert report["summary"]["workload"] == JOB
    said_a = [h["said"] for h in meta_a["hardware"]]
    assert len(said_a) == 2 and all("nothing seen on this node" in s for s in said_a), said_a


def _api(url: str, expr: str) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = api_query(url, expr)["data"]["result"]
    return result
