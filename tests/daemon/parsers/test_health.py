"""`npu-smi info -t health` (parsers/health.py): status and error codes."""

from __future__ import annotations

import pytest

from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.health import parse_health
from tests.daemon.parsers.npu_smi_fixtures import fixture_text


# ---------------------------------------------------------------- -t health
def test_health_ok() -> None:
    report = parse_health(fixture_text("info_t_health_910a_ok.txt"))
    assert (report.status, report.error_codes) == ("OK", ())


def test_health_alarm_multiple_codes_and_continuation_lines() -> None:
    report = parse_health(fixture_text("info_t_health_alarm_910a.txt"))
    assert report.status == "Alarm"
    assert report.error_codes == ("A4025021", "8C03A000", "8C084E00")


def test_health_na_status_and_bad_code() -> None:
    assert parse_health("\tHealth Status : NA\n\tError Code : NA\n").status is None
    with pytest.raises(ParseError):
        parse_health("\tHealth Status : OK\n\tError Code : A402502G\n")
    with pytest.raises(ParseError):
        parse_health("\tError Code : NA\n")  # no Health Status at all


def test_health_950_manual_key_health() -> None:
    """The 950 manual's `-t health -i 0` example prints `Health`; the source `Health Status`."""
    report = parse_health(fixture_text("info_t_health_950_doc.txt"))
    assert (report.status, report.error_codes) == ("OK", ())
