"""The fault table: every level, hex matching, the most severe level wins, the node's own copy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from npumon.daemon.config import ConfigError, parse_config
from npumon.daemon.faults import (
    LEVELS,
    UNKNOWN,
    FaultTable,
    FaultTableError,
    load_fault_table,
)

SHIPPED = Path(__file__).resolve().parents[2] / "daemon" / "faults" / "fault-codes.json"


def test_the_shipped_table_has_802_codes_in_eight_levels() -> None:
    table = load_fault_table()
    assert len(table) == 802
    raw = json.loads(SHIPPED.read_text())
    assert {table.level_of(codes[0]) for codes in raw.values()} == set(LEVELS)


@pytest.mark.parametrize(
    ("code", "level"),
    [
        ("A4025021", "not_handle"),
        ("8C03A000", "restart_npu"),
        ("8C084E00", "free_restart_npu"),
        ("8c03a000", "restart_npu"),
        ("0x8C03A000", "restart_npu"),  # case and 0x do not matter
        ("40F84E00", "restart_npu"),  # card dropped off the bus
        ("A2301001", "separate_npu"),  # listed as RestartBusiness and SeparateNPU: the worse wins
        ("DEADBEEF", UNKNOWN),
        ("not-hex", UNKNOWN),
    ],
)
def test_levels_of_real_codes(code: str, level: str) -> None:
    assert load_fault_table().level_of(code) == level


def test_codes_compare_as_numbers_not_as_strings_of_a_width() -> None:
    table = FaultTable.from_json('{"RestartNPUCodes": ["00001234"]}', "t")
    assert table.level_of("1234") == "restart_npu"


def test_a_node_table_that_is_not_the_plugins_format_is_a_config_error(tmp_path: Path) -> None:
    for text, said in (
        ("{", "not JSON"),
        ('{"x": 1}', "faultCode.json"),
        ('{"RestartNPUCodes": ["zz"]}', "not hex"),
    ):
        path = tmp_path / "faultCode.json"
        path.write_text(text)
        with pytest.raises(ConfigError) as caught:
            parse_config({"faults": {"code_table": str(path)}})
        assert caught.value.problems[0].startswith("faults.code_table: ")
        assert said in caught.value.problems[0]
    with pytest.raises(FaultTableError, match="cannot read"):
        load_fault_table(tmp_path / "missing.json")


def test_a_customised_node_table_is_used(tmp_path: Path) -> None:
    path = tmp_path / "faultCode.json"
    path.write_text('{"SeparateNPUCodes": ["A4025021"]}')  # the operator escalated a code
    config = parse_config({"faults": {"code_table": str(path)}})
    assert load_fault_table(config.faults.code_table).level_of("A4025021") == "separate_npu"
