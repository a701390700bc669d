"""Key/value commands of parsers/detail.py: -t usages/common/power/temp/memory/ecc.

Expected values are read off the fixture files by eye.
"""

from __future__ import annotations

import pytest

from npumon.daemon.model.chips import ChipEcc, ChipUsage
from npumon.daemon.parsers.detail import (
    parse_common,
    parse_ecc,
    parse_memory,
    parse_usages,
)
from npumon.daemon.parsers.errors import ParseError
from tests.daemon.parsers.npu_smi_fixtures import fixture_text

MB = 1024 * 1024
MHZ = 1_000_000


# ---------------------------------------------------------------- -t usages
def test_usages_910a_tab_indented_ddr_and_hbm() -> None:
    report = parse_usages(fixture_text("info_t_usages_910a.txt"))
    assert report.npu == 0
    assert report.chips == (
        ChipUsage(
            chip=0,
            aicore_ratio=0.0,
            aicpu_ratio=0.0,
            ctrlcpu_ratio=0.0,
            memory_total_bytes=13553 * MB,
            hugepages_total=0,
            hbm_total_bytes=31129 * MB,
            memory_bandwidth_ratio=0.0,
            hbm_bandwidth_ratio=0.0,
        ),
    )


def test_usages_910b1_has_aivector_and_zero_ddr() -> None:
    (chip,) = parse_usages(fixture_text("info_t_usages_910b1.txt")).chips
    assert chip.memory_total_bytes == 0  # A2 prints DDR as 0: a value, not absent
    assert chip.hbm_total_bytes == 65536 * MB
    assert chip.aivector_ratio == 0.0
    assert chip.npu_util_ratio is None and chip.aicube_ratio is None  # not in 23.0.rc2


def test_usages_910b_25_5_1_adds_npu_utilization_and_aicube() -> None:
    (chip,) = parse_usages(fixture_text("info_t_usages_910b_25.5.1.txt")).chips
    assert (chip.npu_util_ratio, chip.aicube_ratio) == (0.0, 0.0)
    assert chip.ctrlcpu_ratio == 0.06 and chip.hbm_bandwidth_ratio == 0.0


def test_usages_memory_usage_rates_are_not_read() -> None:
    """The DDR/HBM/hugepages usage rates repeat the byte figures of the table: not parsed, so
    even a value that is no number leaves the report as it was."""
    text = fixture_text("info_t_usages_910b_25.5.1.txt")
    garbled = text.replace(
        "HBM Usage Rate(%)              : 5", "HBM Usage Rate(%)              : x"
    )
    assert garbled != text and parse_usages(garbled) == parse_usages(text)


def test_usages_910_ddr_hbm_without_indent() -> None:
    (chip,) = parse_usages(fixture_text("info_t_usages_910_ddr_hbm.txt")).chips
    assert (chip.memory_total_bytes, chip.hbm_total_bytes) == (15171 * MB, 32768 * MB)
    assert chip.ctrlcpu_ratio == 0.09


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
        ChipUsage(
            chip=1,
            memory_total_bytes=8192 * MB,
            hugepages_total=None,
            memory_bandwidth_ratio=0.07,
        ),
    )
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


def test_common_910b_with_mcu_power() -> None:
    report = parse_common(fixture_text("info_t_common_910b_with_mcu.txt"))
    (chip,) = report.chips
    assert (chip.temperature_celsius, chip.power_watts, chip.aicore_count) == (46.0, 69.0, 32)
    assert chip.aicore_rated_hertz == chip.aicore_current_hertz == 1000 * MHZ


def test_common_310p_two_chips_blocks_start_with_chip_id() -> None:
    report = parse_common(fixture_text("info_t_common_310p_2chip.txt"))
    assert [(c.chip, c.temperature_celsius) for c in report.chips] == [(0, 60.0), (1, 59.0)]
    assert {c.aicore_rated_hertz for c in report.chips} == {1080 * MHZ}
    assert {c.aicore_current_hertz for c in report.chips} == {960 * MHZ}
    assert all(c.power_watts is None for c in report.chips)  # 310P: power only in the mcu block


# ---------------------------------------------------------------- -t power / temp / memory / ecc
def test_memory_doc_example() -> None:
    report = parse_memory(fixture_text("info_t_memory_doc_a5.txt"))
    assert (report.npu, report.chip) == (0, None)
    assert (report.memory_total_bytes, report.hbm_total_bytes) == (0, 131072 * MB)
    assert report.hbm_temperature_celsius == 63.0


def test_ecc_doc_example_40_char_keys() -> None:
    report = parse_ecc(fixture_text("info_t_ecc_910_doc.txt"))
    assert report.npu == 1
    zeros = {name: 0 for name in ChipEcc.__dataclass_fields__ if name != "chip"}
    assert report.chips == (ChipEcc(chip=0, **zeros),)


# ---------------------------------------------------------------- forms printed by npu-smi's source
# Synthetic, written from the printf formats in npu-smi's source (npu-smi.md s.3); no real
# capture of these forms exists in the samples.
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
    assert report.hbm_total_bytes is None
    with pytest.raises(ParseError):
        parse_memory(text)  # two chips: which one?


# ---------------------------------------------------------------- the 950 (NPU_SMI_V2)
def test_usages_950_without_chip_id_is_the_npus_one_chip() -> None:
    """The 950's npu-smi prints no Chip Count and no Chip ID (`printf_ascend_card_info_header`,
    `printf_ascend_card_chip_id` under NPU_SMI_V2): the block is chip 0 of the NPU."""
    report = parse_usages(fixture_text("info_t_usages_950_doc.txt"))
    assert report.npu == 0
    (chip,) = report.chips
    assert chip.chip == 0
    assert (chip.aicore_ratio, chip.aivector_ratio, chip.aicube_ratio) == (0.0, 0.0, 0.0)
    assert (chip.aicpu_ratio, chip.ctrlcpu_ratio, chip.npu_util_ratio) == (0.0, 0.4, 0.0)
    assert (chip.hbm_total_bytes, chip.hbm_bandwidth_ratio) == (131072 * MB, 0.03)


def test_common_950_reads_its_aicore_key_as_npu_utilization() -> None:
    """On the 950 `-t common`'s "Aicore Usage Rate(%)" holds the multi-utilization call's
    npu_util (`npu_get_chip_common_info_npu_usage`), not the AI Core's."""
    (chip,) = parse_common(fixture_text("info_t_common_950_doc.txt")).chips
    assert chip.chip == 0
    assert chip.aicore_ratio is None and chip.npu_util_ratio == 0.0
    assert (chip.aicore_rated_hertz, chip.aicore_current_hertz) == (1650 * MHZ, 100 * MHZ)
    assert (chip.aicore_count, chip.temperature_celsius, chip.power_watts) == (32, 65.0, 298.6)


def test_common_with_chip_ids_keeps_the_aicore_key_as_aicore() -> None:
    (chip, _) = parse_common(fixture_text("info_t_common_310p_2chip.txt")).chips
    assert chip.aicore_ratio is not None and chip.npu_util_ratio is None


def test_ecc_950_hbm_only_without_chip_id() -> None:
    report = parse_ecc(fixture_text("info_t_ecc_950_doc.txt"))
    assert report.chips == (
        ChipEcc(
            chip=0,
            hbm_single_bit_errors=0,
            hbm_double_bit_errors=0,
            hbm_single_bit_aggregate_total=0,
            hbm_double_bit_aggregate_total=0,
        ),
    )


def test_a_block_without_chip_id_under_a_chip_count_still_needs_a_chip() -> None:
    """Only the V2 form (no Chip Count) is one chip: a V1 card header with an unnumbered block
    is not guessed."""
    with pytest.raises(ParseError, match="without Chip ID"):
        parse_usages("\tNPU ID : 0\n\tChip Count : 1\n\n\tAicore Usage Rate(%) : 3\n")


def test_two_unnumbered_950_blocks_are_an_error() -> None:
    text = fixture_text("info_t_usages_950_doc.txt")
    with pytest.raises(ParseError, match="printed twice"):
        parse_usages(text + "\n" + text.split("\n", 1)[1])
