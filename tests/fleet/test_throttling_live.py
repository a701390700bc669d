"""The catalog's thermal-10m fault (one 10-minute throttling episode) through a real Prometheus
scraping a simulated node agrees with the harness (promtool), on a clock scaled down 20 times.

NpuThermalThrottling judges a 20-minute share of time, so the rules are rendered through the
chart's own tuning path (prometheusRule.alerts.NpuThermalThrottling: window and for, divided by
SCALE) and the episode is scaled the same way: 30 s of overheating in the simulator's npu-smi
(reaching the temperature limit after 3 s, as the catalog's first scrape reads `unknown`), on a
two-chip node read every STEP seconds. The
same rendered rules and the same scaled timeline go through promtool (tests/alerts/engines.py).
Both must fire, on NPU 0 only, with the delay from the first throttled scrape to the first firing
evaluation within one scrape plus one evaluation interval of each other (the phase of Prometheus'
scrape and evaluation clocks against the first throttled reading).

Times compared are the engines' own (Prometheus' sample timestamps, promtool's evaluation
times): the test only waits on them."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from fleet_processes import Processes
from fleet_scenario import BIN, POLLING, PROMETHEUS, api_query
from tuned_rules import write_scaled

from npumon.simulator.fault_catalog import Chip, Scenario, load, seconds
from tests.alerts.engines import run_promtool
from tests.helpers.wait import wait_for

ALERT = "NpuThermalThrottling"
SCALE = 20
CATALOG = load()
FAULT = next(s for s in CATALOG.scenarios if s.name == "thermal-10m")
EVENT = FAULT.events[0]
EPISODE = (seconds(EVENT["end"]) - seconds(EVENT["start"])) / SCALE
RAMP = 60.0 / SCALE  # the simulator's default ramp to the limit, scaled
STEP = 2  # seconds between scrapes, between npu-smi reads and between rule evaluations
LEAD = 20.0  # seconds after the simulator's epoch when the episode starts
SCENARIO = """
family: 910b
npus: 2
npu_smi_version: "25.2.2"
epoch: {epoch}
seed: 28
events:
  - {{kind: overheat, npu: 0, start: {start}, end: {end}, temperature_celsius: 96,
     ramp_seconds: {ramp}, throttled_mhz: 1100, load_percent: 96}}
"""


def _samples(url: str, selector: str) -> list[tuple[dict[str, str], float, float]]:
    """Every raw sample of ``selector`` in the last 10 minutes: (labels, time, value)."""
    result = api_query(url, f"{selector}[10m]")["data"]["result"]
    return [(s["metric"], float(t), float(v)) for s in result for t, v in s["values"]]


def _prometheus_config(path: Path, rules: Path, port: int) -> None:
    config: dict[str, Any] = {
        "global": {"scrape_interval": f"{STEP}s", "evaluation_interval": f"{STEP}s"},
        "rule_files": [str(rules)],
        "scrape_configs": [
            {"job_name": "npumon", "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
        ],
    }
    path.write_text(yaml.safe_dump(config))


@pytest.mark.fleet
def test_a_scaled_throttling_episode_fires_as_the_harness_says(tmp_path: Path) -> None:
    assert PROMETHEUS is not None, "prometheus is not installed: `make tools` installs it"
    rules = tmp_path / "tuned-rules.yml"
    write_scaled(rules, ALERT, SCALE, window="20m")
    epoch = time.time()
    scenario = tmp_path / "thermal.yaml"
    scenario.write_text(SCENARIO.format(epoch=epoch, start=LEAD, end=LEAD + EPISODE, ramp=RAMP))
    interval = f"{STEP}s"
    config = tmp_path / "node.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "npu_smi": {
                    "command": [str(BIN / "npumon-sim-npu-smi"), "--scenario", str(scenario)],
                },
                "chips": {
                    "intervals": {"table": interval, "detail": interval, "health": interval},
                },
                "state_directory": str(tmp_path / "state"),
            }
        )
    )
    procs = Processes(f"{os.getpid()}-{tmp_path.name}", dict(os.environ))
    try:
        port = procs.npumon(BIN, config, tmp_path / "npumon.log")
        _prometheus_config(tmp_path / "prometheus.yml", rules, port)
        url = procs.prometheus(PROMETHEUS, tmp_path)
        firing = f'ALERTS{{alertname="{ALERT}", alertstate="firing"}}'
        # generous: the episode's schedule, the catalog's stated delay scaled, and slack for a
        # loaded machine; the figures compared below are the engines', not the test's
        wait_for(
            lambda: bool(api_query(url, firing)["data"]["result"]),
            LEAD + EPISODE + CATALOG.delays[ALERT] / SCALE + 120,
            f"{ALERT} to fire",
            **POLLING,
        )
        throttled = _samples(url, 'npu_throttled{npu="0"}')
        onset = min(t for _, t, v in throttled if v == 1)
        first_scrape = min(t for _, t, _ in throttled)
        fired = _samples(url, firing)
        live_npus = {labels["npu"] for labels, _, _ in fired}
        live_delay = min(t for _, t, _ in fired) - onset
    finally:
        procs.close()

    # the same timeline for the harness: its series start at Prometheus' first scrape and the
    # episode starts at the first throttled scrape, one sample every STEP seconds
    start = round((onset - first_scrape) / STEP) * STEP
    replay = Scenario(
        name="thermal-10m-scaled",
        kind="fault",
        about=f"{FAULT.about}, scaled 1/{SCALE}",
        duration=start + EPISODE + CATALOG.delays[ALERT] / SCALE,
        fault_start=start,
        events=({"kind": "throttle", "npu": 0, "start": start, "end": start + EPISODE},),
        chips=(Chip(npu=0), Chip(npu=1)),
        nodes=1,
        expect=(ALERT,),
        also=(),
        resolves=None,
        step=STEP,
    )
    harness = [f for f in run_promtool(rules, [replay], tmp_path, STEP) if f.alertname == ALERT]
    assert {dict(f.labels)["npu"] for f in harness} == live_npus == {"0"}, (harness, live_npus)
    harness_delay = min(f.first for f in harness) - start
    print(
        f"{ALERT} 1/{SCALE}: fired {live_delay:g} s after the first throttled scrape on"
        f" Prometheus, {harness_delay:g} s on promtool"
    )
    assert abs(live_delay - harness_delay) <= 2 * STEP, (live_delay, harness_delay)
