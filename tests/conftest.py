"""Shared test options. How the tests are laid out:

- tests mirror the source tree: ``daemon/parsers/test_table.py`` tests ``daemon/parsers/table.py``,
  ``simulator/`` tests ``simulator/`` (plus ``e2e/`` whole-pipeline and ``fleet/`` deployment
  tests); the test folders have no ``__init__.py``, so a test file's name must be unique;
- one kit: ``tests/helpers`` (wait_for, scaled, processes, http, exposition) and
  ``tests/support.py`` (paths, the fake npu-smi under ``tests/fakes``, and ``replay``, its answers
  computed in-process for tests about parsing, merging and rendering: ``fixture_agent``);
  fixtures (real captures) in ``tests/fixtures``;
- markers (pyproject): ``integration`` on tests that start real processes, sockets or servers,
  ``fleet`` on those that run a real Prometheus. ``make test-fast`` runs the rest (parsers,
  unit, rendering, golden; about 40 CPU-seconds, 30 s wall on two workers), ``make test``
  everything (``-n 2 --dist loadgroup``; the live fleet's tests run on one worker, in a row);
- time: a clock is injected where it can be (``NPUMON_SIM_TIME``, ``Agent(clock=...)``, the
  msprof session's ``clock``); where real time must pass, a test waits on a condition
  (``tests.helpers.wait.wait_for``), never sleeps, and asserts no duration: a deadline test
  shows the outcome (the call timed out while what it waited on still runs). Every deadline a
  test waits under is ``scaled(seconds)``: times ``NPUMON_TEST_TIMEOUT_FACTOR`` (default 4, a
  2-core machine at load 13 passes; raise it on a slower one), one factor for the whole suite.
  A file a test waits for is written whole before it appears (write, then rename). The real
  figures live in ``bench/``. Servers bind port 0 and report the port they got.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite the golden expected.prom files instead of comparing against them",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


# A fixture that starts something large, and the pytest-xdist group of the tests that use it: they
# run on one worker, so it is built once. The live fleet (tests/fleet/conftest.py) starts there
# and stops after them; the alert catalog's run of both rule engines (tests/alerts) is one
# module-scoped fixture.
SHARED = {"fleet": "fleet", "firings": "alert-catalog"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # First: pytest-xdist reads the group from the marks in its own hook, which runs before a
    # conftest's. pytest 9.2 drops the groups (pytest-xdist#1386), hence pytest<9.2 in pyproject.
    for item in items:
        used = getattr(item, "fixturenames", ())
        for fixture, group in SHARED.items():
            if fixture in used:
                item.add_marker(pytest.mark.xdist_group(group))
                break
