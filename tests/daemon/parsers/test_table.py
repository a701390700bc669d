"""`npu-smi info` table: values read off each real sample by eye, plus synthetic edge cases."""

from __future__ import annotations

import pytest

from npumon.daemon.model.chips import InfoTable, TableChip, TableProcess
from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.table import parse_info
from tests.daemon.parsers.npu_smi_fixtures import fixture_text

MB = 1024 * 1024


def info(name: str) -> InfoTable:
    return parse_info(fixture_text(name))


def by_id(table: InfoTable) -> dict[tuple[int, int], TableChip]:
    return {(c.npu, c.chip): c for c in table.chips}


def procs(table: InfoTable) -> list[tuple[int, int | None, int, str | None, int | None]]:
    return [(p.npu, p.chip, p.pid, p.name, p.memory_bytes) for p in table.processes]


def test_310_single_chip_23_0_0() -> None:
    table = info("info_310_1chip_npu-smi23.0.0.txt")
    assert (table.npu_smi_version, table.version) == ("23.0.0", "23.0.0")
    assert table.chips == (
        TableChip(
            npu=0,
            chip=0,
            name="310",
            health="OK",
            power_watts=12.8,
            temperature_celsius=61.0,
            hugepages_used=0,
            hugepages_total=969,
            bus_id="0000:01:00.0",
            aicore_ratio=0.0,
            memory_used_bytes=577 * MB,
            memory_total_bytes=7759 * MB,
            hbm_used_bytes=None,
            hbm_total_bytes=None,
            logic_id=0,
        ),
    )
    assert table.processes == () and table.processes_cut is None


def test_310_four_chips_old_80_wide_20_2_without_hugepages() -> None:
    table = info("info_310_4chip_npu-smi20.2.txt")
    assert table.npu_smi_version == "20.2.0"
    assert [(c.npu, c.chip, c.logic_id) for c in table.chips] == [(215, i, i) for i in range(4)]
    assert [c.bus_id for c in table.chips] == [
        "0000:DA:00.0",
        "0000:DC:00.0",
        "0000:DD:00.0",
        "0000:DB:00.0",
    ]
    assert [c.temperature_celsius for c in table.chips] == [56.0, 57.0, 57.0, 55.0]
    for chip in table.chips:
        assert chip.power_watts == 12.8 and chip.name == "310" and chip.health == "OK"
        assert chip.hugepages_used is None and chip.hugepages_total is None  # no such column
        assert (chip.memory_used_bytes, chip.memory_total_bytes) == (2703 * MB, 8192 * MB)
    assert table.processes == () and table.processes_cut is None  # no process section


def test_310_four_chips_21_0_4_logic_ids_and_version_differs_from_tool() -> None:
    table = info("info_310_4chip_npu-smi21.0.4.txt")
    assert (table.npu_smi_version, table.version) == ("21.0.4", "21.0.4.B030")
    assert [(c.npu, c.chip, c.logic_id) for c in table.chips] == [
        (6, 0, 3),
        (6, 1, 4),
        (6, 2, 5),
        (6, 3, 6),
    ]
    assert [c.temperature_celsius for c in table.chips] == [73.0, 74.0, 70.0, 65.0]
    assert {(c.hugepages_used, c.hugepages_total) for c in table.chips} == {(0, 970)}
    assert [c.memory_used_bytes for c in table.chips] == [2703 * MB] + [2867 * MB] * 3
    assert [c.bus_id for c in table.chips][-1] == "0000:8C:00.0"


def test_310b4_alarm_bus_id_na_and_trailing_spaces() -> None:
    (chip,) = info("info_310b4_alarm_busid_na.txt").chips
    assert chip.name == "310B4" and chip.health == "Alarm"
    assert chip.power_watts == 0.0  # printed 0.0: a real (if meaningless) value, not NA
    assert chip.bus_id is None  # NA: the SoC has no PCIe
    assert (chip.hugepages_used, chip.hugepages_total) == (15, 15)
    assert (chip.memory_used_bytes, chip.memory_total_bytes) == (3628 * MB, 15609 * MB)
    assert chip.temperature_celsius == 65.0


def test_310b4_dev_board_23_0_rc3_whole_without_a_process_section() -> None:
    table = info("info_310b4_1chip_23.0rc3_devboard.txt")
    assert (table.npu_smi_version, table.version) == ("23.0.rc3", "23.0.rc3")
    (chip,) = table.chips
    assert (chip.npu, chip.chip, chip.logic_id, chip.name, chip.health) == (0, 0, 0, "310B4", "OK")
    assert (chip.power_watts, chip.temperature_celsius, chip.aicore_ratio) == (7.7, 54.0, 0.0)
    assert chip.bus_id is None
    assert (chip.hugepages_used, chip.hugepages_total) == (15, 15)
    assert (chip.memory_used_bytes, chip.memory_total_bytes) == (2166 * MB, 3513 * MB)
    assert chip.hbm_used_bytes is None and chip.hbm_total_bytes is None
    assert table.processes == () and table.cut_short is None


def test_310p3_power_is_na() -> None:
    table = info("info_310p3_1chip_power_na_25.3rc1.txt")
    (chip,) = table.chips
    assert (chip.npu, chip.chip, chip.name) == (6, 0, "310P3")
    assert chip.power_watts is None
    assert chip.temperature_celsius == 50.0
    assert (chip.hugepages_used, chip.hugepages_total) == (0, 0)
    assert (chip.memory_used_bytes, chip.memory_total_bytes) == (1839 * MB, 21525 * MB)
    assert table.version == "25.3.rc1" and table.processes == ()


def test_310p3_duo_non_contiguous_npu_ids_and_nameless_processes() -> None:
    table = info("info_310p3duo_4card_procs_noname_25.3rc1.txt")
    chips = by_id(table)
    assert list(chips) == [(n, c) for n in (0, 96, 32768, 32896) for c in (0, 1)]
    assert [c.logic_id for c in table.chips] == list(range(8))
    assert all(c.power_watts is None for c in table.chips)
    assert [c.temperature_celsius for c in table.chips] == [86, 84, 84, 84, 79, 78, 82, 81]
    assert (chips[(0, 0)].hugepages_used, chips[(0, 0)].hugepages_total) == (16885, 16885)
    assert (chips[(0, 1)].hugepages_used, chips[(0, 1)].hugepages_total) == (16997, 16997)
    assert chips[(0, 0)].memory_used_bytes == 35552 * MB  # "35552/ 44278": no space before /
    assert chips[(0, 1)].memory_total_bytes == 43693 * MB
    assert chips[(32896, 1)].memory_used_bytes == 1265 * MB
    assert chips[(32768, 0)].bus_id == "0000:81:00.0"
    assert procs(table) == [
        (0, 0, 326429, None, 33842 * MB),
        (0, 0, 326430, None, 108 * MB),
        (0, 1, 326430, None, 34086 * MB),  # the same PID on two chips
    ]


def test_910a_22_0_3() -> None:
    table = info("info_910a_8chip_npu-smi22.0.3.txt")
    assert table.npu_smi_version == "22.0.3.1"
    assert [(c.npu, c.chip) for c in table.chips] == [(n, 0) for n in range(8)]
    assert [c.power_watts for c in table.chips] == [
        67.2,
        63.3,
        64.8,
        191.7,
        66.4,
        62.7,
        64.5,
        191.4,
    ]
    assert [c.temperature_celsius for c in table.chips] == [43, 38, 34, 42, 44, 33, 35, 40]
    assert table.chips[3].bus_id == "0000:3E:00.0"
    for chip in table.chips:
        assert chip.name == "910A" and chip.logic_id is None and chip.phy_id is None
        assert (chip.hugepages_used, chip.hugepages_total) == (15, 15)
        assert chip.memory_total_bytes == 15077 * MB
        assert (chip.hbm_used_bytes, chip.hbm_total_bytes) == (0, 32768 * MB)
    assert table.chips[2].memory_used_bytes == 1868 * MB


def test_910a_warning_health_and_32_processes() -> None:
    table = info("info_910a_8chip_warning_procs_24.1rc2.txt")
    assert table.npu_smi_version == "24.1.RC2"
    assert [c.health for c in table.chips] == ["OK"] * 3 + ["Warning"] + ["OK"] * 3 + ["Warning"]
    assert table.chips[3].power_watts == 206.9 and table.chips[7].power_watts == 203.2
    assert {(c.hugepages_used, c.hugepages_total) for c in table.chips} == {(1232, 1232)}
    assert (table.chips[3].memory_used_bytes, table.chips[3].memory_total_bytes) == (
        3616 * MB,
        15039 * MB,
    )
    assert len(table.processes) == 32
    assert [p.pid for p in table.processes if p.npu == 0] == [37656, 37664, 37640, 37648]
    assert [p.pid for p in table.processes if p.npu == 7] == [37671, 37647, 37655, 37663]
    assert {(p.chip, p.name, p.memory_bytes) for p in table.processes} == {
        (0, "hlt_host_devmm_", 686 * MB)
    }


def test_910a_whose_name_says_910b_has_ddr_and_hbm() -> None:
    chips = info("info_910a_named910b_8chip_24.1.0.txt").chips
    assert {c.name for c in chips} == {"910B"}
    assert (chips[0].memory_used_bytes, chips[0].memory_total_bytes) == (1197 * MB, 13553 * MB)
    assert (chips[0].hbm_used_bytes, chips[0].hbm_total_bytes) == (1365 * MB, 32768 * MB)
    assert (chips[7].memory_used_bytes, chips[7].memory_total_bytes) == (1777 * MB, 15567 * MB)
    assert chips[5].hbm_used_bytes == 5 * MB and chips[6].bus_id == "0000:42:00.0"


def test_910b1_blog_capture_with_elision_line() -> None:
    table = info("info_910b1_8chip_23.0rc2_elided.txt")
    assert table.npu_smi_version == "23.0.rc2"
    assert [(c.npu, c.power_watts, c.temperature_celsius) for c in table.chips] == [
        (0, 88.4, 46.0),
        (1, 92.1, 47.0),
        (7, 92.7, 48.0),
    ]
    assert [c.bus_id for c in table.chips] == ["0000:C1:00.0", "0000:01:00.0", "0000:42:00.0"]
    for chip in table.chips:
        # A2 prints DDR as "0 / 0": a real zero, not absent.
        assert (chip.memory_used_bytes, chip.memory_total_bytes) == (0, 0)
        assert chip.hbm_total_bytes == 65536 * MB
    assert [c.hbm_used_bytes for c in table.chips] == [4175 * MB, 4175 * MB, 4174 * MB]
    assert table.processes == () and table.processes_cut is None  # no process section


def test_910b2c_trailing_spaces_and_five_digit_fraction() -> None:
    table = info("info_910b2c_2chip_proc.txt")
    assert [(c.npu, c.name, c.power_watts, c.temperature_celsius) for c in table.chips] == [
        (0, "910B2C", 88.6, 51.0),
        (1, "910B2C", 99.6, 50.0),
    ]
    assert [c.hbm_used_bytes for c in table.chips] == [20701 * MB, 20687 * MB]
    assert table.chips[1].bus_id == "0000:19:00.0"
    assert procs(table) == [(0, 0, 124528, "python3.8", 17400 * MB)]


def test_910b4_1_vllm_workers() -> None:
    table = info("info_910b4-1_2chip_procs_25.2.2.txt")
    assert table.version == "25.2.2"
    assert [(c.npu, c.hbm_used_bytes, c.hbm_total_bytes) for c in table.chips] == [
        (0, 61825 * MB, 65536 * MB),
        (1, 61825 * MB, 65536 * MB),
    ]
    assert [c.bus_id for c in table.chips] == ["0000:0E:00.0", "0000:0F:00.0"]
    assert procs(table) == [
        (0, 0, 19334, "VLLMWorker_TP", 58472 * MB),
        (1, 0, 19341, "VLLMWorker_TP", 58472 * MB),
    ]


def test_a3_two_dies_per_npu_die_1_power_dash() -> None:
    table = info("info_a3_ascend910_phyid_proc.txt")
    assert [(c.npu, c.chip, c.phy_id, c.power_watts) for c in table.chips] == [
        (0, 0, 0, 162.8),
        (0, 1, 1, None),
        (1, 0, 2, 167.1),
        (1, 1, 3, None),
    ]
    assert [c.bus_id for c in table.chips] == [
        "0000:9C:00.0",
        "0000:9E:00.0",
        "0000:37:00.0",
        "0000:39:00.0",
    ]
    assert [c.hbm_used_bytes for c in table.chips] == [3133 * MB, 2876 * MB, 3116 * MB, 10568 * MB]
    assert {c.name for c in table.chips} == {"Ascend910"}
    assert procs(table) == [(1, 1, 990711, "python", 7746 * MB)]


def test_a3_26_0_wide_layout_with_process_id_in_container_column() -> None:
    table = info("info_a3_16die_npu-smi26.0rc2_FRAGMENTS.txt")
    assert (table.npu_smi_version, table.version) == ("26.0.rc2", "26.0.rc2")
    rows = [(c.npu, c.chip, c.phy_id, c.power_watts, c.temperature_celsius) for c in table.chips]
    assert rows == [(0, 0, 0, 162.6, 34.0), (0, 1, 1, None, 34.0), (7, 1, 15, None, 35.0)]
    assert [c.hbm_used_bytes for c in table.chips] == [3419 * MB, 2874 * MB, 31877 * MB]
    assert table.chips[2].bus_id == "0000:83:00.0"
    assert table.processes == (
        TableProcess(npu=0, chip=0, pid=632268, name="python3.1", memory_bytes=197 * MB),
    )


# ---------------------------------------------------------------- synthetic edge cases
# Built from the real 910B4-1 capture by adding what the source code prints (npu-smi.md 2.5).
WARNING = (
    "[WARNING]The driver package may not be completely installed, which may cause function "
    "abnormal. Please reinstall it."
)


def test_prompt_line_and_trailing_warning_are_tolerated() -> None:
    text = "$ npu-smi info\n" + fixture_text("info_910b4-1_2chip_procs_25.2.2.txt") + WARNING + "\n"
    table = parse_info(text)
    assert len(table.chips) == 2 and len(table.processes) == 2
    assert table.cut_short is None and table.processes_cut is None


# The 950 header from npu-smi's source (npu-smi.md 2.4); no Chip column, NPU Util instead of
# AICore, process table keyed by NPU ID only. Synthetic: no real capture exists yet.
A5 = """\
+--------------------------------------------------------------------------------+
| npu-smi 26.0.rc1                  Version: 26.0.rc1                            |
+--------+-------------+--------+-----------------------------------------------+
| NPU ID | Name        | Health | Power(W)    Temp(C)     Hugepages-Usage(page)  |
|        |             | Bus-Id | NPU Util(%) Memory-Usage(MB) HBM-Usage(MB)     |
+========+=============+========+===============================================+
| 0      | Ascend950DT | OK     | 100.0       40          0    / 0               |
|        |             | NA     | 20          0    / 0    1024 / 131072          |
+========+=============+========+===============================================+
| 3      | Ascend950DT | Alarm  | 120.0       45          0    / 0               |
|        |             | NA     | 0           0    / 0    2048 / 131072          |
+========+=============+========+===============================================+
| NPU ID | Process id | Process name | Process memory(MB) | Process id in container |
+========+=============+========+===============================================+
| 0      | 1001       | python       | 256                | NA                      |
| 0      | 1002       |              | 512                | 101                     |
| No running processes found in NPU 3                                            |
+========+=============+========+===============================================+
"""


def test_950_layout_has_no_chip_column() -> None:
    table = parse_info(A5)
    assert [(c.npu, c.chip, c.health, c.power_watts) for c in table.chips] == [
        (0, 0, "OK", 100.0),
        (3, 0, "Alarm", 120.0),
    ]
    assert [c.npu_util_ratio for c in table.chips] == [0.2, 0.0]
    assert all(c.aicore_ratio is None and c.bus_id is None for c in table.chips)
    assert table.chips[1].hbm_used_bytes == 2048 * MB
    assert [(p.npu, p.chip, p.pid, p.name) for p in table.processes] == [
        (0, None, 1001, "python"),
        (0, None, 1002, None),
    ]


def test_process_rows_are_never_taken_for_chips() -> None:
    # A process row has two numbers in its first cell, like a device row: the section decides.
    table = info("info_910b4-1_2chip_procs_25.2.2.txt")
    assert len(table.chips) == 2 and {c.npu for c in table.chips} == {0, 1}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("| 0000:0E:00.0  | 0           0    / 0", "| 0000:0E:00.0  | x           0    / 0"),
        ("| OK            | 78.2 ", "| OK  "),
        ("| 19334         |", "| abc           |"),
        ("| Health        |", "| Healthy       |"),
    ],
)
def test_malformed_value_is_a_parse_error_naming_its_line(old: str, new: str) -> None:
    text = fixture_text("info_910b4-1_2chip_procs_25.2.2.txt")
    assert old in text
    broken = text.replace(old, new, 1)
    with pytest.raises(ParseError) as caught:
        parse_info(broken)
    line_no = caught.value.line_no
    assert line_no > 0 and broken.splitlines()[line_no - 1] == caught.value.line


def test_error_text_is_not_a_table() -> None:
    with pytest.raises(ParseError):
        parse_info(fixture_text("error_dcmi_init_failed.txt"))
    with pytest.raises(ParseError):
        parse_info("")


def test_950_manual_example_is_one_chip_per_npu_id() -> None:
    """The NPU_SMI_V2 header (`print_total_info_header_950`): NPU ID, no chip column."""
    table = parse_info(fixture_text("info_950_1npu_doc.txt"))
    assert table.one_chip_npus and table.lost == ()
    (chip,) = table.chips
    assert (chip.npu, chip.chip, chip.npu_util_ratio, chip.aicore_ratio) == (0, 0, 0.0, None)
    assert (chip.hbm_used_bytes, chip.hbm_total_bytes) == (4439 * MB, 86016 * MB)


def test_older_layouts_take_a_chip_option() -> None:
    assert not parse_info(fixture_text("info_910b4-1_2chip_procs_25.2.2.txt")).one_chip_npus


def test_950_chip_with_heartbeat_loss_is_lost_not_a_row_of_zeros() -> None:
    """`query_card_chip_total_info` (V2) skips every read but health and name when the
    heartbeat check fails, and the row prints 0.0 W, 0 C and HBM 0 / 0."""
    table = parse_info(fixture_text("info_950_2npu_heartbeat_lost_FROM_SOURCE.txt"))
    assert [(c.npu, c.chip) for c in table.chips] == [(0, 0)]
    assert table.lost == ((1, 0),)
    assert table.cut_short is None
    (process,) = table.processes
    assert (process.npu, process.chip, process.pid) == (0, None, 41235)


def test_a_950_row_with_real_readings_and_no_hbm_is_not_lost() -> None:
    text = fixture_text("info_950_2npu_heartbeat_lost_FROM_SOURCE.txt").replace(
        "| 0.0         0     ", "| 88.1        40    "
    )
    table = parse_info(text)
    assert table.lost == () and len(table.chips) == 2
