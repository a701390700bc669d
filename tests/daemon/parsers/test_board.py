"""`npu-smi info -t board` (parsers/board.py), card and chip level."""

from __future__ import annotations

import pytest

from npumon.daemon.parsers.board import parse_board
from npumon.daemon.parsers.errors import ParseError
from tests.daemon.parsers.npu_smi_fixtures import fixture_text


# ---------------------------------------------------------------- -t board
def test_board_card_level_910a() -> None:
    report = parse_board(fixture_text("info_t_board_910a.txt"))
    assert (report.npu, report.chip) == (0, None)
    assert (report.firmware_version, report.bus_id) == ("7.1.0.7.220", "0000:61:00.0")
    assert report.serial is None  # not printed on A1


def test_board_card_level_910b_with_product_and_serial() -> None:
    report = parse_board(fixture_text("info_t_board_910b_25.5.1.txt"))
    assert (report.serial, report.firmware_version) == ("1025C9048791", "7.8.0.6.201")
    assert report.bus_id == "0000:C1:00.0"


def test_board_chip_level_vdie_id_kept_with_single_spaces() -> None:
    report = parse_board(fixture_text("info_t_board_chip_910a.txt"))
    assert (report.npu, report.chip) == (0, 0)
    assert report.chip_name == "910A"
    assert report.vdie_id == "42C711D4 20B03704 4A10C8D4 14CC040A D2102003"
    assert report.firmware_version == "7.1.0.7.220" and report.bus_id == "0000:61:00.0"


def test_board_needs_a_key_besides_its_ids() -> None:
    assert parse_board("\tNPU ID : 0\n\tBoard ID : 0x02\n").firmware_version is None
    with pytest.raises(ParseError):
        parse_board("\tNPU ID : 0\n\tChip ID : 0\n")
