"""One version, pyproject.toml's: the installed package, `npumon --version`, npumon_build_info
and the changelog's newest release all say it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml

from npumon.daemon import __version__
from tests.helpers.wait import scaled

ROOT = Path(__file__).resolve().parents[2]
NPUMON = Path(sys.executable).parent / "npumon"


def pyproject_version() -> str:
    text = (ROOT / "pyproject.toml").read_text()
    return str(tomllib.loads(text)["project"]["version"])


def test_the_package_reports_pyproject_version() -> None:
    # fails when the venv was installed from an older pyproject.toml (its npumon.egg-info in the
    # tree says the old version too): `make .venv/.installed-stamp` installs it again
    assert version("npumon") == pyproject_version()
    assert __version__ == pyproject_version()


def test_no_module_holds_a_second_copy_of_the_version() -> None:
    written = re.compile(r"""__version__\s*=\s*["']\d""")  # a release number, written out
    trees = ("daemon", "exporters", "simulator", "podresources", "yamlfile")
    copies = [
        str(path.relative_to(ROOT))
        for tree in trees
        for path in (ROOT / tree).rglob("*.py")
        if written.search(path.read_text())
    ]
    assert copies == []


def test_the_newest_changelog_release_is_the_version() -> None:
    headings = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    released = [h for h in headings if h != "Unreleased"]
    assert released[0] == pyproject_version()


def test_cli_version_names_it() -> None:
    done = subprocess.run(
        [str(NPUMON), "--version"], capture_output=True, text=True, timeout=scaled(30)
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"npumon {pyproject_version()}"


@pytest.mark.integration  # `npumon collect --once` against the simulator
def test_build_info_names_it(tmp_path: Path) -> None:
    config = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    config["state_directory"] = str(tmp_path)
    path = tmp_path / "npumon.yaml"
    path.write_text(yaml.safe_dump(config))
    done = subprocess.run(
        [str(NPUMON), "collect", "--once", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=scaled(120),
        cwd=ROOT,
        env={**os.environ, "NPUMON_SIM_TIME": "300"},
    )
    assert done.returncode == 0, done.stderr
    built = [line for line in done.stdout.splitlines() if line.startswith("npumon_build_info{")]
    assert built == [f'npumon_build_info{{version="{pyproject_version()}"}} 1.0']
