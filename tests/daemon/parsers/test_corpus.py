"""Every npu-smi fixture is accounted for: parsed by its parser, or listed as not parsed."""

from __future__ import annotations

import pytest

from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.table import parse_info
from tests.daemon.parsers.npu_smi_fixtures import (
    FIXTURES,
    FRAGMENT_MARKER,
    fixture_names,
    fixture_text,
    not_parsed_reason,
    parser_for,
)

PARSED = [n for n in fixture_names() if not_parsed_reason(n) is None]
NOT_PARSED = [n for n in fixture_names() if not_parsed_reason(n) is not None]


def test_corpus_is_not_empty_and_every_file_is_accounted_for() -> None:
    assert len(fixture_names()) >= 40
    assert sorted(PARSED + NOT_PARSED) == fixture_names()
    assert NOT_PARSED == [
        "info_help_23.0rc2.txt",
        "info_l_910b_8npu.txt",
        "info_t_power_910b.txt",
        "info_t_temp_910b_with_mcu_sensors.txt",
        "info_t_topo_910b1.txt",
        "info_t_vnpu_mode_blog.txt",
        "info_vnpu_310p3_3vnpu_FRAGMENT_hami.txt",
        "info_vnpu_910b4-1_0vnpu_26.0rc1.txt",
        "info_vnpu_910b4-1_2vnpu_26.0rc1.txt",
        "info_vnpu_910b4_0vnpu_blog.txt",
        "info_vnpu_910b4_2vnpu_one_in_use_blog.txt",
        "info_watch_310b_devboard.txt",
        "info_watch_i2_train.txt",
    ]


@pytest.mark.parametrize("name", PARSED)
def test_every_parsed_fixture_parses_to_its_type(name: str) -> None:
    parser, result_type = parser_for(name)
    result = parser(fixture_text(name))
    assert isinstance(result, result_type)


@pytest.mark.parametrize("name", NOT_PARSED)
def test_not_parsed_fixtures_are_rejected_cleanly_by_the_table_parser(name: str) -> None:
    with pytest.raises(ParseError):
        parse_info(fixture_text(name))


@pytest.mark.parametrize("name", fixture_names())
def test_every_fixture_has_a_provenance_row(name: str) -> None:
    sources = (FIXTURES / "SOURCES.md").read_text(encoding="utf-8")
    assert f"\n| {name} |" in sources


def test_fragments_helper_removes_only_the_marker_and_the_cut_line() -> None:
    name = "info_a3_16die_npu-smi26.0rc2_FRAGMENTS.txt"
    raw = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    cleaned = fixture_text(name).splitlines()
    assert any(line.startswith(FRAGMENT_MARKER) for line in raw)
    assert raw[-1] == "| No running processes found in NPU 2"  # cut mid-row by the excerpt
    assert cleaned == [line for line in raw[:-1] if not line.startswith(FRAGMENT_MARKER)]
    with pytest.raises(ParseError):  # the raw file is not valid npu-smi output
        parse_info("\n".join(raw))
