"""The 310B simulator scenario through a real `npumon run`: one SoC chip whose table prints no
process section is served over HTTP, with its values and no process series."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from npumon.daemon.parsers.table import parse_info
from npumon.simulator.loader import load_scenario
from npumon.simulator.render import render
from npumon.simulator.state import node_state
from tests.helpers.exposition import key, samples
from tests.helpers.http import get
from tests.helpers.processes import reported_port, start_npumon, stop
from tests.helpers.wait import wait_for

pytestmark = pytest.mark.integration  # a real daemon and the simulator as its npu-smi

BIN = Path(sys.executable).parent
SIM_TIME = "30"
MIB = 1024 * 1024


def test_the_310b_scenario_prints_the_real_layout_without_a_process_section() -> None:
    text = render(["info"], node_state(load_scenario("310b"), float(SIM_TIME))).stdout
    assert "Process id" not in text and text.rstrip().endswith("=+")
    table = parse_info(text)
    assert table.cut_short is None and table.processes_cut is None and table.processes == ()
    (chip,) = table.chips
    assert (chip.npu, chip.chip, chip.name, chip.bus_id) == (0, 0, "310B4", None)
    assert {len(line) for line in text.splitlines()} == {106}  # the 310 family's box


def test_npumon_run_serves_the_310b_chip(tmp_path: Path) -> None:
    config, log = tmp_path / "npumon.yaml", tmp_path / "npumon.log"
    config.write_text(
        yaml.safe_dump(
            {
                "npu_smi": {
                    "command": [
                        str(BIN / "npumon-sim-npu-smi"),
                        "--scenario",
                        "310b",
                        "--time",
                        SIM_TIME,
                    ]
                },
                "state_directory": str(tmp_path),
                "kubernetes": {"pod_resources_socket": str(tmp_path / "no-kubelet.sock")},
            }
        )
    )
    expected = parse_info(
        render(["info"], node_state(load_scenario("310b"), float(SIM_TIME))).stdout
    ).chips[0]
    process = start_npumon(config, log)
    try:
        port = reported_port(log, process=process)

        def scrape() -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
            return samples(get(f"http://127.0.0.1:{port}/metrics"))

        def served() -> bool:
            found = scrape()  # npu_chip_info waits for the identity tier's first pass
            chip_info = any(name == "npu_chip_info" for name, _ in found)
            return key("npu_power_watts", npu="0", chip="0") in found and chip_info

        wait_for(served, 30, "a first table poll and identity pass")
        found = scrape()
        assert found[key("npumon_source_up", source="npu_smi_table")] == 1.0
        assert found[key("npu_power_watts", npu="0", chip="0")] == expected.power_watts
        assert found[key("npu_temperature_celsius", npu="0", chip="0")] == (
            expected.temperature_celsius
        )
        assert found[key("npu_memory_total_bytes", npu="0", chip="0")] == 15609 * MIB
        assert [k for k in found if k[0] == "npu_chip_info"] and not any(
            name.startswith("npu_process") for name, _ in found
        )
        assert not any(
            name == "npumon_source_failures_total" and ("reason", "truncated") in labels
            for name, labels in found
        )
    finally:
        stop(process)
