"""The simulated hccn_tool and npu-smi interconnect queries parse back through the daemon's
parsers, and the scenario's `network` section drives them: a port that flaps, CRC errors that
climb, an optical module whose RX power sinks below its low threshold, a link down on an
allocated chip, a PFC storm, HCCS and SIO CRC errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from npumon.daemon.parsers import hccn_950, hccn_tool, interconnect, optical
from npumon.simulator import render_interconnect
from npumon.simulator.hccn import answer, main
from npumon.simulator.loader import load_scenario
from npumon.simulator.state import node_state
from tests.helpers.wait import scaled

SC = load_scenario("910b-8")
A3 = load_scenario("a3-8x2")


def hccn(t: float, device: int, query: str) -> str:
    result = answer(["-i", str(device), query, "-g"], SC, t)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def smi(sc_name: str, t: float, *argv: str) -> str:
    sc = load_scenario(sc_name)
    result = render_interconnect.answer(["info", *argv], sc, node_state(sc, t), t)
    assert result is not None and result.exit_code == 0, result
    return result.stdout


def test_a_flapping_port_goes_down_half_of_each_period_and_counts_carrier_changes() -> None:
    assert hccn_tool.parse_link(hccn(50, 2, "-link")).up is True  # before the flap
    assert hccn_tool.parse_link(hccn(65, 2, "-link")).up is False  # 60 s + 5 s: down half
    assert hccn_tool.parse_link(hccn(75, 2, "-link")).up is True
    stats = hccn_tool.parse_link_stat(hccn(250, 2, "-link_stat"))
    assert (stats.up_count, stats.down_count) == (7, 6)  # 6 flaps in 60..180 s, plus boot
    quiet = hccn_tool.parse_link_stat(hccn(250, 3, "-link_stat"))
    assert (quiet.up_count, quiet.down_count) == (1, 0)


def test_crc_errors_climb_on_one_chip_only() -> None:
    early = hccn_tool.parse_stat(hccn(100, 4, "-stat"))
    later = hccn_tool.parse_stat(hccn(200, 4, "-stat"))
    assert early.get("mac_rx_fcs_err_pkt_num") == 300
    assert later.get("mac_rx_fcs_err_pkt_num") == 600
    assert later.get("roce_new_pkt_rty_num") == 1200
    assert hccn_tool.parse_stat(hccn(200, 3, "-stat")).get("mac_rx_fcs_err_pkt_num") == 0


def test_optical_rx_power_sinks_below_the_modules_own_low_threshold() -> None:
    before = optical.parse_optical(hccn(90, 1, "-optical"))
    after = optical.parse_optical(hccn(250, 1, "-optical"))
    low = next(v for q, b, v in after.thresholds if (q, b) == ("rx_power_watts", "low"))
    assert dict(before.rx_power_watts)[0] > low
    assert dict(after.rx_power_watts)[0] == pytest.approx(0.05e-3)
    assert dict(after.rx_power_watts)[0] < low
    assert after.present is True and len(after.rx_power_watts) == 4


def test_link_down_on_the_allocated_chip_and_net_health_follows() -> None:
    assert hccn_tool.parse_link(hccn(350, 0, "-link")).up is False
    assert hccn_tool.parse_net_health(hccn(350, 0, "-net_health")).state == "fault"
    assert hccn_tool.parse_link(hccn(450, 0, "-link")).up is True
    assert hccn_tool.parse_net_health(hccn(450, 0, "-net_health")).state == "success"


def test_a_pfc_storm_on_priority_3() -> None:
    stat = hccn_tool.parse_stat(hccn(250, 5, "-stat"))
    assert stat.get("mac_rx_pfc_pkt_num") == 50000 * 50
    assert stat.get("mac_rx_pfc_pri3_pkt_num") == 50000 * 50
    assert hccn_tool.parse_stat(hccn(100, 5, "-stat")).get("mac_rx_pfc_pkt_num") == 0


def test_identity_speed_and_unknown_devices() -> None:
    assert hccn_tool.parse_ip(hccn(10, 3, "-ip")).addresses == (("10.0.0.103", "255.255.255.0"),)
    neighbour = hccn_tool.parse_lldp(hccn(10, 5, "-lldp"))
    assert (neighbour.peer_switch, neighbour.peer_port) == ("leaf-sim-1", "400GE1/2/6:1")
    assert hccn_tool.parse_speed(hccn(10, 0, "-speed")).bytes_per_second == 200000 * 1e6 / 8
    assert answer(["-i", "99", "-link", "-g"], SC, 10).stderr == "The device is not exist!\n"
    assert answer(["-i", "0", "-tls", "-g"], SC, 10).exit_code != 0


def test_a3_ports_are_asked_by_phy_id_and_310p_has_no_nic() -> None:
    # A3: Phy-ID = 2 * npu + die; NPU 1 die 0 (Phy-ID 2) flaps from 120 s
    assert hccn_tool.parse_link(answer(["-i", "2", "-link", "-g"], A3, 125).stdout).up is False
    p310 = answer(["-i", "0", "-link", "-g"], load_scenario("310p-duo"), 10)
    assert p310.exit_code != 0 and "not supported" in p310.stderr


def test_npu_smi_hccs_and_sio_from_the_scenario() -> None:
    report = interconnect.parse_hccs(smi("910b-8", 100, "-t", "hccs", "-i", "7", "-c", "0"))
    links = report.links
    assert [link.link for link in links] == list(range(1, 8))  # by port index
    assert links[6].crc_errors == 50 and links[0].crc_errors == 0 and links[0].lanes == 4
    # one health for the chip, as the driver keeps it, and the first port with errors
    assert (report.healthy, report.first_error_link) == (False, 7)
    clean = interconnect.parse_hccs(smi("910b-8", 100, "-t", "hccs", "-i", "0", "-c", "0"))
    assert (clean.healthy, clean.first_error_link) == (True, None)
    p310 = interconnect.parse_hccs(smi("310p-duo", 100, "-t", "hccs", "-i", "0", "-c", "1"))
    assert [link.link for link in p310.links] == [0] and p310.healthy is None
    window = ("-time", "200")
    bw = interconnect.parse_hccs_bw(
        smi("910b-8", 100, "-t", "hccs-bw", "-i", "0", "-c", "0", *window)
    )
    assert [link for link, _, _ in bw.links] == list(range(1, 8))  # by port index


@pytest.mark.parametrize("window", [(), ("-time", "0"), ("-time", "1001"), ("-time", "x")])
def test_npu_smi_refuses_hccs_bw_without_a_window_of_1_to_1000_ms(window: tuple[str, ...]) -> None:
    argv = ["info", "-t", "hccs-bw", "-i", "0", "-c", "0", *window]
    result = render_interconnect.answer(argv, SC, node_state(SC, 10), 10)
    assert result is not None and result.exit_code != 0
    assert result.stdout == "\nThis command must input profiling_time(1-1000, ms).\n\n"


def test_npu_smi_hccs_prints_the_drivers_lines() -> None:
    """print_npu_hccs_lane: health and first error lane single values; lane list 4 digits and
    16 spaces a port; lists of `%-20u ` entries."""
    lines = smi("910b-8", 100, "-t", "hccs", "-i", "7", "-c", "0").splitlines()
    assert lines[0] == "\thccs health status             : NOK"
    assert lines[2] == "\thccs link lane list            : [" + ("1111" + " " * 17) * 7 + "]"
    assert lines[3] == "\thccs link speed                : [" + f"{224:<20} " * 7 + "]"
    assert lines[-1] == "\thccs first error lane          : 7"

    sio = interconnect.parse_sio(smi("a3-8x2", 100, "-t", "sio-info", "-i", "4", "-c", "1"))
    assert dict(sio.counts) == {"transmit": 33, "receive": 100}
    pcie = interconnect.parse_pcie_err(smi("310p-duo", 100, "-t", "pcie-err", "-i", "0"))
    assert set(dict(pcie.counts)) == {"pcs_rx", "phy_lane", "dl_lcrc", "dl_dcrc"}
    no_sio = render_interconnect.answer(
        ["info", "-t", "sio-info", "-i", "0"], SC, node_state(SC, 10), 10
    )
    assert no_sio is not None and no_sio.exit_code != 0  # SIO is an A3/950 die-to-die link


@pytest.mark.integration
def test_the_console_script_runs_as_hccn_tool(tmp_path: Path) -> None:
    tool = Path(sys.executable).parent / "npumon-sim-hccn-tool"
    done = subprocess.run(
        [str(tool), "--scenario", "910b-8", "--time", "350", "-i", "0", "-link", "-g"],
        capture_output=True,
        text=True,
        timeout=scaled(30),
    )
    assert (done.returncode, done.stdout) == (0, "link status: DOWN\n")
    assert main(["--scenario", "no-such-scenario", "-i", "0", "-link", "-g"]) == 2


def ub(t: float, *argv: str) -> str:
    result = answer(list(argv), load_scenario("950-4"), t)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_the_950_forms_parse_back_and_a_down_ub_port_has_no_speed() -> None:
    """`-g -<query> -i N -u U -p P` (the 950's hccn_tool): ports from -dev_info, and NPU 1's
    link down from 120 s to 200 s prints speed `unknown`, width NA, status abnormal."""
    ports = hccn_950.parse_dev_info(ub(150, "-g", "-dev_info", "-i", "1"))
    assert [(p.udie, p.port) for p in ports.ports] == [(0, 4), (0, 5), (0, 6)]
    where = ("-i", "1", "-u", "0", "-p", "5")
    down = hccn_950.parse_speed_table(ub(150, "-g", "-speed", *where))
    assert (down.bytes_per_second, down.lanes, down.lane_state) == (None, None, "abnormal")
    assert hccn_tool.parse_link(ub(150, "-g", "-link", *where)).up is False
    up = hccn_950.parse_speed_table(ub(210, "-g", "-speed", *where))
    assert (up.bytes_per_second, up.lanes, up.lane_state) == (50e9, 4, "normal")
    stats = hccn_950.parse_link_stat_table(ub(210, "-g", "-link_stat", *where))
    assert (stats.up_count, stats.down_count) == (2, 1)
    bandwidth = hccn_950.parse_bandwidth(ub(210, "-g", "-bandwidth", *where, "-time", "200"))
    assert bandwidth.receive is not None and bandwidth.receive > 0
    assert hccn_950.parse_ub_connect(ub(150, "-g", "-ub_connect", "-i", "1")).state == "down"
    connect = hccn_950.parse_ub_connect(ub(210, "-g", "-ub_connect", "-i", "1"))
    assert (connect.state, connect.ports) == ("up", ((4, "up"), (5, "up"), (6, "up")))
    crc = hccn_tool.parse_stat(ub(100, "-g", "-stat", "-i", "0", "-u", "0", "-p", "4"))
    assert (crc.get("crc_error_sum"), crc.get("retry_req_sum")) == (200, 400)
    assert crc.get("ub_compact_pkt_cnt_rx") is not None
