"""parsers/keyvalue.py: `key : value` lines grouped into chip and MCU records."""

from __future__ import annotations

import pytest

from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.keyvalue import normalise_key, read_fields, resolve_npu, split_records

ENDS_WITH_CHIP_ID = (
    "\tNPU ID                         : 4\n\tChip Count                     : 2\n\n"
    "\tAicore Usage Rate(%)           : 10\n\tChip ID                        : 0\n\n"
    "\tAicore Usage Rate(%)           : 20\n\tChip ID                        : 1\n\n"
    "\tPower Dissipation(W)           : 45.2\n\tChip Name                      : mcu\n"
)


def test_keys_are_normalised_padding_and_case() -> None:
    assert normalise_key("  Aicore  Freq(MHZ)\t") == "aicore freq(mhz)"
    assert normalise_key("Aicore Freq(MHz)") == normalise_key("AICORE FREQ(MHZ)")


def test_blank_lines_are_none_and_a_line_without_colon_is_an_error() -> None:
    fields = read_fields("A : 1\n\n B :\n")
    assert [f.key if f else None for f in fields] == ["a", None, "b"]
    with pytest.raises(ParseError) as caught:
        read_fields("A : 1\ngarbage\n")
    assert caught.value.line_no == 2


def test_records_end_with_chip_id_and_the_mcu_is_its_own_record() -> None:
    doc = split_records(ENDS_WITH_CHIP_ID, chip_id_ends_block=True)
    assert (doc.npu, doc.chip_count) == (4, 2)
    assert [(r.chip, r.is_mcu) for r in doc.records] == [(0, False), (1, False), (None, True)]
    assert doc.records[1].fields[0].value == "20"


def test_records_start_with_chip_id_in_common() -> None:
    text = "NPU ID : 1\nChip ID : 0\nTemp : 40\nChip ID : 1\nTemp : 41\n"
    doc = split_records(text, chip_id_ends_block=False)
    assert [(r.chip, [f.value for f in r.fields]) for r in doc.records] == [
        (0, ["0", "40"]),
        (1, ["1", "41"]),
    ]


def test_conflicting_npu_id_and_unknown_npu_are_errors() -> None:
    with pytest.raises(ParseError, match="conflicting"):
        split_records("NPU ID : 1\nNPU ID : 2\n", chip_id_ends_block=True)
    with pytest.raises(ParseError):
        resolve_npu(None, None)
    assert resolve_npu(None, 3) == 3 and resolve_npu(5, 3) == 5
