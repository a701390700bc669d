"""The live fleet scenario, shared by the fleet tests that ask for it.

One fleet per worker at a time: the first test that asks starts it, and it stops after the
last of a run of such tests (``pytest_runtest_teardown`` knows the next test), so its
Prometheus, VictoriaMetrics and daemons do not load the machine while this worker goes on with
other tests. tests/conftest.py groups the tests that ask on one pytest-xdist worker, so the run
is one run and the fleet starts once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from fleet_scenario import Fleet, running_fleet


def uses_fleet(item: pytest.Item | None) -> bool:
    return item is not None and "fleet" in getattr(item, "fixturenames", ())


class _Running:
    """The fleet this worker runs now, if any."""

    def __init__(self) -> None:
        self._stack: contextlib.ExitStack | None = None
        self.fleet: Fleet | None = None

    def start(self, request: pytest.FixtureRequest) -> Fleet:
        if self.fleet is None:
            # VictoriaMetrics and vmalert beside Prometheus only when a collected test asks
            # for ``victoriametrics``: they start together, so both hold the same history.
            wanted = any("victoriametrics" in i.fixturenames for i in request.session.items)
            factory = request.getfixturevalue("tmp_path_factory")
            stack = contextlib.ExitStack()
            self.fleet = stack.enter_context(running_fleet(factory, victoriametrics=wanted))
            self._stack = stack
        return self.fleet

    def stop(self) -> None:
        stack, self._stack, self.fleet = self._stack, None, None
        if stack is not None:
            stack.close()


_running = _Running()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    try:
        return (yield)
    finally:
        if uses_fleet(item) and not uses_fleet(nextitem):
            _running.stop()


def pytest_sessionfinish() -> None:
    _running.stop()


@pytest.fixture
def fleet(request: pytest.FixtureRequest) -> Fleet:
    # On a --dist loadgroup worker, pytest-xdist names a grouped test "<id>@<group>"; without
    # that, the other worker starts a fleet of its own and the two load the machine together.
    if getattr(request.config.option, "loadgroup", False):
        assert request.node.nodeid.endswith("@fleet"), (
            "pytest-xdist did not group the fleet's tests, so each worker would start a fleet "
            "(pytest 9.2 drops the groups, pytest-xdist#1386): install pytest below 9.2"
        )
    return _running.start(request)


@pytest.fixture
def prometheus(fleet: Fleet) -> str:
    return fleet.prometheus


@pytest.fixture
def victoriametrics(fleet: Fleet) -> str:
    assert fleet.victoriametrics is not None
    return fleet.victoriametrics
