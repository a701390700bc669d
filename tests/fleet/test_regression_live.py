"""The catalog's step-time regression (regression-10pct-noise1) and its must-not-page twin
(no-regression-noise1) through a real npumon profiling simulated jobs with the simulator's
msprof, and a real Prometheus scraping it with the shipped rules, agree with the harness
(promtool) on a clock scaled down SCALE times.

The catalog captures every 10 minutes and regresses from the 7th capture (60 min): the one
after the first the gate judges (the 6th: 5 earlier captures, the daemon's default
baseline.min_captures); NpuStepTimeRegression's `for: 15m` asks for two slow captures in a row.
Here npumon captures every 10m / SCALE, the catalog's 50 steps a capture (of STEP_SECONDS: the
gate judges ratios, so the step's length need not scale), the gate keeps its default thresholds
but judges after MIN_CAPTURES earlier captures, and the rules are rendered through the chart's
tuning path with `for` divided by SCALE. The regressed job is restarted 10 % slower once the
gate has judged a capture (MIN_CAPTURES + 1 captures in); the steady job runs on unchanged. The
promtool replay is the catalog scenario with the same baseline and its regression moved to the
capture after the first judged one, so both engines see the same sequence of captures. The
simulated job's steps vary by up to 5 % (uniform), not the catalog's 1 % Gaussian: the median of
50 steps moves far less than the 3 % floor of the band either way.

Both engines must fire for the regressed workload only, with the delay from the first slow
capture read by Prometheus to the first firing evaluation within one scrape plus one evaluation
interval of each other. On a loaded machine a capture and its analysis take longer than EVERY and
the live captures come further apart; the delay compared, from the first slow capture to firing,
is still the rule's `for` on both engines. Times compared are Prometheus' sample timestamps and
promtool's evaluation times: the test only waits on them."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from fleet_processes import Processes
from fleet_scenario import BIN, POLLING, PROMETHEUS, api_query, query
from tuned_rules import write_scaled

from npumon.simulator.fault_catalog import Chip, Scenario, load, seconds
from tests.alerts.engines import run_promtool
from tests.helpers.wait import wait_for

ALERT = "NpuStepTimeRegression"
SCALE = 100
STEP = 1  # seconds between scrapes and between rule evaluations
CATALOG = load()
SLOWING = next(s for s in CATALOG.scenarios if s.name == "regression-10pct-noise1")
STEADY = next(s for s in CATALOG.scenarios if s.name == "no-regression-noise1")
EVENT = SLOWING.events[0]
EVERY = seconds(EVENT.get("every", "10m")) / SCALE  # seconds between captures
STEPS = int(EVENT["steps"])  # steps a capture holds
# earlier captures the gate needs before it judges: two, so the baseline has a spread (a MAD)
MIN_CAPTURES = 2
# one training step: what the simulated job can keep without spinning; a capture holds STEPS
STEP_SECONDS = 0.02
SLOWING_WORKLOAD, STEADY_WORKLOAD = "slowing", "steady"


def _job_bin(tmp: Path, workload: str) -> Path:
    """npumon-sim-train through a link of the workload's own in this test's tmp dir: each
    profiling target matches its job by that path, and never a job of another test."""
    return tmp / "jobs" / workload / "npumon-sim-train"


def _start_job(procs: Processes, tmp: Path, workload: str, step: float) -> subprocess.Popen[bytes]:
    """A job msprof can attach to (PROFILING_MODE=dynamic: it creates its socket in HOME)."""
    link = _job_bin(tmp, workload)
    if not link.exists():
        link.parent.mkdir(parents=True)
        link.symlink_to(BIN / "npumon-sim-train")
    argv = [str(link), "--profile", "balanced", "--step-seconds", f"{step:g}"]
    job = procs.start(argv, tmp / f"job-{workload}.log", {"PROFILING_MODE": "dynamic"})
    socket = tmp / "home" / f"dynamic_profiling_socket_{job.pid}"
    wait_for(socket.exists, 10, f"job {workload} up")
    return job


def _node_config(tmp: Path) -> Path:
    """The catalog's capture scaled: one of each job every EVERY seconds, of STEPS steps; the
    gate's thresholds at their defaults, judging after MIN_CAPTURES earlier captures."""
    config: dict[str, Any] = {
        "npu_smi": {"command": [str(BIN / "npumon-sim-npu-smi"), "--scenario", "910b-8"]},
        "chips": {"intervals": {"table": "5s", "detail": "60s", "health": "60s"}},
        "state_directory": str(tmp / "state"),
        "profiling": {
            "enabled": True,
            # the daemon captures one workload per scheduler tick (every profiling.interval
            # here): the two jobs alternate, each captured every EVERY while the machine keeps up
            "interval": f"{EVERY / 2:g}s",
            "duration": f"{STEP_SECONDS * STEPS:g}s",
            "discover": False,
            "targets": [
                {"workload": name, "cmdline": f" {re.escape(str(_job_bin(tmp, name)))} "}
                for name in (SLOWING_WORKLOAD, STEADY_WORKLOAD)
            ],
            "msprof": {"command": [str(BIN / "npumon-sim-msprof")]},
            "disk_quota": "256MiB",
            "keep_raw": "none",
            "baseline": {"min_captures": MIN_CAPTURES},
        },
    }
    path = tmp / "node.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _prometheus_config(path: Path, rules: Path, port: int) -> None:
    config: dict[str, Any] = {
        "global": {"scrape_interval": f"{STEP}s", "evaluation_interval": f"{STEP}s"},
        "rule_files": [str(rules)],
        "scrape_configs": [
            {"job_name": "npumon", "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
        ],
    }
    path.write_text(yaml.safe_dump(config))


def _samples(url: str, selector: str) -> list[tuple[dict[str, str], float, float]]:
    """Every raw sample of ``selector`` in the last 10 minutes: (labels, time, value)."""
    result = api_query(url, f"{selector}[10m]")["data"]["result"]
    return [(s["metric"], float(t), float(v)) for s in result for t, v in s["values"]]


def _replay(scenario: Scenario, workload: str) -> Scenario:
    """The catalog scenario on the scaled clock, its workload named as the live one, judged
    after MIN_CAPTURES earlier captures and slower (if it regresses) from the capture after the
    first judged one, as the live jobs."""
    event = scenario.events[0]
    assert seconds(event["start"]) == 6 * seconds(event.get("every", "10m")), "catalog changed"
    return Scenario(
        name=f"{scenario.name}-scaled",
        kind=scenario.kind,
        about=f"{scenario.about}, scaled 1/{SCALE}",
        duration=scenario.duration / SCALE,
        fault_start=(MIN_CAPTURES + 1) * EVERY,
        events=(
            {
                **event,
                "workload": workload,
                "every": EVERY,
                "min_captures": MIN_CAPTURES,
                "start": (MIN_CAPTURES + 1) * EVERY,
            },
        ),
        chips=(Chip(npu=0),),
        nodes=1,
        expect=scenario.expect,
        also=scenario.also,
        resolves=None,
        step=STEP,
        seed=scenario.seed,
    )


@pytest.mark.fleet
def test_a_scaled_step_time_regression_fires_as_the_harness_says(tmp_path: Path) -> None:
    assert PROMETHEUS is not None, "prometheus is not installed: `make tools` installs it"
    rules = tmp_path / "tuned-rules.yml"
    tuned_for = write_scaled(rules, ALERT, SCALE)["for"]
    (tmp_path / "home").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPUMON_SIM_MSPROF")}
    procs = Processes(f"{os.getpid()}-{tmp_path.name}", {**env, "HOME": str(tmp_path / "home")})
    slower = STEP_SECONDS * (1 + float(EVENT["regression"]))
    try:
        slowing = _start_job(procs, tmp_path, SLOWING_WORKLOAD, STEP_SECONDS)
        _start_job(procs, tmp_path, STEADY_WORKLOAD, STEP_SECONDS)
        port = procs.npumon(BIN, _node_config(tmp_path), tmp_path / "npumon.log")
        _prometheus_config(tmp_path / "prometheus.yml", rules, port)
        url = procs.prometheus(PROMETHEUS, tmp_path)
        # the catalog's regression starts with the capture after the first the gate judged
        judged = f'npu_step_regression_judged{{workload="{SLOWING_WORKLOAD}"}} == 1'
        wait_for(
            lambda: bool(query(url, judged)),
            4 * (MIN_CAPTURES + 1) * EVERY + 60,
            "a judged capture",
            **POLLING,
        )
        procs.stop(slowing)
        _start_job(procs, tmp_path, SLOWING_WORKLOAD, slower)
        firing = f'ALERTS{{alertname="{ALERT}", alertstate="firing"}}'
        # generous: three captures and the scaled for, and slack for a loaded machine; the
        # figures compared below are the engines', not the test's
        wait_for(
            lambda: bool(query(url, firing)),
            3 * EVERY + seconds(tuned_for) + 60,
            f"{ALERT} to fire",
            **POLLING,
        )
        p50 = _samples(
            url, f'npu_step_duration_seconds{{workload="{SLOWING_WORKLOAD}", stat="p50"}}'
        )
        onset = min(t for _, t, v in p50 if v > (STEP_SECONDS + slower) / 2)
        live = {labels["workload"] for labels, _, _ in _samples(url, firing)}
        live_delay = min(t for _, t, _ in _samples(url, firing)) - onset
        steady_judged = query(url, f'npu_step_regression_judged{{workload="{STEADY_WORKLOAD}"}}')
        steady_alerts = _samples(
            url, f'ALERTS{{alertname="{ALERT}", workload="{STEADY_WORKLOAD}"}}'
        )
    finally:
        procs.close()

    assert steady_judged == [1.0], "the steady job's captures were never judged"
    assert not steady_alerts, f"the steady job went pending or fired: {steady_alerts}"
    replays = [_replay(SLOWING, SLOWING_WORKLOAD), _replay(STEADY, STEADY_WORKLOAD)]
    harness = [f for f in run_promtool(rules, replays, tmp_path, STEP) if f.alertname == ALERT]
    assert {dict(f.labels)["workload"] for f in harness} == live == {SLOWING_WORKLOAD}, (
        harness,
        live,
    )
    harness_delay = min(f.first for f in harness) - replays[0].events[0]["start"]
    print(
        f"{ALERT} 1/{SCALE} (for {tuned_for}): fired {live_delay:g} s after the first slow"
        f" capture on Prometheus, {harness_delay:g} s on promtool"
    )
    assert abs(live_delay - harness_delay) <= 2 * STEP, (live_delay, harness_delay)
