"""The profiling seam: capture never imports pandas or the analysis; analysis never the runtime."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

DAEMON = Path(__file__).resolve().parents[2] / "daemon"
RUNTIME = ("store", "sources", "runner", "profiling", "app", "config")


def imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy imports inside functions count)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def offending(folder: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    out = {}
    for path in sorted((DAEMON / folder).glob("*.py")) if folder else [DAEMON / "config.py"]:
        bad = sorted(m for m in imports(path)
                     if any(m == f or m.startswith(f + ".") for f in forbidden))
        if bad:
            out[path.name] = bad
    return out


def test_profiling_imports_neither_pandas_nor_the_analysis() -> None:
    assert offending("profiling", ("pandas", "npumon.daemon.analysis")) == {}


def test_analysis_imports_no_daemon_runtime() -> None:
    runtime = tuple(f"npumon.daemon.{name}" for name in RUNTIME)
    assert offending("analysis", runtime) == {}


def test_model_and_config_stay_light() -> None:
    assert offending("model", ("pandas", "npumon.daemon.analysis")) == {}
    assert offending("", ("pandas", "npumon.daemon.analysis")) == {}


def loaded_after(*modules: str) -> list[str]:
    """pandas and npumon.daemon.analysis modules a fresh interpreter has after the imports."""
    code = (f"import sys, {', '.join(modules)}\n"
            "print(sorted(m for m in sys.modules if m == 'pandas'\n"
            "             or m.startswith('npumon.daemon.analysis')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return list(ast.literal_eval(out.stdout))


@pytest.mark.integration
def test_the_daemon_side_loads_no_pandas_and_no_analysis() -> None:
    assert loaded_after("npumon.daemon.profiling.service", "npumon.exporters.profiles") == []


@pytest.mark.integration
def test_importing_the_analysis_does_not_load_pandas() -> None:
    found = loaded_after("npumon.daemon.analysis.report", "npumon.daemon.analysis.analysis")
    assert "pandas" not in found and "npumon.daemon.analysis.analysis" in found
