"""The interconnect queries through DCMI: the driver's structs into the parsers' models, npu-smi
serving a query DCMI has no value for, and the links' check against one npu-smi answer."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest

from npumon.daemon.model.chips import UsagesReport
from npumon.daemon.model.network import ErrorCounts, HccsBandwidth, HccsLink, HccsReport
from npumon.daemon.parsers import interconnect
from npumon.daemon.sources import query
from npumon.daemon.sources.dcmi.client import DcmiHelper, Hello
from npumon.daemon.sources.dcmi.crosscheck import link_disagreement
from npumon.daemon.sources.dcmi.reader import addressed
from npumon.daemon.sources.dcmi.readings import (
    hccs_bandwidth,
    hccs_ports,
    hccs_report,
    pcie_errors,
    sio_errors,
)
from npumon.daemon.sources.dcmi.serving import DcmiBackend
from npumon.daemon.sources.npu_smi import NpuSmi
from npumon.daemon.sources.query import Query
from npumon.daemon.sources.wrapper import SourceRun
from tests.daemon.sources.fake_runner import NPU_SMI, TABLE, Clock, FakeRunner
from tests.daemon.sources.test_dcmi_backend_choice import ANSWERS, CHIPS, StubHelper

LANE_WORD = 1 | 0b1111 << 1 | 0b10 << 9  # switched, lanes 0-3, 4-lane mode
PORTS = 0b11111110  # ports 1-7
HCCS = {
    "tx": [0, *range(100, 107), *[0] * 8],
    "rx": [0, *range(200, 207), *[0] * 8],
    "crc": [0, 0, 0, 0, 0, 0, 0, 42, *[0] * 8],
    "retry": [0, 0, 0, 0, 0, 0, 0, 17, *[0] * 8],
    "pcs_status": 0,
    "hdlc_status": 3,
    "ports": PORTS,
    "lanes": [LANE_WORD] * 7 + [0] * 9,
}
BANDWIDTH = {"tx": [0.0, *[12.3456789] * 7, *[0.0] * 8], "rx": [0.0, *[1.0] * 7, *[0.0] * 8]}


def test_hccs_links_as_npu_smi_prints_them() -> None:
    report = hccs_report({"mainboard": 0x14, "hccs": HCCS})
    assert report is not None and len(report.links) == 7
    assert (report.healthy, report.first_error_link) == (True, None)
    first, last = report.links[0], report.links[6]
    assert first == HccsLink(
        1,  # the port index, as npu-smi's -t hccs-bw labels it
        lanes=4,
        speed_bytes_per_second=224 * 1e9 / 8,  # 4 lanes x 56 Gbps
        tx_packets=100,
        tx_octets=2000,  # packets x 20
        rx_packets=200,
        rx_octets=4000,
        retries=0,
        crc_errors=0,
    )
    assert (last.link, last.crc_errors, last.retries) == (7, 42, 17)


def test_an_atlas_9000_superpod_board_starts_at_port_2() -> None:
    assert list(hccs_ports(0x1C)) == list(hccs_ports(0x1D)) == [2, 3, 4, 5, 6, 7]
    assert list(hccs_ports(0x14)) == [1, 2, 3, 4, 5, 6, 7]
    report = hccs_report({"mainboard": 0x1C, "hccs": HCCS})
    assert report is not None and [link.tx_packets for link in report.links] == [
        101,
        102,
        103,
        104,
        105,
        106,
    ]
    rows = hccs_bandwidth({"mainboard": 0x1D, "hccs_bw": BANDWIDTH})
    assert rows is not None and [link for link, _, _ in rows.links] == [2, 3, 4, 5, 6, 7]


def test_one_health_for_the_chip_and_the_packed_lane_words() -> None:
    """pcs_status set or HDLC not OK: the chip is NOK; pcs_status bits 8-15 name the first port
    with a problem; a port that is not HCCS takes no lane word."""
    report = hccs_report({"mainboard": 0, "hccs": {**HCCS, "pcs_status": 0x701}})
    assert report is not None and (report.healthy, report.first_error_link) == (False, 7)
    report = hccs_report({"mainboard": 0, "hccs": {**HCCS, "hdlc_status": 1}})
    assert report is not None and (report.healthy, report.first_error_link) == (False, None)
    two_lanes = 1 | 0b11 << 1 | 0b11 << 9
    packed = {**HCCS, "ports": 0b11110110, "lanes": [LANE_WORD, LANE_WORD, two_lanes] + [0] * 13}
    report = hccs_report({"mainboard": 0, "hccs": packed})
    assert report is not None
    assert [link.lanes for link in report.links] == [4, 4, 0, 2, 0, 0, 0]


def test_bandwidth_rows_by_port_at_npu_smis_precision() -> None:
    rows = hccs_bandwidth({"mainboard": 0x14, "hccs_bw": BANDWIDTH})
    assert rows is not None and rows.links[0] == (1, 12.345679e9, 1e9)
    assert [link for link, _, _ in rows.links] == list(range(1, 8))


def test_pcie_and_sio_counters_carry_the_parsers_names() -> None:
    pcie = pcie_errors({"pcie_errors": [1, 2, 3, 4, 5]})
    assert pcie == ErrorCounts((("tx", 1), ("rx", 2), ("lcrc", 3), ("ecrc", 4), ("retry", 5)))
    assert {k for k, _ in pcie.counts} <= set(interconnect.PCIE_KINDS.values())
    sio = sio_errors({"sio": [3, 9]})
    assert sio == ErrorCounts((("transmit", 3), ("receive", 9)))
    assert {k for k, _ in sio.counts} == set(interconnect.SIO_DIRECTIONS.values())


def test_no_value_no_model() -> None:
    """-8255, a missing symbol or -8002 leave the value out: npu-smi serves the query."""
    assert hccs_report({"hccs": HCCS}) is None and hccs_report({"mainboard": 0}) is None
    assert hccs_bandwidth({"mainboard": 0}) is None
    assert pcie_errors({}) is None and sio_errors({}) is None


@pytest.mark.parametrize(
    ("asked", "served"),
    [
        (query.hccs(3, 1), ("hccs", 3, 1)),
        (query.hccs_bandwidth(3, 0), ("hccs-bw", 3, 0)),
        (query.hccs(3, 0, by_npu=True), None),  # the 950's: asked of the NPU, npu-smi serves
        (query.health_of(3, 0, by_npu=True), None),
        (query.pcie_errors(3, 0, by_npu=True), ("pcie-err", 3, None)),
        (query.sio_errors(3, 1), ("sio-info", 3, 1)),
        (query.usages(3), ("usages", 3, None)),
        (Query("usages", UsagesReport, 3, 1), None),  # usages are an NPU's
        (query.board_of(3), None),  # no DCMI answer: npu-smi's
    ],
)
def test_which_queries_dcmi_answers(asked: Query[Any], served: object) -> None:
    assert addressed(asked) == served


def _hccs_text(report: HccsReport) -> str:
    """`-t hccs` in the driver's print format (print_npu_hccs_lane) for ``report``."""
    health = "OK" if report.healthy else "NOK"
    first = "NA" if report.first_error_link is None else report.first_error_link
    rows = (
        ("hccs lane mode ", [x.lanes for x in report.links]),
        ("hccs link lane list ", ["1111" + " " * 16 for _ in report.links]),
        (
            "hccs link speed ",
            [int((x.speed_bytes_per_second or 0) * 8 / 1e9) for x in report.links],
        ),
        ("hccs tx packets ", [x.tx_packets for x in report.links]),
        ("hccs tx bytes ", [x.tx_octets for x in report.links]),
        ("hccs rx packets ", [x.rx_packets for x in report.links]),
        ("hccs rx bytes ", [x.rx_octets for x in report.links]),
        ("hccs retry count ", [x.retries for x in report.links]),
        ("hccs error count ", [x.crc_errors for x in report.links]),
    )
    lists = "".join(
        f"\t{key:<30} : [" + "".join(f"{v!s:<20} " for v in values) + "]\n" for key, values in rows
    )
    return (
        f"\t{'hccs health status ':<30} : {health}\n"
        + lists
        + f"\t{'hccs first error lane ':<30} : {first}\n"
    )


HCCS_ARGS = ("-t", "hccs", "-i", "0", "-c", "0")


def _smi(npu_smi_hccs: str) -> tuple[DcmiBackend, StubHelper, FakeRunner, Clock]:
    helper, clock = StubHelper(), Clock()
    runner = FakeRunner({"info": TABLE, "info " + " ".join(HCCS_ARGS): npu_smi_hccs})
    answers: dict[str, Any] = {
        "mainboard": 0x14,
        "hccs": HCCS,
        "hccs_bw": BANDWIDTH,
        "pcie_errors": [0, 0, 0, 0, 2],
    }
    ANSWERS.update(answers)
    helper.codes["sio"] = -8255
    smi = DcmiBackend(
        NpuSmi(["npu-smi"], 5.0, runner),
        mode="auto",
        helper=cast(DcmiHelper, helper),
        proc_root=Path("/nonexistent"),
        monotonic=clock,
    )
    smi.ask(SourceRun(), query.info())  # the table's cross-check
    return smi, helper, runner, clock


@pytest.fixture(autouse=True)
def _stub_answers() -> Any:
    saved = dict(ANSWERS)
    yield
    ANSWERS.clear()
    ANSWERS.update(saved)


def _hccs(smi: DcmiBackend, run: SourceRun | None = None) -> HccsReport:
    return smi.ask(run or SourceRun(), query.hccs(0, 0))


def test_hccs_is_checked_once_per_table_check_then_dcmis() -> None:
    dcmi = hccs_report({"mainboard": 0x14, "hccs": HCCS})
    assert dcmi is not None
    smi, helper, runner, clock = _smi(_hccs_text(dcmi))
    run = SourceRun()
    assert _hccs(smi, run) == dcmi and run.refusals == []
    assert _hccs(smi) == dcmi
    assert runner.calls.count("info " + " ".join(HCCS_ARGS)) == 1  # the check, once
    clock.now += 3600
    smi.ask(SourceRun(), query.info())  # the next table cross-check
    _hccs(smi)
    assert runner.calls.count("info " + " ".join(HCCS_ARGS)) == 2


def test_a_link_disagreement_has_npu_smi_serve_until_the_next_check() -> None:
    """npu-smi says the chip is NOK, port 7 first; DCMI says OK."""
    text = NPU_SMI / "info_t_hccs_910b_nok_port7_FROM_SOURCE.txt"
    smi, helper, runner, clock = _smi(text.read_text())
    run = SourceRun()
    served = _hccs(smi, run)
    assert served == interconnect.parse_hccs(text.read_text())
    assert [f.reason for f in run.refusals] == ["cross_check"]
    asked = len(helper.requests)
    assert _hccs(smi) == served and len(helper.requests) == asked  # npu-smi's, DCMI not asked
    clock.now += 3600
    smi.ask(SourceRun(), query.info())
    _hccs(smi)
    assert len(helper.requests) > asked + 1  # checked again after the hour


def test_pcie_from_dcmi_and_sio_from_npu_smi_where_dcmi_says_8255() -> None:
    """PCIe errors from DCMI (the first after the check also asked of npu-smi, whose stand-in
    here says "not supported": DCMI's is served unchecked); SIO from npu-smi."""
    smi, helper, runner, clock = _smi("")
    for _ in range(2):
        pcie = smi.ask(SourceRun(), query.pcie_errors(0, 0, by_npu=True))
        assert dict(pcie.counts)["retry"] == 2
    assert runner.calls.count("info -t pcie-err -i 0") == 1
    for _ in range(2):
        with pytest.raises(Exception, match="not support"):
            smi.ask(SourceRun(), query.sio_errors(0, 0, by_npu=True))
    assert runner.calls.count("info -t sio-info -i 0") == 2
    assert sum(1 for r in helper.requests for c in r if c[0] == "sio") == 1  # cached an hour


def test_the_link_comparison_and_its_slack() -> None:
    dcmi = hccs_report({"mainboard": 0x14, "hccs": HCCS})
    assert dcmi is not None and link_disagreement(dcmi, dcmi) is None
    grown = replace(
        dcmi,
        links=tuple(replace(x, tx_packets=(x.tx_packets or 0) + 9_000_000) for x in dcmi.links),
    )
    assert link_disagreement(dcmi, grown) is None  # within 10 M packets
    short = replace(dcmi, links=dcmi.links[1:])
    assert link_disagreement(dcmi, short) == "7 links through dcmi, 6 through npu-smi"
    renumbered = replace(dcmi, links=tuple(replace(x, link=x.link - 1) for x in dcmi.links))
    assert link_disagreement(dcmi, renumbered) is not None
    failing = replace(dcmi, healthy=False, first_error_link=7)
    assert link_disagreement(dcmi, failing) == (
        "health and first error port: dcmi (True, None), npu-smi (False, 7)"
    )
    bw = HccsBandwidth(((1, 1.0, 2.0), (2, 1.0, 2.0)))
    assert link_disagreement(bw, HccsBandwidth(((1, 5.0, 5.0), (2, 0.0, 0.0)))) is None
    assert link_disagreement(bw, HccsBandwidth(((0, 1.0, 2.0), (1, 1.0, 2.0)))) is not None


def test_an_npu_smi_that_cannot_answer_leaves_dcmis_links_unchecked() -> None:
    """npu-smi's -t hccs failing to parse (or refusing) is counted; DCMI serves until the next
    table check, and npu-smi is not asked again before it."""
    dcmi = hccs_report({"mainboard": 0x14, "hccs": HCCS})
    smi, _, runner, _ = _smi("\thccs health status : OK\n")
    run = SourceRun()
    assert _hccs(smi, run) == dcmi and _hccs(smi) == dcmi
    assert [f.reason for f in run.refusals] == ["parse_error"]
    assert runner.calls.count("info " + " ".join(HCCS_ARGS)) == 1


@pytest.mark.parametrize(("board", "through_dcmi"), [(0x15, True), (0x14, False)])
def test_a3_pcie_errors_through_dcmi_only_on_the_a_x_board(
    monkeypatch: pytest.MonkeyPatch, board: int, through_dcmi: bool
) -> None:
    """npu-smi reads them through DCMI on an A3 only on the A+X board (mainboard 0x15); on
    the others DCMI is not asked and npu-smi answers (here: "not supported")."""
    a3 = tuple(replace(chip, pci_device_id=0xD803) for chip in CHIPS)
    monkeypatch.setattr(
        StubHelper, "hello", lambda self: Hello(a3, frozenset(), "25.2.2", "25.2.2")
    )
    smi, helper, runner, _ = _smi("")
    ANSWERS["mainboard"] = board
    asked_of = query.pcie_errors(0, 0, by_npu=True)
    if through_dcmi:
        pcie = smi.ask(SourceRun(), asked_of)
        assert dict(pcie.counts)["retry"] == 2
    else:
        with pytest.raises(Exception, match="not support"):
            smi.ask(SourceRun(), asked_of)
    asked = [c[0] for r in helper.requests for c in r if c[0] in ("mainboard", "pcie_errors")]
    assert asked == (["mainboard", "pcie_errors"] if through_dcmi else ["mainboard"])
