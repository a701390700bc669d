"""npu-smi's interconnect queries. pcie-err and sio-info: the 950 documentation examples.
-t hccs and -t hccs-bw: no public output exists; the fixtures are SYNTHETIC, written from the
driver's print format, and the tests below also pin what the parser refuses."""

from __future__ import annotations

import pytest

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


def test_hccs_synthetic_seven_links_one_degraded() -> None:
    links = parse_hccs(fixture_text("info_t_hccs_910b_7links_SYNTHETIC.txt")).links
    assert [link.link for link in links] == list(range(7))
    assert all(link.healthy and link.lanes == 4 for link in links[:6])
    assert links[0].speed_bytes_per_second == 224 * GBIT
    assert (links[0].tx_packets, links[0].tx_octets) == (1200345, 1200345 * 20)
    assert links[0].rx_packets == 1100345 and links[0].crc_errors == 0
    bad = links[6]
    assert (bad.healthy, bad.lanes, bad.retries, bad.crc_errors) == (False, 2, 17, 42)
    assert bad.speed_bytes_per_second == 112 * GBIT


def test_hccs_310p_prints_counters_only_and_a_single_port_list() -> None:
    text = (
        "\thccs tx packets                : [12                  ]\n"
        "\thccs retry count               : [0                   ]\n"
        "\thccs error count               : [5                   ]\n"
    )
    [link] = parse_hccs(text).links
    assert (link.tx_packets, link.crc_errors, link.healthy, link.lanes) == (12, 5, None, None)


@pytest.mark.parametrize(
    "bad",
    [
        "\thccs error count : [1 2 3 ]\n\thccs retry count : [1 2 ]\n",  # lists of unequal length
        "\thccs error count : 7\n",  # not a list
        "\thccs health status : [OK maybe ]\n",
        "\thccs surprise : [1 ]\n",  # an unknown hccs line: a new layout, not guessed at
        "",
    ],
)
def test_hccs_refuses_anything_off_the_print_format(bad: str) -> None:
    with pytest.raises(ParseError):
        parse_hccs(bad)


def test_hccs_bw_synthetic_tx_before_rx_total_dropped() -> None:
    links = parse_hccs_bw(fixture_text("info_t_hccs_bw_910b_7links_SYNTHETIC.txt")).links
    assert len(links) == 7  # the `total` row is not a link
    assert links[0] == (0, 12.5e9, 11.5e9)
    assert links[3] == (3, pytest.approx(3.141593e9), pytest.approx(2.718282e9))


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
