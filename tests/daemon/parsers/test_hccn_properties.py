"""Property tests for the hccn_tool parsers: whatever the text, a valid result or ParseError,
never NaN, and (once screened) every measurement within its unit's bound."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.optical import dbm_to_watts, quantity
from npumon.daemon.parsers.plausible import screen
from tests.daemon.parsers.hccn_fixtures import PARSERS, names, text
from tests.daemon.parsers.test_properties import FAST, NOISE, _check_bounds, _check_value

SAMPLES = {name: text(name) for name in names() if text(name)}
ALL = sorted(set(PARSERS.values()), key=lambda p: (p.__module__, p.__name__))
HCCN_NOISE = st.one_of(
    NOISE,
    st.sampled_from(
        [
            "[devid 0]",
            "LINK UP",
            "packet statistics:",
            "optical info:",
            " mW",
            " dBm",
            " C",
            "Speed: ",
            " Mb/s",
            "ipaddr:",
            " TLV",
            "\tIfname: ",
            "...",
            "| UP |",
            "+---+",
        ]
    ),
)


def _run_all(sample: str) -> None:
    for parser in ALL:
        try:
            result = parser(sample)
        except ParseError as error:
            assert error.line_no >= 0
            continue
        _check_value(result)
        _check_bounds(screen(result)[0])


@FAST
@given(st.text(max_size=300))
def test_random_text(sample: str) -> None:
    _run_all(sample)


@FAST
@given(st.lists(HCCN_NOISE, max_size=120))
def test_random_pieces_of_hccn_tool_output(pieces: list[str]) -> None:
    _run_all("".join(pieces))


@FAST
@given(st.sampled_from(sorted(SAMPLES)), st.data())
def test_truncation_and_token_noise_of_every_sample(name: str, data: st.DataObject) -> None:
    sample = SAMPLES[name][: data.draw(st.integers(0, len(SAMPLES[name])))]
    for _ in range(data.draw(st.integers(0, 3))):
        at = data.draw(st.integers(0, len(sample)))
        sample = sample[:at] + data.draw(HCCN_NOISE) + sample[at + data.draw(st.integers(0, 3)) :]
    _run_all(sample)


@given(st.floats(min_value=-40, max_value=10, allow_nan=False))
def test_dbm_and_milliwatts_agree(dbm: float) -> None:
    """The same power printed in dBm (the 950) and in mW (910B) reads as the same watts."""
    from_mw = quantity(f"{dbm_to_watts(dbm) * 1000:.9f} mW")
    from_dbm = quantity(f"{dbm:.4f} dBm")
    assert from_mw is not None and from_dbm is not None
    assert abs(from_dbm - from_mw) <= from_mw * 1e-3 + 1e-12


def test_dbm_reference_points() -> None:
    assert dbm_to_watts(0.0) == 1e-3 and abs(dbm_to_watts(-10.0) - 1e-4) < 1e-12
