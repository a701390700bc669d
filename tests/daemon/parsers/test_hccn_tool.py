"""Every hccn_tool fixture parsed, its values asserted (tests/fixtures/hccn_tool/SOURCES.md).

Most files are documentation examples or trimmed test fixtures, not untouched captures; the
test names say so: `doc`, `trimmed`, `elided`, `grep` (a filtered output) and `SYNTHETIC`.
"""

from __future__ import annotations

import pytest

from npumon.daemon.model.network import NetAddress
from npumon.daemon.parsers import hccn_950
from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.hccn_tool import net_health_state, parse_link, parse_speed
from tests.daemon.parsers.hccn_fixtures import FIXTURES, NOT_PARSED_BY_DESIGN, PARSERS, names, parse

MW = 1e-3


def test_every_fixture_has_a_parser_or_a_reason_and_a_provenance_row() -> None:
    sources = (FIXTURES / "SOURCES.md").read_text(encoding="utf-8")
    assert len(names()) == 38
    for name in names():
        command = name.split("__")[0]
        assert (command in PARSERS) != (command in NOT_PARSED_BY_DESIGN), name
        assert f"\n| {name} |" in sources, name


def test_link_doc_up_and_950_doc_down() -> None:
    assert parse("link-g__mind-cluster-faultdiag-doc.txt").up is True
    assert parse("link-g-u-p__driver-950-doc.txt").up is False


def test_net_health_docs_and_fixture() -> None:
    assert parse("net_health-g__mind-cluster-faultdiag-doc.txt").state == "init"
    assert parse("net_health-g__mind-cluster-resumable-doc-fault.txt").state == "fault"
    assert parse("net_health-g__mind-cluster-resumable-doc-success.txt").state == "success"
    socket = parse("net_health-g__mind-cluster-faultdiag-kg-before.txt")
    assert socket.state == "socket_fail"  # "Socket failed": an old or edited text
    assert net_health_state("Detect ip set") == "detect_ip_set"
    assert net_health_state("Something new") == "unknown"


def test_link_stat_fixtures_newest_first_without_down_count() -> None:
    before = parse("link_stat-g__mind-cluster-faultdiag-kg-before.txt")
    assert (before.up_count, before.down_count) == (2, None)  # no `link down count` line
    after = parse("link_stat-g__mind-cluster-faultdiag-kg-after.txt")  # records: not read
    assert (after.up_count, after.down_count) == (2, None)
    dev1 = parse("link_stat-g__mind-cluster-faultdiag-modelarts-dev1.txt")
    assert dev1.up_count == 2
    doc = parse("link_stat-g__mind-cluster-faultdiag-doc.txt")  # `[device 0]` prefix
    assert doc.up_count == 2


def test_link_stat_950_doc_table() -> None:
    stats = parse("link_stat-g-u-p__driver-950-doc.txt")
    assert (stats.up_count, stats.down_count) == (2, 2)  # the records table: not read


def test_stat_doc_elided_keeps_only_printed_counters() -> None:
    stat = parse("stat-g__mind-cluster-faultdiag-doc.txt")  # elided with `...` lines
    assert stat.get("nic_rx_all_oct_num") == 482237805
    assert stat.get("nic_tx_all_pkg_num") == 122404
    assert stat.get("mac_tx_mac_pause_num") == 0 and stat.get("roce_qp_status_err_num") == 0
    assert stat.get("mac_rx_total_oct_num") is None  # elided, never 0
    assert len(stat.values) == 8


def test_stat_trimmed_fixtures() -> None:
    zero = parse("stat-g__mind-cluster-faultdiag-kg-before.txt")
    assert zero.values == (("roce_rx_err_pkt_num", 0), ("roce_tx_err_pkt_num", 0))
    dev6 = parse("stat-g__mind-cluster-faultdiag-modelarts-dev6.txt")
    assert dev6.values == (("roce_rx_err_pkt_num", 13), ("roce_tx_err_pkt_num", 77))


def test_stat_950_doc_ub_counters() -> None:
    stat = parse("stat-g-u-p__driver-950-doc.txt")  # `key: value`, space after the colon
    assert stat.get("port_id") == 4 and stat.get("crc_error_sum") == 0
    assert stat.get("retry_req_sum") == 0 and len(stat.values) == 42


def test_optical_fixture_four_lanes_and_thresholds() -> None:
    o = parse("optical-g__mind-cluster-faultdiag-kg-before.txt")
    assert o.present is False  # as printed, although it shows live readings (see SOURCES.md)
    assert o.temperature_celsius == 47.0
    assert o.supply_voltage_volts == pytest.approx(3.2629)
    assert dict(o.rx_power_watts) == pytest.approx(
        {0: 1.0189 * MW, 1: 0.0054 * MW, 2: 0.9907 * MW, 3: 1.0213 * MW}
    )
    assert dict(o.tx_power_watts)[0] == pytest.approx(4.4035 * MW)
    assert dict(o.tx_bias_amperes)[3] == pytest.approx(7.924e-3)
    thresholds = {(q, b): v for q, b, v in o.thresholds}
    assert thresholds[("rx_power_watts", "low")] == pytest.approx(0.1445 * MW)
    assert thresholds[("temperature_celsius", "high")] == 70.0
    assert thresholds[("supply_voltage_volts", "low")] == pytest.approx(3.135)


def test_optical_doc_elided_laneless_keys_are_lane_0() -> None:
    o = parse("optical-g__mind-cluster-faultdiag-doc.txt")
    assert o.present is False and o.temperature_celsius is None  # elided
    assert o.rx_power_watts == ((0, pytest.approx(1.0189 * MW)),)
    assert len(o.thresholds) == 8


def test_ip_fixtures_and_docs() -> None:
    assert parse("ip-g__mind-cluster-faultdiag-kg-before-dev0.txt").addresses == (
        ("192.161.200.10", "255.255.255.0"),
    )
    assert parse("ip-g__arthurchiao-blog.txt").addresses == (("29.1.112.213", "255.255.0.0"),)
    assert parse("ip-g__mind-cluster-faultdiag-doc.txt").addresses[0][0] == "10.xx.xx.10"  # masked
    assert parse("ip-g__mind-cluster-faultdiag-kg-before-dev2-empty.txt") == NetAddress(())
    eight = parse("ip-g-8dev__deepseekv3-deploy-guide.txt")  # 8 outputs concatenated
    assert [a for a, _ in eight.addresses] == [f"11.12.165.{n}" for n in range(80, 88)]


def test_lldp_blog_elided() -> None:
    n = parse("lldp-g__arthurchiao-blog.txt")
    assert n.peer_port == "400GE1/1/20:2"
    assert n.peer_switch is None  # the Chassis ID MAC is elided (`MAC: ...`), no System Name


def test_lldp_grep_filtered_lines_keep_the_first_port() -> None:
    n = parse("lldp-g-grep-ifname-8dev__deepseekv3-deploy-guide.txt")
    assert n.peer_port == "400GE1/1/5:1"


def test_speed_950_doc_table() -> None:
    assert parse("speed-g-u-p__driver-950-doc.txt").bytes_per_second == 400e9 / 8


def test_dev_info_950_doc_and_synthetic() -> None:
    doc = parse("dev_info-g__driver-950-doc.txt")
    assert [(p.udie, p.port) for p in doc.ports] == [(0, 4), (0, 5), (0, 6)]
    synthetic = parse("dev_info-g__mind-cluster-test-SYNTHETIC.txt")  # other header names
    assert [(p.udie, p.port) for p in synthetic.ports] == [(0, 4), (0, 5), (1, 8), (1, 9)]


# The -speed 910 form has no public capture: its parser follows the print format only.
@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Speed: 100000 Mb/s\n", 100000 * 1e6 / 8),
        ("Speed: 200000 Mb/s", 200000 * 1e6 / 8),
        ("Speed: Unknown!\n", None),
    ],
)
def test_speed_print_format(line: str, expected: float | None) -> None:
    assert parse_speed(line).bytes_per_second == expected


@pytest.mark.parametrize("bad", ["Speed: 100 Gb/s", "Speed: fast", "", "Speed: 1\nSpeed: 2"])
def test_speed_anything_else_is_a_parse_error(bad: str) -> None:
    with pytest.raises(ParseError):
        parse_speed(bad)


@pytest.mark.parametrize(
    "bad", ["link status: up", "link status: UP\nlink status: UP", "status: UP", ""]
)
def test_link_anything_else_is_a_parse_error(bad: str) -> None:
    with pytest.raises(ParseError):
        parse_link(bad)


def test_speed_950_down_port_prints_unknown() -> None:
    """`tool_speed_exec` prints `unknown` when the speed is 0 (a down port): no speed."""
    assert parse("speed-g-u-p__driver-950-source-down-FROM_SOURCE.txt").bytes_per_second is None


def test_speed_950_one_column_table_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="column"):
        hccn_950.parse_speed_table("+---+\n| x |\n+---+\n| 1 |\n+---+\n")


def test_dev_info_950_without_ub_ports_has_no_port_table() -> None:
    """`tool_print_port_info` prints nothing at 0 ports: the interface table comes first."""
    assert parse("dev_info-g__driver-950-source-no-ports-FROM_SOURCE.txt").ports == ()


def test_dev_info_950_another_first_table_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="port table"):
        hccn_950.parse_dev_info("+---+---+\n| a | b |\n+---+---+\n| 1 | 2 |\n+---+---+\n")


def test_stat_950_source_keys_of_a_uboe_port() -> None:
    stat = parse("stat-g-u-p__driver-950-source-uboe-FROM_SOURCE.txt")
    assert stat.get("ub_compact_pkt_cnt_rx") == 88000000
    assert stat.get("retry_req_sum") == 42 and stat.get("core_mib_rxpfcpkts") == 120


def test_speed_950_lanes_and_status() -> None:
    up = parse("speed-g-u-p__driver-950-doc.txt")
    assert (up.lanes, up.max_lanes, up.lane_state) == (4, 4, "normal")
    down = parse("speed-g-u-p__driver-950-source-down-FROM_SOURCE.txt")
    assert (down.lanes, down.max_lanes, down.lane_state) == (None, 4, "abnormal")


def test_bandwidth_950_doc_in_bytes_per_second() -> None:
    bandwidth = parse("bandwidth-g-u-p__driver-950-doc.txt")
    assert (bandwidth.transmit, bandwidth.receive) == (0.0, 266.84e6)


@pytest.mark.parametrize(
    "bad",
    ["", "Bandwidth TX: fast MB/sec", "Bandwidth TX: 1.00 MB/sec\nBandwidth TX: 2.00 MB/sec"],
)
def test_bandwidth_anything_else_is_a_parse_error(bad: str) -> None:
    with pytest.raises(ParseError):
        hccn_950.parse_bandwidth(bad)


def test_ub_connect_950_doc_chip_and_port_states() -> None:
    """The manual's `PARTIAL UP` is the source's `PARTIAL LINK` (`tool_ub_connect_exec`)."""
    ub = parse("ub_connect-g__driver-950-doc.txt")
    assert (ub.state, ub.ports) == ("partial", ((4, "up"), (5, "down"), (6, "partial")))
    assert hccn_950.parse_ub_connect("link status : NA\n").state == "na"


@pytest.mark.parametrize(
    "bad",
    ["", "port 4 : UP\n", "link status : UP\nlink status : UP\n", "link status : GREEN\n"],
)
def test_ub_connect_anything_else_is_a_parse_error(bad: str) -> None:
    with pytest.raises(ParseError):
        hccn_950.parse_ub_connect(bad)
