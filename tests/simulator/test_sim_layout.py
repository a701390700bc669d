"""The simulator prints the real layouts: compared with real npu-smi captures in tests/fixtures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from npumon.simulator.loader import load_scenario
from npumon.simulator.render import render
from npumon.simulator.state import SimNode, node_state

FIXTURES = Path(__file__).parents[1] / "fixtures" / "npu-smi"


def _sample(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def _node(scenario: str, t: float = 10.0) -> SimNode:
    return node_state(load_scenario(scenario), t)


def _run(scenario: str, argv: str, t: float = 10.0) -> str:
    return render(argv.split(), _node(scenario, t)).stdout


def _shape(line: str) -> tuple[int, tuple[int, ...]]:
    """Line width and where its box characters are: the layout without the values."""
    return len(line), tuple(i for i, c in enumerate(line) if c in "|+")


TABLES = [
    ("info_910b4-1_2chip_procs_25.2.2.txt", "910b-8"),
    ("info_a3_ascend910_phyid_proc.txt", "a3-8x2"),
    ("info_310p3duo_4card_procs_noname_25.3rc1.txt", "310p-duo"),
]


@pytest.mark.parametrize(("sample", "scenario"), TABLES)
def test_table_has_the_real_shape(sample: str, scenario: str) -> None:
    real = _sample(sample).splitlines()
    sim = _run(scenario, "info").splitlines()
    assert {_shape(line) for line in sim} == {_shape(line) for line in real}
    # rules and column headers are byte-for-byte the real ones
    static = [line for line in real if line.startswith("+") or "Bus-Id" in line or "Name " in line]
    assert set(static) <= set(sim)


def test_310p_idle_card_row_is_byte_identical() -> None:
    real = _sample("info_310p3duo_4card_procs_noname_25.3rc1.txt").splitlines()
    sim = _run("310p-duo", "info").splitlines()
    row = next(line for line in real if "found in NPU 96 " in line)
    assert row in sim


def test_five_digit_used_memory_has_no_space_before_the_slash() -> None:
    text = _run("910b-8", "info")
    assert re.search(r" 6\d{4}/ 65536 {9}\|", text)  # like the real "61825/ 65536"
    assert not re.search(r"\d{5} /", text)


def test_list_is_the_real_910b_list() -> None:
    # the capture shows npu-smi's leading TAB as 8 spaces
    real = re.sub(r"^ {8}", "\t", _sample("info_l_910b_8npu.txt"), flags=re.M).rstrip("\n")
    assert _run("910b-8", "info -l").rstrip("\n") == real


def test_mapping_has_the_real_columns() -> None:
    real = _sample("info_m_910a_8chip.txt").splitlines()
    sim = _run("910b-8", "info -m").replace("Ascend 910B3", "Ascend 910A").splitlines()
    assert [line for line in sim if not line.endswith("Mcu")] == real
    mcu_real = _sample("info_m_910b_8npu_with_mcu.txt").splitlines()[2]
    assert "\t" + mcu_real in sim


def _keys(text: str) -> list[str]:
    return [line.split(" : ")[0].strip() for line in text.splitlines() if " : " in line]


KEYED = [
    ("info_t_usages_910b_25.5.1.txt", "910b-8", "info -t usages -i 0"),
    ("info_t_common_910b1.txt", "910b-8", "info -t common -i 1"),
    ("info_t_power_910b.txt", "910b-8", "info -t power -i 0"),
    ("info_t_temp_910b_with_mcu_sensors.txt", "910b-8", "info -t temp -i 0"),
    ("info_t_board_910b_25.5.1.txt", "910b-8", "info -t board -i 0"),
    ("info_t_board_chip_910a.txt", "910b-8", "info -t board -i 0 -c 0"),
    ("info_t_usages_310p_2chip.txt", "310p-duo", "info -t usages -i 96"),
    ("info_t_common_310p_2chip.txt", "310p-duo", "info -t common -i 96"),
]


@pytest.mark.parametrize(("sample", "scenario", "argv"), KEYED)
def test_key_value_output_has_the_real_keys(sample: str, scenario: str, argv: str) -> None:
    sim = _run(scenario, argv)
    assert _keys(sim) == _keys(_sample(sample))
    for line in sim.splitlines():
        assert line == "" or re.match(r"\t.{30} : \S", line), line


def test_ecc_keys_are_40_wide_and_real() -> None:
    sim = _run("910b-8", "info -t ecc -i 0")
    assert set(_keys(sim)) <= set(_keys(_sample("info_t_ecc_910_doc.txt")))
    assert all(line == "" or re.match(r"\t.{40} : \d", line) for line in sim.splitlines())


def test_alarm_health_has_the_real_continuation_lines() -> None:
    real = _sample("info_t_health_alarm_910a.txt").splitlines()
    sim = _run("910b-8", "info -t health -i 5 -c 0", t=300.0).splitlines()
    assert len(sim) == 5
    assert [line.partition(" : ")[0] for line in sim] == [
        line.partition(" : ")[0] for line in real[:5]
    ]


def test_invalid_card_is_the_real_text_and_exit_code() -> None:
    result = render(["info", "-t", "common", "-i", "2"], _node("disappear", 100.0))
    assert result.stdout == _sample("error_invalid_card_id.txt")
    assert result.exit_code == (-9001) & 0xFF


def test_disappeared_card_is_gone_everywhere() -> None:
    node = _node("disappear", 100.0)
    table = render(["info"], node).stdout
    assert "| 2     910B3" not in table and "| 1     910B3" in table
    assert not re.search(r"^\t2 ", render(["info", "-m"], node).stdout, re.M)
    assert "NPU ID                         : 2\n" not in render(["info", "-l"], node).stdout
    assert "Total Count                    : 7" in render(["info", "-l"], node).stdout
    before = render(["info", "-t", "common", "-i", "2"], _node("disappear", 59.0))
    assert before.exit_code == 0


def test_dcmi_failure_is_the_real_text_and_exit_code() -> None:
    result = render(["info"], _node("dcmi-fail"))
    assert result.stdout.rstrip("\n") in _sample("error_dcmi_init_failed.txt").splitlines()
    assert result.stdout == "dcmi module initialize failed. ret is -8005\n"
    assert result.exit_code == 187  # exit(-8005) as a shell sees it


def test_unknown_command_prints_usage() -> None:
    result = render(["info", "-x"], _node("910b-8"))
    assert result.stdout.startswith("Command or option is not found.\n")
    assert result.exit_code != 0
