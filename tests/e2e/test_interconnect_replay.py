"""`npumon collect --once` against replayed real hccn_tool and npu-smi outputs (the fixture node
a3_interconnect_replay, assembled from captures: see its node.yaml), and against a node with no
hccn_tool at all, where the source is off and the exit status unaffected."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from npumon.exporters.collector import DETAIL_COLLECTORS
from tests.helpers.exposition import names, samples, value
from tests.helpers.wait import scaled
from tests.support import ROOT, fake_hccn_tool, fake_npu_smi

pytestmark = pytest.mark.integration  # runs npumon and the fakes as processes
NODE = "a3_interconnect_replay"
MW = 1e-3


def collect(tmp_path: Path, settings: dict[str, object]) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "npumon.yaml"
    config.write_text(yaml.safe_dump(settings))
    npumon = Path(sys.executable).parent / "npumon"
    return subprocess.run(
        [str(npumon), "collect", "--once", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=scaled(180),
        cwd=ROOT,
    )


def test_collect_once_prints_the_interconnect_series_of_the_replay(tmp_path: Path) -> None:
    done = collect(
        tmp_path,
        {
            "npu_smi": {"command": fake_npu_smi(NODE)},
            "hccn_tool": {"command": fake_hccn_tool(NODE)},
            "collectors": {"enabled": list(DETAIL_COLLECTORS)},
        },
    )
    assert done.returncode == 0, done.stderr
    found = samples(done.stdout)
    port = {"npu": "1", "chip": "1", "port": "0"}  # the die with Phy-ID 3: hccn_tool -i 3
    assert value(found, "npu_network_up", **port) == 0  # link-g-u-p: `link status: DOWN`
    assert value(found, "npu_network_up", npu="0", chip="0", port="0") == 1
    assert value(found, "npu_network_carrier_up_changes_total", **port) == 2  # kg-after
    assert value(found, "npu_network_carrier_changes_total", **port) is None  # no down count
    assert value(found, "npu_network_speed_bytes", **port) is None  # no capture: refused
    assert (
        value(
            found,
            "npu_network_info",
            **port,
            ip="29.1.112.213",
            peer_switch="",
            peer_port="400GE1/1/20:2",
        )
        == 1
    )
    assert value(found, "npu_network_receive_bytes_total", **port) == 482237805  # nic_rx_all_oct
    # Phy-ID 2 (npu 1, chip 0) replays the ModelArts dev6 counters
    assert (
        value(found, "npu_roce_errors_total", npu="1", chip="0", port="0", kind="tx_error_packets")
        == 77
    )
    assert (
        value(found, "npu_network_health_state", npu="0", chip="1", port="0", state="fault") == 1
    )  # Phy-ID 1
    assert value(found, "npu_network_health_state", **port, state="success") == 1
    assert value(found, "npu_optical_rx_power_watts", **port, lane="1") == 0.0054 * MW
    assert value(found, "npu_optical_rx_power_threshold_watts", **port, bound="low") == 0.1445 * MW
    assert value(found, "npu_optical_temperature_celsius", **port) == 47
    assert value(found, "npu_optical_present", **port) == 0  # as the capture says
    # npu-smi's health tier: -t pcie-err / sio-info (950 docs), -t hccs (FROM_SOURCE)
    assert value(found, "npu_pcie_errors_total", npu="0", chip="0", kind="rx") == 991
    assert value(found, "npu_sio_crc_errors_total", npu="1", chip="1", direction="receive") == 0
    assert value(found, "npu_hccs_crc_errors_total", npu="0", chip="0", link="7") == 42
    assert value(found, "npu_hccs_up", npu="0", chip="0") == 0
    assert value(found, "npu_hccs_first_error_link", npu="0", chip="0") == 7
    # the default's per-chip view of the same: the worst link, the sums
    assert value(found, "npu_hccs_errors_total", npu="0", chip="0", kind="crc") == 42
    assert value(found, "npu_network_healthy", npu="0", chip="1", port="0") == 0  # fault
    assert value(found, "npu_optical_out_of_range", **port, quantity="rx_power") == -1
    # -t hccs-bw answers only with its -time window: the rows are the port indexes
    bandwidth = "npu_hccs_transmit_bandwidth_bytes_per_second"
    assert value(found, bandwidth, npu="0", chip="0", link="1") == 12.5e9
    assert value(found, "npumon_source_up", source="hccn_tool") == 1
    print(done.stdout)  # the report quotes these lines


def test_a_node_without_hccn_tool_has_the_source_off_and_exits_0(tmp_path: Path) -> None:
    done = collect(
        tmp_path,
        {
            "npu_smi": {"command": fake_npu_smi(NODE)},
            "hccn_tool": {"command": [str(tmp_path / "no-such-hccn_tool")]},
        },
    )
    assert done.returncode == 0, done.stderr
    found = samples(done.stdout)
    assert not {n for n in names(found) if n.startswith("npu_network_")}
    assert value(found, "npumon_source_up", source="hccn_tool") is None  # off, not down
    assert value(found, "npu_pcie_link_errors_total", npu="0", chip="0") == 991  # retries out
    # one line, no error spam (past a second collect --once adds its progress lines)
    [line] = [t for t in done.stderr.splitlines() if not t.startswith("npumon: collect: ")]
    assert "source=hccn_tool event=off reason=not_found" in line
