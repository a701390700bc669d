"""vNPU queries on every real sample (three layouts), with their values."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from npumon.daemon.model.npu_smi import Vnpu
from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.table import parse_info
from npumon.daemon.parsers.vnpu import parse_info_vnpu, parse_vnpu_mode
from tests.support import FIXTURES

NPU_SMI = FIXTURES / "npu-smi"


def read(name: str) -> str:
    return (NPU_SMI / name).read_text()


def test_a_910b4_card_with_one_of_two_vnpus_in_use() -> None:
    report = parse_info_vnpu(read("info_vnpu_910b4_2vnpu_one_in_use_blog.txt"))
    assert report.total == 2
    assert report.vnpus == (
        Vnpu(100, 0, "ffffffffffff", True, "vir10_3c_16g"),
        Vnpu(101, 1, "000000000000", False, "vir10_3c_16g"),
    )
    resources = {name: (free, total) for name, free, total in report.resources}
    assert resources["aicore"] == (0, 20) and resources["memory"] == (0, 32)
    assert resources["pngd"] == (None, None)  # NA/NA: not supported, not 0


def test_npu_smi_26_vnpus_and_an_empty_card() -> None:
    two = parse_info_vnpu(read("info_vnpu_910b4-1_2vnpu_26.0rc1.txt"))
    assert [(v.vnpu_id, v.in_use) for v in two.vnpus] == [(212, False), (213, False)]
    empty = parse_info_vnpu(read("info_vnpu_910b4-1_0vnpu_26.0rc1.txt"))  # no header row
    assert (empty.total, empty.vnpus) == (0, ())
    assert dict((n, (f, t)) for n, f, t in empty.resources)["memory"] == (60, 64)


def test_the_2024_empty_card_prints_the_header_anyway() -> None:
    report = parse_info_vnpu(read("info_vnpu_910b4_0vnpu_blog.txt"))
    assert (report.total, report.vnpus) == (0, ())


def test_a_310p3_fragment_without_row_separators() -> None:
    report = parse_info_vnpu(read("info_vnpu_310p3_3vnpu_FRAGMENT_hami.txt"))  # FRAGMENT
    assert report.resources == ()  # the fragment starts at the total
    assert [(v.vnpu_id, v.vgroup_id, v.template, v.in_use) for v in report.vnpus] == [
        (100, 0, "vir01", True),
        (101, 1, "vir02", True),
        (102, 2, "vir04", True),
    ]


def test_vnpu_mode() -> None:
    assert parse_vnpu_mode(read("info_t_vnpu_mode_blog.txt")) == "docker"
    with pytest.raises(ParseError):
        parse_vnpu_mode("    vnpu-mode : shared\n")


def test_the_table_inside_a_pod_names_the_vnpu_and_its_slice() -> None:
    table = parse_info(read("info_310p3_vnpu_vir01_in_pod_22.0.4.txt"))
    (chip,) = table.chips
    assert (chip.npu, chip.name) == (7, "310Pvir01")
    assert (chip.memory_used_bytes, chip.memory_total_bytes) == (249 * 2**20, 2690 * 2**20)


def test_a_total_that_disagrees_with_the_rows_is_an_error() -> None:
    text = read("info_vnpu_910b4-1_2vnpu_26.0rc1.txt").replace("vnpu: 2 ", "vnpu: 3 ")
    with pytest.raises(ParseError, match="but 2 rows"):
        parse_info_vnpu(text)


@given(st.text(max_size=400))
def test_garbage_is_a_parse_error_or_a_report(text: str) -> None:
    with contextlib.suppress(ParseError):  # any other exception fails the test
        parse_info_vnpu(text)
