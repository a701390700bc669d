"""`npu-smi info -t board` (parsers/board.py), card and chip level."""

from __future__ import annotations

from npumon.daemon.parsers.board import parse_board
from tests.daemon.parsers.npu_smi_fixtures import fixture_text


# ---------------------------------------------------------------- -t board
def test_board_card_level_910a() -> None:
    report = parse_board(fixture_text("info_t_board_910a.txt"))
    assert (report.npu, report.chip) == (0, None)
    assert (report.software_version, report.firmware_version) == ("23.0.5", "7.1.0.7.220")
    assert (report.bus_id, report.pci_device_id, report.chip_count) == ("0000:61:00.0", "0xD801", 1)
    assert report.serial is None and report.product_name is None  # not printed on A1
    assert ("Class ID", "NA") in report.extra and ("Board ID", "0x02") in report.extra


def test_board_card_level_910b_with_product_and_serial() -> None:
    report = parse_board(fixture_text("info_t_board_910b_25.5.1.txt"))
    assert (report.product_name, report.serial) == ("IT21HMDC_Bin5", "1025C9048791")
    assert (report.software_version, report.firmware_version) == ("25.5.1", "7.8.0.6.201")
    assert (report.bus_id, report.pci_device_id) == ("0000:C1:00.0", "0xD802")
    assert ("Model", "NA") in report.extra and ("Manufacturer", "Huawei") in report.extra


def test_board_chip_level_vdie_id_kept_with_single_spaces() -> None:
    report = parse_board(fixture_text("info_t_board_chip_910a.txt"))
    assert (report.npu, report.chip) == (0, 0)
    assert (report.chip_type, report.chip_name, report.chip_version) == ("Ascend", "910A", "V1")
    assert report.vdie_id == "42C711D4 20B03704 4A10C8D4 14CC040A D2102003"
    assert ("NDie ID", "27216594 20401010 4E10C8D4 14CC040A A4102003") in report.extra
    assert ("PCB ID", "NA") in report.extra
    assert report.firmware_version == "7.1.0.7.220" and report.bus_id == "0000:61:00.0"
