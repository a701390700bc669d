"""compat.npu_exporter_names: npu-exporter's names, units and labels answer its users' queries."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from exp_helpers import chip_910b, merged, node, render

from npumon.daemon.model.kubelet import ChipOwner
from npumon.exporters.compat import L1, l1
from tests.helpers.exposition import promtool_problems, samples
from tests.helpers.wait import scaled
from tests.support import ROOT

# What dashboards written for npu-exporter query (its metric reference, the names both have):
# (metric, labels every sample must carry)
QUERIES = [
    ("machine_npu_nums", ()),
    ("node_base_info", ("driverVersion",)),
    *(
        (name, L1)
        for name in (
            "npu_chip_info_health_status",
            "npu_chip_info_temperature",
            "npu_chip_info_power",
            "npu_chip_info_aicore_current_freq",
            "npu_chip_info_utilization",
            "npu_chip_info_vector_utilization",
            "npu_chip_info_cube_utilization",
            "npu_chip_info_overall_utilization",
            "npu_chip_info_hbm_used_memory",
            "npu_chip_info_hbm_total_memory",
            "npu_chip_info_hbm_bandwidth_utilization",
            "npu_chip_info_process_info_num",
            "npu_chip_info_error_code",
        )
    ),
    ("npu_chip_info_process_info", (*L1, "process_id", "container_id")),
]


@pytest.mark.integration  # `npumon collect --once` against the simulator
def test_npu_exporter_queries_return_data_from_a_simulated_node(tmp_path: Path) -> None:
    config = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    config["compat"] = {"npu_exporter_names": True}
    config["state_directory"] = str(tmp_path)
    path = tmp_path / "npumon.yaml"
    path.write_text(yaml.safe_dump(config))
    npumon = Path(sys.executable).parent / "npumon"
    # simulated second 300 of the 600 s demo period: NPU 5 is in Alarm with two fault codes
    env = {**os.environ, "NPUMON_SIM_TIME": "300"}
    done = subprocess.run(
        [str(npumon), "collect", "--once", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=scaled(120),
        cwd=ROOT,
        env=env,
    )
    found = samples(done.stdout)
    for metric, labels in QUERIES:
        hits = [dict(k[1]) for k in found if k[0] == metric]
        assert hits, f"{metric} returns no data"
        assert all(set(labels) <= set(h) for h in hits), metric
    # npumon's own families are still there; the units are npu-exporter's
    aicore = {
        dict(k[1])["npu"]: v for k, v in found.items() if k[0] == "npu_aicore_utilization_ratio"
    }
    percent = {dict(k[1])["id"]: v for k, v in found.items() if k[0] == "npu_chip_info_utilization"}
    assert percent and all(percent[i] == pytest.approx(100 * aicore[i]) for i in percent)
    # promtool only objects to npu-exporter's own camelCase labels on node_base_info
    problems = promtool_problems(done.stdout).splitlines()
    assert problems and all(p.startswith("node_base_info label names") for p in problems)


def test_owner_labels_follow_npu_exporter() -> None:
    chip = merged(chip_910b())
    assert l1(chip) == ["0", "910B4-1", "AB12", "0000:0E:00.0", "", "", ""]
    one = replace(chip, owners=(ChipOwner("ml", "train-0", "trainer"),))
    assert l1(one)[4:] == ["ml", "train-0", "trainer"]
    shared = replace(chip, owners=(ChipOwner("a", "p", "c"), ChipOwner("b", "q", "c")))
    assert l1(shared)[4:] == ["not_displayed_for_multi_pod"] * 3


def test_off_unless_asked_for() -> None:
    got = samples(render(node(chip_910b())))
    assert not any(k[0].startswith(("npu_chip_info_", "machine_npu")) for k in got)
    on = samples(render(node(chip_910b()), enabled=("npu_exporter_compat",)))
    assert any(k[0] == "npu_chip_info_utilization" for k in on)
