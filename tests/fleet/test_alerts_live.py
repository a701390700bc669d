"""A catalog fault through a real Prometheus scraping a simulated node: the PFC storm of
simulator/fault_catalog.yaml (pfc-storm-30s: 50,000 pause frames/s for 30 s), scripted in the
simulator's hccn_tool and read by a real npumon, fires NpuNetworkPfcStorm with the shipped rules
within the delay the catalog states, and resolves within the catalog's 2 minutes of the
storm's end, on a clock scaled down SCALE times: the storm, the quiet before it, the rule's rate
window and `for` (rendered through the chart's tuning path) and the stated delays all divided by
SCALE, hccn_tool read every POLL seconds, one chip on the node (each hccn_tool pass is six
simulator processes per chip).

Times compared are the simulator's clock (the storm's window) and Prometheus' own (the alert's
activeAt in ALERTS_FOR_STATE, and the last firing sample): the test only waits on them."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import yaml
from fleet_processes import Processes
from fleet_scenario import BIN, POLLING, PROMETHEUS, api_query
from tuned_rules import write_scaled

from npumon.simulator.fault_catalog import load, seconds
from tests.helpers.wait import wait_for

CATALOG = load()
STORM = next(s for s in CATALOG.scenarios if s.name == "pfc-storm-30s")
EVENT = STORM.events[0]
ALERT = "NpuNetworkPfcStorm"
SCALE = 3
POLL = 2  # seconds between hccn_tool passes; Prometheus scrapes and evaluates every second
LEAD = 70.0 / SCALE  # seconds of quiet before the storm: the scaled rate has a full window
SCENARIO = """
family: 910b
npus: 1
npu_smi_version: "25.2.2"
epoch: {epoch}
seed: 28
network:
  events:
    - {{kind: pfc_storm, npu: 0, per_second: {rate}, start: {start}, end: {end}}}
"""


def _first(url: str, expr: str) -> float | None:
    result = api_query(url, expr)["data"]["result"]
    return float(result[0]["value"][1]) if result else None


@pytest.mark.fleet
def test_a_pfc_storm_fires_and_resolves_as_the_harness_says(tmp_path: Path) -> None:
    assert PROMETHEUS is not None, "prometheus is not installed: `make tools` installs it"
    rules = tmp_path / "tuned-rules.yml"
    write_scaled(rules, ALERT, SCALE, window="1m")
    length = (seconds(EVENT["end"]) - seconds(EVENT["start"])) / SCALE
    epoch = time.time()
    scenario = tmp_path / "storm.yaml"
    scenario.write_text(
        SCENARIO.format(epoch=epoch, rate=EVENT["per_second"], start=LEAD, end=LEAD + length)
    )
    start, end = epoch + LEAD, epoch + LEAD + length
    config = tmp_path / "node.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "npu_smi": {
                    "command": [str(BIN / "npumon-sim-npu-smi"), "--scenario", str(scenario)],
                },
                "chips": {"intervals": {"table": "5s", "detail": "60s", "health": "60s"}},
                "hccn_tool": {
                    "command": [str(BIN / "npumon-sim-hccn-tool"), "--scenario", str(scenario)],
                    "interval": f"{POLL}s",
                },
                "state_directory": str(tmp_path / "state"),
            }
        )
    )
    procs = Processes(f"{os.getpid()}-{tmp_path.name}", dict(os.environ))
    try:
        port = procs.npumon(BIN, config, tmp_path / "npumon.log")
        (tmp_path / "prometheus.yml").write_text(
            yaml.safe_dump(
                {
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "rule_files": [str(rules)],
                    "scrape_configs": [
                        {
                            "job_name": "npumon",
                            "static_configs": [{"targets": [f"127.0.0.1:{port}"]}],
                        }
                    ],
                }
            )
        )
        url = procs.prometheus(PROMETHEUS, tmp_path)
        firing = 'ALERTS{alertname="NpuNetworkPfcStorm", alertstate="firing", npu="0"}'
        # generous deadlines: the storm's own schedule plus the stated delays, and slack for a
        # loaded machine; the figures compared below are the engine's, not the test's
        stated = CATALOG.delays[ALERT] / SCALE
        wait_for(
            lambda: _first(url, firing) is not None,
            LEAD + stated + 120,
            "NpuNetworkPfcStorm to fire",
            **POLLING,
        )
        active_at = _first(url, 'ALERTS_FOR_STATE{alertname="NpuNetworkPfcStorm", npu="0"}')
        assert active_at is not None
        assert start - POLL <= active_at <= start + stated, (active_at - start, stated)
        resolves = (STORM.resolves or 0.0) / SCALE
        wait_for(
            lambda: _first(url, firing) is None and time.time() > end,
            LEAD + length + resolves + 120,
            "NpuNetworkPfcStorm to resolve",
            **POLLING,
        )
        last = _first(url, f"max_over_time(timestamp({firing})[15m:1s])")
        assert last is not None
        assert last <= end + resolves, (last - end, resolves)
    finally:
        procs.close()
