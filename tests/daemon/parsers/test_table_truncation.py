"""`npu-smi info` cut short: the parser says what is missing at the end (`cut_short`), so a cut
at a line boundary can never pass for a whole table with fewer chips."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.table import parse_info
from tests.daemon.parsers.npu_smi_fixtures import fixture_text

# Real captures printed whole: a process section, and its closing border.
WHOLE = [
    "info_310_1chip_npu-smi23.0.0.txt",
    "info_310p3_1chip_power_na_25.3rc1.txt",
    "info_310p3duo_4card_procs_noname_25.3rc1.txt",
    "info_910a_8chip_warning_procs_24.1rc2.txt",
    "info_910b2c_2chip_proc.txt",
    "info_910b4-1_2chip_procs_25.2.2.txt",
    "info_a3_ascend910_phyid_proc.txt",
]
# Excerpts from documents and blogs that left the process section out.
EXCERPTS = [
    "info_310_4chip_npu-smi20.2.txt",
    "info_310_4chip_npu-smi21.0.4.txt",
    "info_310b4_alarm_busid_na.txt",
    "info_910a_8chip_npu-smi22.0.3.txt",
    "info_910a_named910b_8chip_24.1.0.txt",
    "info_910b1_8chip_23.0rc2_elided.txt",
]


@pytest.mark.parametrize("name", WHOLE)
def test_whole_captures_are_not_cut_short(name: str) -> None:
    assert parse_info(fixture_text(name)).cut_short is None


@pytest.mark.parametrize("name", EXCERPTS)
def test_excerpts_without_a_process_section_are_cut_short(name: str) -> None:
    assert parse_info(fixture_text(name)).cut_short == "no process section"


def test_what_is_missing_is_named() -> None:
    lines = fixture_text("info_910a_8chip_warning_procs_24.1rc2.txt").splitlines(keepends=True)
    header = next(i for i, line in enumerate(lines) if "Process id" in line)
    assert parse_info("".join(lines[: header + 2])).cut_short == "a process section without rows"
    assert parse_info("".join(lines[:-1])).cut_short == "no closing border"
    first_chip = next(i for i, line in enumerate(lines) if line.startswith("| 0     xxx"))
    half = parse_info("".join(lines[: first_chip + 1]))
    assert half.cut_short == "the last chip has only one of its two rows" and half.chips == ()


def test_a_trailing_warning_after_the_border_is_still_a_whole_table() -> None:
    text = fixture_text("info_910b4-1_2chip_procs_25.2.2.txt") + "[WARNING]reinstall it.\n"
    assert parse_info(text).cut_short is None


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(WHOLE), st.data())
def test_a_cut_at_any_line_boundary_never_looks_whole_with_fewer_chips(
    name: str, data: st.DataObject
) -> None:
    text = fixture_text(name)
    whole = parse_info(text)
    lines = text.splitlines(keepends=True)
    cut = data.draw(st.integers(0, len(lines) - 1))
    try:
        table = parse_info("".join(lines[:cut]))
    except ParseError:
        return  # not even a header: a parse error, also a failed poll
    if table.cut_short is None:
        # only a cut inside the process section, after a whole NPU's rows, looks whole: all
        # chips are there, and no process of an NPU already listed is missing
        assert table.chips == whole.chips
        assert set(table.processes) <= set(whole.processes)
