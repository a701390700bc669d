"""parsers/plausible.py: physically impossible values become absent and are named, by unit."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npumon.daemon.model.chips import ChipCommon, ChipEcc, InfoTable, TableChip, TableProcess
from npumon.daemon.parsers.plausible import BOUNDS, RATIO_ROUNDING, Rejected, bound, screen
from npumon.daemon.parsers.table import parse_info
from tests.daemon.parsers.npu_smi_fixtures import fixture_text

CHIP = parse_info(fixture_text("info_910b4-1_2chip_procs_25.2.2.txt")).chips[0]


@pytest.mark.parametrize(
    ("field", "value", "kept"),
    [
        ("temperature_celsius", -273.2, None),
        ("temperature_celsius", 151.0, None),
        ("temperature_celsius", -40.0, -40.0),
        ("temperature_celsius", 40.0, 40.0),
        ("power_watts", -3.0, None),
        ("power_watts", 2000.5, None),
        ("power_watts", 0.0, 0.0),
        ("aicore_ratio", 1.004, 1.0),
        ("aicore_ratio", -0.004, 0.0),
        ("aicore_ratio", 1.5, None),
        ("aicore_ratio", -0.01, None),
        ("hbm_used_bytes", -(1024**2), None),
        ("hbm_used_bytes", 0, 0),
        ("hbm_total_bytes", 2 * 1024**4, None),
        ("hugepages_used", -1, None),
        ("hugepages_total", 1232, 1232),
    ],
)
def test_bounds_by_unit(field: str, value: float, kept: float | None) -> None:
    chip = dataclasses.replace(CHIP, **{field: value})
    screened, rejected = screen(chip)
    assert getattr(screened, field) == kept
    assert rejected == (() if kept is not None else (Rejected(field, float(value)),))
    others = [f.name for f in dataclasses.fields(chip) if f.name != field]
    assert all(getattr(screened, name) == getattr(chip, name) for name in others)


def test_counters_frequencies_and_nested_records() -> None:
    table = InfoTable(
        "1",
        "1",
        (dataclasses.replace(CHIP, power_watts=-1.0),),
        (TableProcess(0, 0, 42, "python", -5 * 1024**2),),
        True,
    )
    screened, rejected = screen(table)
    assert screened.chips[0].power_watts is None and screened.processes[0].memory_bytes is None
    assert [r.field for r in rejected] == ["power_watts", "memory_bytes"]
    assert screened.processes[0].pid == 42  # ids are no measurements: never screened
    common = ChipCommon(chip=0, aicore_current_hertz=25e9, aicore_rated_hertz=1.8e9)
    assert screen(common)[0] == ChipCommon(chip=0, aicore_rated_hertz=1.8e9)
    ecc = ChipEcc(chip=0, hbm_single_bit_errors=-1, hbm_double_bit_aggregate_total=3)
    assert screen(ecc)[0] == ChipEcc(chip=0, hbm_double_bit_aggregate_total=3)


def test_more_used_than_total_is_impossible_and_the_used_value_goes() -> None:
    # a DCMI answer seen with HBM used at 4x its total: each value is within its own bound
    total = 64 * 1024**3
    chip = dataclasses.replace(CHIP, hbm_total_bytes=total, hbm_used_bytes=4 * total)
    screened, rejected = screen(chip)
    assert (screened.hbm_used_bytes, screened.hbm_total_bytes) == (None, total)
    assert rejected == (Rejected("hbm_used_bytes", 4.0 * total),)
    full = dataclasses.replace(CHIP, hbm_total_bytes=total, hbm_used_bytes=total)
    assert screen(full) == (full, ())  # full is possible


def test_an_untouched_result_is_returned_as_is() -> None:
    table = parse_info(fixture_text("info_910a_8chip_warning_procs_24.1rc2.txt"))
    screened, rejected = screen(table)
    assert screened is table and rejected == ()


def test_ids_and_text_have_no_bound() -> None:
    for name in ("npu", "chip", "pid", "logic_id", "phy_id", "name", "total"):
        assert bound(name) is None


NUMBER = st.one_of(
    st.none(), st.integers(-(10**12), 10**13), st.floats(-1e12, 1e13, allow_nan=False)
)
NUMERIC = [f.name for f in dataclasses.fields(TableChip) if bound(f.name) is not None]


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({name: NUMBER for name in NUMERIC}))
def test_screened_values_are_within_bounds_and_only_impossible_ones_go(
    values: dict[str, float | None],
) -> None:
    chip = dataclasses.replace(CHIP, **values)
    screened, rejected = screen(chip)
    dropped = {r.field for r in rejected}
    for name, value in values.items():
        limits = bound(name)
        assert limits is not None
        low, high = limits
        after = getattr(screened, name)
        whole = getattr(screened, name.replace("_used_bytes", "_total_bytes"), None)
        if value is None:
            assert after is None and name not in dropped  # absent stays absent, never 0
        elif name.endswith("_used_bytes") and whole is not None and value > whole:
            assert after is None and name in dropped  # more used than the total
        elif low <= value <= high:
            assert after == value and name not in dropped
        elif name.endswith("_ratio") and low - RATIO_ROUNDING <= value <= high + RATIO_ROUNDING:
            assert after in (low, high) and name not in dropped  # rounding, not an error
        else:
            assert after is None and name in dropped
    assert screen(screened) == (screened, ())  # a second pass finds nothing


def test_every_bound_is_an_interval() -> None:
    assert all(low < high for _, low, high in BOUNDS)
