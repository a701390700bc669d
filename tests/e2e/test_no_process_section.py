"""Boards that print no process section (310B, a 310 on npu-smi 20.x / 21.x, pastes of 910A
22.0.3): `npumon collect --once`, the real command line, serves every chip of the real table
with its values, and no process series."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.wait import scaled
from tests.support import fake_npu_smi

pytestmark = pytest.mark.integration  # runs the CLI and the fake npu-smi

MB = 1024 * 1024
# node -> {(npu, chip): (power W, temperature C, memory used bytes, memory total bytes)}
EXPECTED = {
    "310b4_23.0.0": {(0, 0): (0.0, 65.0, 3628 * MB, 15609 * MB)},
    "310b4_23.0rc3": {(0, 0): (7.7, 54.0, 2166 * MB, 3513 * MB)},
    "310_20.2": {
        (215, 0): (12.8, 56.0, 2703 * MB, 8192 * MB),
        (215, 1): (12.8, 57.0, 2703 * MB, 8192 * MB),
        (215, 2): (12.8, 57.0, 2703 * MB, 8192 * MB),
        (215, 3): (12.8, 55.0, 2703 * MB, 8192 * MB),
    },
    "910a_22.0.3": {(npu, 0): None for npu in range(8)},
}


Samples = dict[str, list[tuple[dict[str, str], float]]]


def _collect(node: str, tmp_path: Path) -> Samples:
    config = tmp_path / "npumon.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "npu_smi": {"command": fake_npu_smi(node)},
                "chips": {"timeout": "20s"},
                "kubernetes": {"pod_resources_socket": str(tmp_path / "no-kubelet.sock")},
            }
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "npumon.daemon.cli", "collect", "--once", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    samples: Samples = {}
    for family in text_string_to_metric_families(done.stdout):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def _by_chip(samples: Samples, name: str) -> dict[tuple[int, int], float]:
    return {(int(labels["npu"]), int(labels["chip"])): value for labels, value in samples[name]}


@pytest.mark.parametrize("node", sorted(EXPECTED))
def test_collect_once_serves_every_chip_of_a_table_without_processes(
    node: str, tmp_path: Path
) -> None:
    samples = _collect(node, tmp_path)
    up = {labels["source"]: value for labels, value in samples["npumon_source_up"]}
    assert up["npu_smi_table"] == 1.0
    failures = {
        labels["reason"]
        for labels, _ in samples["npumon_source_failures_total"]
        if labels["source"] == "npu_smi_table"
    }
    assert "truncated" not in failures
    expected = EXPECTED[node]
    assert set(_by_chip(samples, "npu_chip_info")) == set(expected)
    power = _by_chip(samples, "npu_power_watts")
    temperature = _by_chip(samples, "npu_temperature_celsius")
    used = _by_chip(samples, "npu_memory_used_bytes")
    total = _by_chip(samples, "npu_memory_total_bytes")
    for chip, values in expected.items():
        if values is not None:
            assert (power[chip], temperature[chip], used[chip], total[chip]) == values
    assert not any(name.startswith("npu_process") for name in samples)
