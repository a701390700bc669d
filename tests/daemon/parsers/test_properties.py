"""Property tests: whatever the text, a parser returns a valid result or raises ParseError.

Never IndexError/KeyError/ValueError/AttributeError escaping from inside a parser; never NaN;
and once screened (`parsers/plausible.py`), every measurement within its unit's bound.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npumon.daemon.model.chips import KnownFailure
from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.plausible import bound, screen
from tests.daemon.parsers.npu_smi_fixtures import (
    PARSERS,
    fixture_names,
    fixture_text,
    not_parsed_reason,
)

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ALL_PARSERS: list[tuple[Callable[[str], Any], type]] = [(p, t) for _, p, t in PARSERS]
SAMPLES = {name: fixture_text(name) for name in fixture_names()}
PARSED_SAMPLES = sorted(n for n in SAMPLES if not_parsed_reason(n) is None)

# Characters that matter to the parsers, so noise hits the interesting paths often.
NOISE = st.sampled_from(list("|/:+-=.%\t \n0123456789NA") + ["NA", "-", " / ", "\r", "é", "\x00"])


def _check_value(value: object) -> None:
    if isinstance(value, float) and value != value:  # NaN never comes out of a parser
        raise AssertionError("NaN in a parse result")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _check_value(getattr(value, f.name))
    elif isinstance(value, tuple):
        for item in value:
            _check_value(item)


def _check_bounds(value: object) -> None:
    """Every measurement within its unit's bound (what the sources export after screening)."""
    if isinstance(value, tuple):
        for item in value:
            _check_bounds(item)
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return
    for f in dataclasses.fields(value):
        found = getattr(value, f.name)
        limits = bound(f.name)
        if limits is not None and isinstance(found, int | float):
            assert limits[0] <= found <= limits[1], (f.name, found)
        _check_bounds(found)


def _check_result(result: object, result_type: type) -> None:
    assert isinstance(result, result_type)
    _check_value(result)
    _check_bounds(screen(result)[0])


def _run_all(text: str) -> None:
    for parser, result_type in ALL_PARSERS:
        try:
            result = parser(text)
        except ParseError as error:
            assert error.line_no >= 0
            continue
        if result_type is KnownFailure and result is None:
            continue
        _check_result(result, result_type)


@FAST
@given(st.text(max_size=400))
def test_random_text(text: str) -> None:
    _run_all(text)


@FAST
@given(st.lists(NOISE, max_size=150))
def test_random_text_made_of_table_characters(pieces: list[str]) -> None:
    _run_all("".join(pieces))


@FAST
@given(st.sampled_from(PARSED_SAMPLES), st.data())
def test_truncation_of_every_real_sample(name: str, data: st.DataObject) -> None:
    text = SAMPLES[name]
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    _run_all(text[:cut])


@FAST
@given(st.sampled_from(PARSED_SAMPLES), st.data())
def test_line_deletion_and_duplication(name: str, data: st.DataObject) -> None:
    lines = SAMPLES[name].splitlines(keepends=True)
    ops = data.draw(
        st.lists(
            st.tuples(st.sampled_from(["delete", "duplicate", "swap"]), st.integers(0, 10_000)),
            min_size=1,
            max_size=4,
        )
    )
    for op, at in ops:
        if not lines:
            break
        i = at % len(lines)
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        else:
            j = (i + 1) % len(lines)
            lines[i], lines[j] = lines[j], lines[i]
    _run_all("".join(lines))


@FAST
@given(st.sampled_from(PARSED_SAMPLES), st.data())
def test_random_byte_noise(name: str, data: st.DataObject) -> None:
    raw = bytearray(SAMPLES[name].encode("utf-8"))
    edits = data.draw(
        st.lists(st.tuples(st.integers(0, 100_000), st.integers(0, 255)), min_size=1, max_size=6)
    )
    for at, byte in edits:
        raw[at % len(raw)] = byte
    _run_all(raw.decode("utf-8", errors="replace"))


@FAST
@given(st.sampled_from(PARSED_SAMPLES), st.data())
def test_random_token_noise(name: str, data: st.DataObject) -> None:
    text = SAMPLES[name]
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(text)))
        text = text[:at] + data.draw(NOISE) + text[at + data.draw(st.integers(0, 3)) :]
    _run_all(text)
