"""Keep the simulator's scenario cache inside pytest's temp dir, in-process and in subprocesses."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def _scenario_cache_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    # one folder per session so the cache warms once; the subprocesses see it through TMPDIR
    folder = tmp_path_factory.mktemp("sim-tmp")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(folder))
        patch.setenv("TMPDIR", str(folder))
        yield folder
