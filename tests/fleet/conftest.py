"""The live fleet scenario, started once for all fleet tests that ask for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fleet_scenario import running_fleet


@pytest.fixture(scope="session")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_fleet(tmp_path_factory) as url:
        yield url
