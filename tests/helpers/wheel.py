"""The wheel pip builds from a source folder, offline, as the image's build stage builds it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers.wait import scaled


def pip_wheel(source: Path, out: Path) -> Path:
    """The one wheel ``pip wheel`` builds from ``source`` into ``out`` (no index, no build
    isolation: what the test venv has)."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--wheel-dir",
            str(out),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=scaled(180),
        check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    [wheel] = out.glob("*.whl")
    return wheel
