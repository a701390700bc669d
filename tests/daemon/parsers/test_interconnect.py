"""npu-smi's interconnect queries. pcie-err and sio-info: the 950 documentation examples.
-t hccs and -t hccs-bw: the fixtures are the driver's print functions applied to invented values
(FROM_SOURCE), and the tests below also pin what the parser refuses."""

from __future__ import annotations

import pytest

from npumon.daemon.model.network import HccsLink, HccsReport
from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.interconnect import parse_hccs, parse_hccs_bw, parse_pcie_err, parse_sio
from tests.daemon.parsers.npu_smi_fixtures import fixture_text

GBIT = 1e9 / 8


def test_pcie_err_950_doc() -> None:
    counts = dict(parse_pcie_err(fixture_text("info_t_pcie_err_950_doc.txt")).counts)
    assert counts == {"tx": 0, "rx": 991, "lcrc": 0, "ecrc": 0, "retry": 415}


def test_pcie_err_310p_keys_from_the_print_format() -> None:
    text = "\tPcs Rx Error Count             : 3\n\tDl Dcrc Error Count            : 1\n"
    assert dict(parse_pcie_err(text).counts) == {"pcs_rx": 3, "dl_dcrc": 1}


def test_sio_info_950_doc() -> None:
    counts = dict(parse_sio(fixture_text("info_t_sio_info_950_doc.txt")).counts)
    assert counts == {"transmit": 0, "receive": 0}


def test_hccs_910b_seven_ports_numbered_from_1_one_health() -> None:
    report = parse_hccs(fixture_text("info_t_hccs_910b_7links_FROM_SOURCE.txt"))
    assert (report.healthy, report.first_error_link) == (True, None)
    links = report.links
    assert [link.link for link in links] == list(range(1, 8))
    assert all(link.lanes == 4 and link.speed_bytes_per_second == 224 * GBIT for link in links)
    assert (links[0].tx_packets, links[0].tx_octets) == (1200345, 1200345 * 20)
    assert (links[0].rx_packets, links[0].rx_octets) == (1100345, 1100345 * 20)
    assert {(link.retries, link.crc_errors) for link in links} == {(0, 0)}


def test_hccs_nok_chip_and_its_first_error_port() -> None:
    report = parse_hccs(fixture_text("info_t_hccs_910b_nok_port7_FROM_SOURCE.txt"))
    assert (report.healthy, report.first_error_link) == (False, 7)
    bad = report.links[-1]
    assert (bad.link, bad.lanes, bad.retries, bad.crc_errors) == (7, 2, 17, 42)
    assert bad.speed_bytes_per_second == 112 * GBIT


def test_hccs_a3_superpod_six_ports_from_2() -> None:
    report = parse_hccs(fixture_text("info_t_hccs_a3_superpod_6links_FROM_SOURCE.txt"))
    assert [link.link for link in report.links] == list(range(2, 8)) and report.healthy


def test_hccs_310p_counters_only_on_port_0() -> None:
    report = parse_hccs(fixture_text("info_t_hccs_310p_1port_FROM_SOURCE.txt"))
    [link] = report.links
    assert (link.link, link.tx_packets, link.rx_octets, link.lanes) == (0, 52345, 1024680, None)
    assert (report.healthy, report.first_error_link) == (None, None)


# print_npu_single_hccs_lane: `-lane 3`, lists of one with no space before the `]`
ONE_LANE = (
    "\txlink health status            : NOK\n"
    "\txlink lane mode                : [4                   ]\n"
    "\txlink link lane list           : [1111                ]\n"
    "\txlink link speed               : [224                 ]\n"
    "\txlink tx packets               : [12                  ]\n"
    "\txlink error count              : [5                   ]\n"
    "\txlink first error lane         : 3\n"
)


def test_hccs_one_lane_answer_is_the_port_asked_and_xlink_keys_read_as_hccs() -> None:
    report = parse_hccs(ONE_LANE, lane=3)
    assert report == HccsReport(
        (HccsLink(3, lanes=4, speed_bytes_per_second=224 * GBIT, tx_packets=12, crc_errors=5),),
        healthy=False,
        first_error_link=3,
    )
    with pytest.raises(ParseError):
        parse_hccs(ONE_LANE)  # its port is not printed: never guessed


SEVEN = "\thccs error count : [" + "0                    " * 7 + "]\n"
OK, NA = "\thccs health status : OK\n", "\thccs first error lane : NA\n"


@pytest.mark.parametrize(
    "bad",
    [
        "\thccs error count : [1 2 3 ]\n\thccs retry count : [1 2 ]\n",  # lists of unequal length
        "\thccs error count : 7\n",  # not a list
        "\thccs health status : [OK OK ]\n" + SEVEN + NA,  # a list per port: not the driver's
        "\thccs health status : maybe\n" + SEVEN + NA,
        OK + SEVEN,  # no first error lane
        OK + SEVEN + "\thccs first error lane : [NA NA ]\n",
        OK + "\thccs link lane list : [11x1 ]\n" + NA,
        OK + "\thccs error count : [0 0 0 0 0 0 0 0 ]\n" + NA,  # 8 ports: they run from 1 to 7
        SEVEN + SEVEN,  # repeated
        "\thccs surprise : [1 ]\n",  # an unknown hccs line: a new layout, not guessed at
        "",
    ],
)
def test_hccs_refuses_anything_off_the_print_format(bad: str) -> None:
    with pytest.raises(ParseError):
        parse_hccs(bad)


def test_hccs_bw_rows_by_port_index_tx_before_rx_total_dropped() -> None:
    links = parse_hccs_bw(fixture_text("info_t_hccs_bw_910b_7links_FROM_SOURCE.txt")).links
    assert [link for link, _, _ in links] == list(range(1, 8))  # the `total` row is not a link
    assert links[0] == (1, 12.5e9, 11.5e9)
    assert links[2] == (3, pytest.approx(3.141593e9), pytest.approx(2.718282e9))
    superpod = parse_hccs_bw(fixture_text("info_t_hccs_bw_a3_superpod_6links_FROM_SOURCE.txt"))
    assert [link for link, _, _ in superpod.links] == list(range(2, 8))
    xlink = "xlink link tx_bandwidth(GB/S) rx_bandwidth(GB/S)\n3 1.500000 0.500000\n"
    assert parse_hccs_bw(xlink).links == ((3, 1.5e9, 0.5e9),)  # the ORIENT_CH build's header


@pytest.mark.parametrize(
    "bad",
    [
        "hccs link rx_bandwidth(GB/S) tx_bandwidth(GB/S)\n0 1.0 2.0\n",  # rx first: not ours
        "hccs link tx_bandwidth(GB/S) rx_bandwidth(GB/S)\n",  # no link row
        "0 1.000000 2.000000\n",  # no header
    ],
)
def test_hccs_bw_refuses_other_layouts(bad: str) -> None:
    with pytest.raises(ParseError):
        parse_hccs_bw(bad)
