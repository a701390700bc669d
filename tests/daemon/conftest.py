"""Fixtures of the daemon tests."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from npumon.daemon.logs import setup_logging


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """npumon's log lines (logfmt, level info) in a string while the test runs."""
    stream = io.StringIO()
    setup_logging("info", "logfmt", stream)
    try:
        yield stream
    finally:
        setup_logging("warning", "logfmt")  # leave nothing chatty behind for other tests
