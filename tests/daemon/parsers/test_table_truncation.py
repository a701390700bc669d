"""`npu-smi info` cut short. The driver prints the chip blocks, each closed by a border, then a
process section on some boards only (310B, 310 SoC boards and old versions print none). So:

- a table that ends with a border right after a complete chip block is whole, with or without
  a process section;
- a table that ends inside a chip block, inside the header, or without a border after the last
  chip is cut (`cut_short`): a failed poll, no chip served;
- a cut inside the process section loses process rows only (`processes_cut`): every chip stands;
- a cut at a line boundary between two chip blocks looks whole: `-m` and the chips of earlier
  polls catch it (`chip_missing`, tests/daemon/sources/test_discipline.py).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.table import parse_info
from tests.daemon.parsers.npu_smi_fixtures import fixture_text

# Real captures with a process section.
WITH_PROCESSES = [
    "info_310_1chip_npu-smi23.0.0.txt",
    "info_310p3_1chip_power_na_25.3rc1.txt",
    "info_310p3duo_4card_procs_noname_25.3rc1.txt",
    "info_910a_8chip_warning_procs_24.1rc2.txt",
    "info_910b2c_2chip_proc.txt",
    "info_910b4-1_2chip_procs_25.2.2.txt",
    "info_a3_ascend910_phyid_proc.txt",
]
# Real tables that end after the chips: boards that print no process section (310B, a 310 on
# npu-smi 20.x / 21.x) and pastes of versions where no source settles whether one is printed.
WITHOUT_PROCESSES = [
    "info_310_4chip_npu-smi20.2.txt",
    "info_310_4chip_npu-smi21.0.4.txt",
    "info_310b4_alarm_busid_na.txt",
    "info_310b4_1chip_23.0rc3_devboard.txt",
    "info_310p3_vnpu_vir01_in_pod_22.0.4.txt",
    "info_910a_8chip_npu-smi22.0.3.txt",
    "info_910a_named910b_8chip_24.1.0.txt",
    "info_910b1_8chip_23.0rc2_elided.txt",
]
WHOLE = WITH_PROCESSES + WITHOUT_PROCESSES


def _lines(name: str) -> list[str]:
    return fixture_text(name).splitlines(keepends=True)


def _chip_block_lines(lines: list[str]) -> list[int]:
    """Index of every chip's first row."""
    table = parse_info("".join(lines))
    first_rows = [
        i
        for i, line in enumerate(lines)
        if line.startswith("|")
        and any(
            line.split("|")[1].split()[:1] == [str(c.npu)] and c.name and c.name in line
            for c in table.chips
        )
    ]
    return first_rows


@pytest.mark.parametrize("name", WHOLE)
def test_every_real_table_is_whole(name: str) -> None:
    table = parse_info(fixture_text(name))
    assert table.cut_short is None and table.processes_cut is None
    assert table.chips


@pytest.mark.parametrize("name", WITHOUT_PROCESSES)
def test_a_table_without_a_process_section_serves_its_chips(name: str) -> None:
    table = parse_info(fixture_text(name))
    assert table.processes == () and table.processes_cut is None
    assert table.cut_short is None


def test_what_is_missing_is_named() -> None:
    lines = _lines("info_910a_8chip_warning_procs_24.1rc2.txt")
    header = next(i for i, line in enumerate(lines) if "Process id" in line)
    in_processes = parse_info("".join(lines[: header + 2]))
    assert in_processes.processes_cut == "a process section without rows"
    assert in_processes.cut_short is None and len(in_processes.chips) == 8
    unclosed = parse_info("".join(lines[:-1]))
    assert unclosed.processes_cut == "no closing border" and unclosed.processes == ()
    assert len(unclosed.chips) == 8
    first_chip = next(i for i, line in enumerate(lines) if line.startswith("| 0     xxx"))
    half = parse_info("".join(lines[: first_chip + 1]))
    assert half.cut_short == "the last chip has only one of its two rows" and half.chips == ()
    in_header = parse_info("".join(lines[:4]))
    assert in_header.cut_short == "the output ends inside the header"
    assert parse_info("".join(lines[:2])).cut_short == "the output ends inside the header"
    no_chip = parse_info("".join(lines[:first_chip]))
    assert no_chip.cut_short == "no chip after the header"


def test_a_chip_without_its_closing_border_is_cut() -> None:
    lines = _lines("info_310b4_1chip_23.0rc3_devboard.txt")
    assert parse_info("".join(lines[:-1])).cut_short == "no closing border after the last chip"


def test_an_empty_output_is_not_a_table() -> None:
    with pytest.raises(ParseError):
        parse_info("")


def test_a_trailing_warning_after_the_border_is_still_a_whole_table() -> None:
    text = fixture_text("info_910b4-1_2chip_procs_25.2.2.txt") + "[WARNING]reinstall it.\n"
    assert parse_info(text).cut_short is None
    text = fixture_text("info_310b4_alarm_busid_na.txt") + "[WARNING]reinstall it.\n"
    assert parse_info(text).cut_short is None


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(WHOLE), st.data())
def test_a_cut_at_any_line_boundary_never_serves_a_wrong_chip_or_process(
    name: str, data: st.DataObject
) -> None:
    lines = _lines(name)
    whole = parse_info("".join(lines))
    cut = data.draw(st.integers(0, len(lines) - 1))
    try:
        table = parse_info("".join(lines[:cut]))
    except ParseError:
        return  # no table line at all: a parse error, also a failed poll
    if table.cut_short is not None:
        return  # a failed poll: the source serves no chip (test_discipline.py)
    # accepted: the chips are the whole table's first chips (fewer only for a cut between chip
    # blocks, which -m catches), and a process list is the whole one's or dropped
    assert table.chips == whole.chips[: len(table.chips)]
    if any("Process id" in line for line in lines[:cut]):  # the process section began
        assert table.chips == whole.chips
        assert table.processes_cut is not None or set(table.processes) <= set(whole.processes)
        if table.processes_cut is not None:
            assert table.processes == ()
    else:
        assert table.processes == ()


@pytest.mark.parametrize("name", WHOLE)
def test_every_cut_inside_a_chip_block_is_refused(name: str) -> None:
    lines = _lines(name)
    first_rows = _chip_block_lines(lines)
    assert len(first_rows) == len(parse_info("".join(lines)).chips)
    for at in first_rows:
        assert parse_info("".join(lines[: at + 1])).cut_short is not None  # first row only
        assert parse_info("".join(lines[: at + 2])).cut_short is not None  # no closing border


@pytest.mark.parametrize("name", WITH_PROCESSES)
def test_every_cut_inside_the_process_section_keeps_every_chip(name: str) -> None:
    lines = _lines(name)
    whole = parse_info("".join(lines))
    header = next(i for i, line in enumerate(lines) if "Process id" in line)
    for cut in range(header + 1, len(lines)):
        table = parse_info("".join(lines[:cut]))
        assert table.cut_short is None and table.chips == whole.chips
        if table.processes_cut is not None:
            assert table.processes == ()
        else:
            assert set(table.processes) <= set(whole.processes)
