"""The live fleet scenario, started once for all fleet tests that ask for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fleet_scenario import Fleet, running_fleet


@pytest.fixture(scope="session")
def fleet(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fleet]:
    """The scenario; with VictoriaMetrics and vmalert beside Prometheus only when a collected
    test asks for ``victoriametrics`` (they start together, so both hold the same history)."""
    wanted = any("victoriametrics" in item.fixturenames for item in request.session.items)
    with running_fleet(tmp_path_factory, victoriametrics=wanted) as started:
        yield started


@pytest.fixture(scope="session")
def prometheus(fleet: Fleet) -> str:
    return fleet.prometheus


@pytest.fixture(scope="session")
def victoriametrics(fleet: Fleet, prometheus: str) -> str:
    """(It asks for ``prometheus`` too: tests/conftest.py keeps the tests that do on the one
    pytest-xdist worker that runs the fleet.)"""
    assert fleet.victoriametrics is not None
    return fleet.victoriametrics
