"""Every child process of a capture test gets HOME=tmp_path and no inherited fault injection."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # msprof (spawned by the daemon code) finds the job's socket under $HOME
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("PROFILING_MODE", raising=False)
    for name in (
        "NPUMON_SIM_MSPROF_HANG",
        "NPUMON_SIM_MSPROF_RAW_MB",
        "NPUMON_SIM_MSPROF_EXPORT_MB",
        "NPUMON_SIM_MSPROF_EXPORT_PACE",
    ):
        monkeypatch.delenv(name, raising=False)
