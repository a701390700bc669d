"""parsers/values.py: npu-smi's absent tokens and the unit conversions every parser uses."""

from __future__ import annotations

import pytest

from npumon.daemon.parsers import values
from npumon.daemon.parsers.errors import ParseError


@pytest.mark.parametrize("token", ["", "NA", "N/A", "-", "--", "  NA  "])
def test_absent_tokens_are_none_never_zero(token: str) -> None:
    assert values.is_absent(token)
    assert values.parse_int(token) is None and values.parse_float(token) is None
    assert values.mib_to_bytes(token) is None and values.percent_to_ratio(token) is None
    assert values.optional_text(token) is None


def test_units_bytes_hertz_ratio() -> None:
    assert values.mib_to_bytes(" 61825 ") == 61825 * 1024 * 1024
    assert values.mhz_to_hertz("1800") == 1.8e9
    assert values.percent_to_ratio("37.5") == 0.375
    # out of 0..100 % is still a number: plausible.screen drops it, the output is not garbage
    assert values.percent_to_ratio("101") == 1.01


@pytest.mark.parametrize(
    ("text", "expected"),
    [("577  / 7759", (577, 7759)), ("61825/ 65536", (61825, 65536)), ("NA / 7759", (None, 7759))],
)
def test_fraction(text: str, expected: tuple[int | None, int | None]) -> None:
    assert values.parse_fraction(text) == expected


@pytest.mark.parametrize(
    ("call", "token"),
    [
        (values.parse_int, "12.5"),
        (values.parse_int, "1" * 19),
        (values.parse_float, "1e5"),
        (values.percent_to_ratio, "37,5"),
        (values.parse_fraction, "577"),
    ],
)
def test_malformed_is_a_parse_error_naming_the_line(call: object, token: str) -> None:
    with pytest.raises(ParseError) as caught:
        call(token, line_no=7, line=f"  Key : {token}")  # type: ignore[operator]
    assert caught.value.line_no == 7 and token in caught.value.line
