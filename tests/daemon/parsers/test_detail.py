"""Key/value commands (-t usages/common/power/temp/memory/ecc/health/board), -m, -l, errors.

Expected values are read off the fixture files by eye.
"""

from __future__ import annotations

import pytest

from npumon.daemon.model.npu_smi import ChipEcc, ChipReading, ChipUsage, MappedChip
from npumon.daemon.parsers.board import parse_board
from npumon.daemon.parsers.detail import (
    parse_common,
    parse_ecc,
    parse_memory,
    parse_power,
    parse_temp,
    parse_usages,
)
from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.failure import classify_failure
from npumon.daemon.parsers.health import parse_health
from npumon.daemon.parsers.mapping import parse_list, parse_mapping
from tests.daemon.parsers.npu_smi_fixtures import fixture_text

MB = 1024 * 1024
MHZ = 1_000_000


# ---------------------------------------------------------------- -t usages
def test_usages_910a_tab_indented_ddr_and_hbm() -> None:
    report = parse_usages(fixture_text("info_t_usages_910a.txt"))
    assert report.npu == 0
    assert report.chips == (
        ChipUsage(
            chip=0, aicore_ratio=0.0, aicpu_ratio=0.0, ctrlcpu_ratio=0.0,
            memory_total_bytes=13553 * MB, memory_usage_ratio=0.06, hugepages_total=0,
            hugepages_usage_ratio=0.0, hbm_total_bytes=31129 * MB, hbm_usage_ratio=0.0,
            memory_bandwidth_ratio=0.0, hbm_bandwidth_ratio=0.0,
        ),
    )  # fmt: skip


def test_usages_910b1_has_aivector_and_zero_ddr() -> None:
    (chip,) = parse_usages(fixture_text("info_t_usages_910b1.txt")).chips
    assert chip.memory_total_bytes == 0  # A2 prints DDR as 0: a value, not absent
    assert chip.hbm_total_bytes == 65536 * MB and chip.hbm_usage_ratio == 0.04
    assert chip.aivector_ratio == 0.0
    assert chip.npu_util_ratio is None and chip.aicube_ratio is None  # not in 23.0.rc2


def test_usages_910b_25_5_1_adds_npu_utilization_and_aicube() -> None:
    (chip,) = parse_usages(fixture_text("info_t_usages_910b_25.5.1.txt")).chips
    assert (chip.npu_util_ratio, chip.aicube_ratio) == (0.0, 0.0)
    assert chip.ctrlcpu_ratio == 0.06 and chip.hbm_usage_ratio == 0.05


def test_usages_910_ddr_hbm_without_indent() -> None:
    (chip,) = parse_usages(fixture_text("info_t_usages_910_ddr_hbm.txt")).chips
    assert (chip.memory_total_bytes, chip.hbm_total_bytes) == (15171 * MB, 32768 * MB)
    assert chip.ctrlcpu_ratio == 0.09 and chip.memory_usage_ratio == 0.03


def test_usages_310p_two_chip_blocks_end_with_chip_id() -> None:
    report = parse_usages(fixture_text("info_t_usages_310p_2chip.txt"))
    assert report.npu == 1
    assert [c.chip for c in report.chips] == [0, 1]
    assert [c.memory_total_bytes for c in report.chips] == [44280 * MB, 43693 * MB]
    assert [c.ctrlcpu_ratio for c in report.chips] == [0.02, 0.03]
    assert [c.vectorcore_ratio for c in report.chips] == [0.0, 0.0]
    assert [c.memory_bandwidth_ratio for c in report.chips] == [0.51, 0.51]
    assert all(c.hbm_total_bytes is None for c in report.chips)


def test_usages_single_chip_output_and_310_aliases() -> None:
    # `-i 3 -c 1`: only the chip's lines, no NPU ID and no Chip ID; 310 key names.
    text = (
        "\tMemory Capacity(MB)            : 8192\n"
        "\tMemory Usage Rate(%)           : 33\n"
        "\tHugepages Total(page)          : NA\n"
        "\tMemory Bandwidth Usage Rate(%) : 7\n"
        "\tSome Future Field(%)           : whatever\n"
    )
    report = parse_usages(text, npu=3, chip=1)
    assert report.npu == 3
    assert report.chips == (
        ChipUsage(chip=1, memory_total_bytes=8192 * MB, memory_usage_ratio=0.33,
                  hugepages_total=None, memory_bandwidth_ratio=0.07),
    )  # fmt: skip
    with pytest.raises(ParseError):
        parse_usages(text)  # which NPU and chip? the caller must say


def test_known_key_with_bad_value_names_the_line() -> None:
    text = fixture_text("info_t_usages_910a.txt").replace(": 13553", ": 13 553")
    with pytest.raises(ParseError) as caught:
        parse_usages(text)
    assert caught.value.line_no == 4 and "DDR Capacity(MB)" in caught.value.line


# ---------------------------------------------------------------- -t common
def test_common_910b1_rated_and_current_frequency() -> None:
    report = parse_common(fixture_text("info_t_common_910b1.txt"))
    assert report.npu == 1
    (chip,) = report.chips
    assert chip.aicore_rated_hertz == 1800 * MHZ and chip.aicore_current_hertz == 800 * MHZ
    assert (chip.aicore_count, chip.temperature_celsius, chip.power_watts) == (24, 46.0, 93.4)
    assert (chip.memory_usage_ratio, chip.hbm_usage_ratio) == (0.0, 0.04)
    assert report.mcu_temperature_celsius == 38.0  # the mcu's, not the chip's
    assert report.mcu_power_watts is None


def test_common_910b_with_mcu_power() -> None:
    report = parse_common(fixture_text("info_t_common_910b_with_mcu.txt"))
    (chip,) = report.chips
    assert (chip.temperature_celsius, chip.power_watts, chip.aicore_count) == (46.0, 69.0, 32)
    assert chip.aicore_rated_hertz == chip.aicore_current_hertz == 1000 * MHZ
    assert (report.mcu_temperature_celsius, report.mcu_power_watts) == (48.0, 45.2)


def test_common_310p_two_chips_blocks_start_with_chip_id() -> None:
    report = parse_common(fixture_text("info_t_common_310p_2chip.txt"))
    assert [(c.chip, c.temperature_celsius) for c in report.chips] == [(0, 60.0), (1, 59.0)]
    assert {c.aicore_rated_hertz for c in report.chips} == {1080 * MHZ}
    assert {c.aicore_current_hertz for c in report.chips} == {960 * MHZ}
    assert all(c.power_watts is None for c in report.chips)  # 310P: power only in the mcu block
    assert (report.mcu_temperature_celsius, report.mcu_power_watts) == (48.0, 45.2)


# ---------------------------------------------------------------- -t power / temp / memory / ecc
def test_power_910b() -> None:
    report = parse_power(fixture_text("info_t_power_910b.txt"))
    assert (report.npu, report.chips) == (0, (ChipReading(0, 103.5),))
    assert report.mcu_power_watts is None and report.rated_power_watts is None


def test_power_key_value_without_spaces_and_na() -> None:
    report = parse_power("NPU ID:4\nChip Count:1\n\nNPU Real-time Power(W):NA\nChip ID:0\n")
    assert report.npu == 4 and report.chips == (ChipReading(0, None),)


def test_temp_910b_chip_and_mcu_sensors() -> None:
    report = parse_temp(fixture_text("info_t_temp_910b_with_mcu_sensors.txt"))
    assert report.npu == 0
    assert report.chips == (ChipReading(0, 39.0),)
    assert report.mcu_sensors_celsius == (("LM75A_TE", 36.0), ("LM75B_TE", 36.0))


def test_memory_doc_example() -> None:
    report = parse_memory(fixture_text("info_t_memory_doc_a5.txt"))
    assert (report.npu, report.chip) == (0, None)
    assert (report.memory_total_bytes, report.memory_clock_hertz) == (0, 0.0)
    assert report.hbm_total_bytes == 131072 * MB and report.hbm_clock_hertz == 3200 * MHZ
    assert report.hbm_temperature_celsius == 63.0 and report.hbm_manufacturer_id == "0x5A"


def test_ecc_doc_example_40_char_keys() -> None:
    report = parse_ecc(fixture_text("info_t_ecc_910_doc.txt"))
    assert report.npu == 1
    zeros = {name: 0 for name in ChipEcc.__dataclass_fields__ if name != "chip"}
    assert report.chips == (ChipEcc(chip=0, **zeros),)


# ---------------------------------------------------------------- -t health
def test_health_ok() -> None:
    report = parse_health(fixture_text("info_t_health_910a_ok.txt"))
    assert (report.status, report.error_codes, report.error_information) == ("OK", (), ())


def test_health_alarm_multiple_codes_and_continuation_lines() -> None:
    report = parse_health(fixture_text("info_t_health_alarm_910a.txt"))
    assert report.status == "Alarm"
    assert report.error_codes == ("A4025021", "8C03A000", "8C084E00")
    assert report.error_information == (
        "ascend_monitor adda heart beat lost error",
        "node type=process-manager, sensor type=General Software, "
        "event state=The process start failed or exit abnormally",
        "node type=adda, sensor type=Heartbeat Sensor, event state=Heartbeat Lost.",
    )


def test_health_na_status_and_bad_code() -> None:
    assert parse_health("\tHealth Status : NA\n\tError Code : NA\n").status is None
    with pytest.raises(ParseError):
        parse_health("\tHealth Status : OK\n\tError Code : A402502G\n")
    with pytest.raises(ParseError):
        parse_health("\tError Code : NA\n")  # no Health Status at all


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


# ---------------------------------------------------------------- -m and -l
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("info_m_910a_8chip.txt", [(n, 0, n, "Ascend 910A") for n in range(8)]),
        ("info_m_910a_8chip_24.1rc2.txt", [(n, 0, n, "Ascend 910A") for n in range(8)]),
        ("info_m_910b_8npu_with_mcu.txt", [(n, 0, n, "Ascend xxx") for n in range(8)]),
        ("info_m_310_4chip_npu-smi20.2.txt", [(215, c, c, "MiniD") for c in range(4)]),
        ("info_m_310_4chip_with_mcu.txt", [(6, c, c, "MiniD") for c in range(4)]),
        (
            "info_m_310p_2chip_per_card.txt",
            [(n, c, 2 * i + c, "Ascend xxx") for i, n in enumerate((1, 2, 4, 5)) for c in (0, 1)],
        ),
    ],
)
def test_mapping(name: str, expected: list[tuple[int, int, int, str]]) -> None:
    chips = parse_mapping(fixture_text(name)).chips
    assert [(c.npu, c.chip, c.logic_id, c.name) for c in chips] == expected  # MCU rows dropped


def test_mapping_a3_phy_id_and_no_card() -> None:
    text = (
        "\tNPU ID  Chip ID  Chip Logic ID  Chip Phy-ID  Chip Name\n"
        "\t0       0        0              0            Ascend 910_9391\n"
        "\t0       1        1              1            Ascend 910_9391\n"
        "\t0       2        -              -            Mcu\n"
    )
    assert parse_mapping(text).chips == (
        MappedChip(0, 0, 0, "Ascend 910_9391", 0),
        MappedChip(0, 1, 1, "Ascend 910_9391", 1),
    )
    assert parse_mapping("There is no NPU card on this server.\n").chips == ()
    with pytest.raises(ParseError):
        parse_mapping("Invalid card id.\n")


def test_list_910b_total_count() -> None:
    listed = parse_list(fixture_text("info_l_910b_8npu.txt"))
    assert listed.total == 8
    assert [(n.npu, n.chip_count, n.product_name, n.serial) for n in listed.npus] == [
        (n, 1, None, None) for n in range(8)
    ]


def test_list_310_card_count_with_product_and_serial() -> None:
    text = (
        "\tCard Count                     : 2\n\n"
        "\tNPU ID                         : 215\n"
        "\tProduct Name                   : Atlas 300I Model 3000\n"
        "\tSerial Number                  : 033GHU10K1000195\n"
        "\tChip Count                     : 4\n\n"
        "\tNPU ID                         : 1792\n"
        "\tChip Count                     : 4\n"
    )
    listed = parse_list(text)
    assert listed.total == 2
    assert [(n.npu, n.chip_count, n.product_name, n.serial) for n in listed.npus] == [
        (215, 4, "Atlas 300I Model 3000", "033GHU10K1000195"),
        (1792, 4, None, None),
    ]


# ---------------------------------------------------------------- known failures
def test_dcmi_init_failure_from_the_sample() -> None:
    failure = classify_failure(fixture_text("error_dcmi_init_failed.txt"))
    assert failure is not None
    assert (failure.reason, failure.code) == ("dcmi_init", -8005)
    assert failure.message == "dcmi module initialize failed. ret is -8005"
    assert "HwHiAiUser" in failure.advice and "reboot" in failure.advice


def test_invalid_card_from_the_sample() -> None:
    failure = classify_failure(fixture_text("error_invalid_card_id.txt"))
    assert failure is not None and failure.reason == "invalid_card"
    assert failure.message == "Invalid card id." and "lspci" in failure.advice


@pytest.mark.parametrize(
    ("text", "reason", "code"),
    [
        ("dcmi model initialized failed, because the device is used. ret is -8020", "device_busy",
         -8020),
        ("Invalid chip id.\nError parameter of -c\n", "invalid_chip", None),
        ("There is no NPU card on this server.", "no_device", None),
        ("This device does not support querying power.", "not_supported", None),
        ("Command or option is not found.\nUsage: npu-smi info ...", "unknown_option", None),
        ("Failed to execute npu-smi info. ret is -9005.", "command_failed", -9005),
    ],
)  # fmt: skip
def test_known_failure_texts(text: str, reason: str, code: int | None) -> None:
    failure = classify_failure(text)
    assert failure is not None and (failure.reason, failure.code) == (reason, code)
    assert failure.advice


def test_normal_output_is_not_a_failure() -> None:
    assert classify_failure(fixture_text("info_910b4-1_2chip_procs_25.2.2.txt")) is None
    assert classify_failure("") is None


# ---------------------------------------------------------------- forms printed by npu-smi's source
# Synthetic, written from the printf formats in npu-smi's source (npu-smi.md s.3); no real
# capture of these forms exists in the samples.
def test_power_310p_prints_only_the_mcu_block() -> None:
    text = (
        "\tNPU ID                         : 1\n\tChip Count                     : 2\n\n"
        "\tPower Dissipation(W)           : 45.2\n\tChip Name                      : mcu\n"
    )
    report = parse_power(text)
    assert (report.npu, report.chips, report.mcu_power_watts) == (1, (), 45.2)
    with pytest.raises(ParseError):
        parse_power("\tNPU ID                         : 1\n")  # neither chip nor MCU


def test_power_310_rated_power_dissipation_is_the_chip_reading() -> None:
    text = (
        "\tNPU ID                         : 215\n\tChip Count                     : 4\n\n"
        "\tRated Power Dissipation(W)     : 12.8\n\tChip ID                        : 0\n\n"
        "\tRated Power Dissipation(W)     : 12.7\n\tChip ID                        : 1\n"
    )
    report = parse_power(text)
    assert report.chips == (ChipReading(0, 12.8), ChipReading(1, 12.7))
    assert report.rated_power_watts == 12.7


def test_memory_310p_card_total_is_not_the_chip_capacity() -> None:
    text = (
        "\tNPU ID                         : 2944\n\tChip Count                     : 2\n\n"
        "\tTotal DDR Capacity(MB)         : 49152\n\tDDR Capacity(MB)               : 44278\n"
        "\tDDR Clock Speed(MHz)           : 451\n\tChip ID                        : 0\n\n"
        "\tTotal DDR Capacity(MB)         : 49152\n\tDDR Capacity(MB)               : 43693\n"
        "\tDDR Clock Speed(MHz)           : 451\n\tChip ID                        : 1\n"
    )
    report = parse_memory(text, chip=1)
    assert (report.npu, report.chip, report.memory_total_bytes) == (2944, 1, 43693 * MB)
    assert report.memory_clock_hertz == 451 * MHZ and report.hbm_total_bytes is None
    with pytest.raises(ParseError):
        parse_memory(text)  # two chips: which one?


def test_mapping_950_header_with_slot_id() -> None:
    text = (
        "\tNPU ID                         Slot ID                        Chip ID        "
        "                Chip Phy-ID                    Chip Name\n"
        "\t0                              1                              0              "
        "                0                              Ascend 950DT\n"
    )
    assert parse_mapping(text).chips == (MappedChip(0, 0, None, "Ascend 950DT", 0),)
