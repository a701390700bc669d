"""pandas stays out of the daemon at run time (the static import rules are in .importlinter)."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from tests.helpers.wait import scaled


def loaded_after(*modules: str) -> list[str]:
    """pandas and npumon.daemon.analysis modules a fresh interpreter has after the imports."""
    code = (
        f"import sys, {', '.join(modules)}\n"
        "print(sorted(m for m in sys.modules if m == 'pandas'\n"
        "             or m.startswith('npumon.daemon.analysis')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=scaled(60)
    )
    assert out.returncode == 0, out.stderr
    return list(ast.literal_eval(out.stdout))


@pytest.mark.integration
def test_the_daemon_side_loads_no_pandas_and_no_analysis() -> None:
    assert loaded_after("npumon.daemon.profiling.service", "npumon.exporters.profiles") == []


@pytest.mark.integration
def test_importing_the_analysis_does_not_load_pandas() -> None:
    found = loaded_after("npumon.daemon.analysis.report", "npumon.daemon.analysis.analysis")
    assert "pandas" not in found and "npumon.daemon.analysis.analysis" in found
