"""What the release workflow (.github/workflows/release.yml) relies on, checked here since the
workflow cannot run here: the version read from one place (deploy/release/version.py: the
chart's appVersion, its Artifact Hub images and its version follow pyproject.toml's), and the
CHANGELOG.md section extracted as the release notes (deploy/release/changelog.py)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / "deploy" / "release"
CHART_YAML = ROOT / "deploy" / "helm" / "npumon" / "Chart.yaml"
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"npumon_release_{name}", RELEASE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


version = load("version")
changelog = load("changelog")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of what version.py reads and writes."""
    (tmp_path / "deploy" / "helm" / "npumon").mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copy(CHART_YAML, tmp_path / "deploy" / "helm" / "npumon" / "Chart.yaml")
    return tmp_path


def test_the_chart_follows_pyprojects_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    chart = yaml.safe_load(CHART_YAML.read_text())
    assert version.project_version() == project
    assert chart["appVersion"] == project
    images = yaml.safe_load(chart["annotations"]["artifacthub.io/images"])
    assert [i["image"].rsplit(":", 1)[1] for i in images] == [project, f"{project}-profiling"]
    assert version.parse(chart["version"]) >= version.parse(project)
    assert version.problems() == []


def test_check_names_each_copy_that_disagrees(tree: Path) -> None:
    chart = tree / "deploy" / "helm" / "npumon" / "Chart.yaml"
    text = chart.read_text()
    current = version.project_version(tree)
    chart.write_text(text.replace(f'appVersion: "{current}"', 'appVersion: "9.9.9"'))
    found = version.problems(tree, tag="v0.0.1")
    assert f"Chart.yaml appVersion 9.9.9 is not pyproject.toml's {current}" in found
    assert f"the tag v0.0.1 is not v{current} (pyproject.toml)" in found
    assert version.problems(tree, tag=f"v{current}") == [found[0]]


def test_set_moves_every_copy_and_the_chart_version_with_it(tree: Path) -> None:
    chart_before, _, _ = version.chart_versions(tree)
    major, minor, _ = version.parse(chart_before)
    ahead = f"{major}.{minor + 1}.0"  # past the chart: the chart takes the app's version
    version.set_version(ahead, tree)
    assert version.project_version(tree) == ahead
    assert version.chart_versions(tree) == (ahead, ahead, [ahead, ahead])
    assert version.problems(tree, tag=f"v{ahead}") == []
    # a patch release while the chart is already there: the chart's next patch
    version.set_version(ahead, tree)
    assert version.chart_versions(tree)[0] == f"{major}.{minor + 1}.1"
    chart = yaml.safe_load((tree / "deploy" / "helm" / "npumon" / "Chart.yaml").read_text())
    assert chart["annotations"]["artifacthub.io/license"] == "Apache-2.0"  # the rest is kept
    # pyproject.toml is still valid TOML with only the version changed
    before = (ROOT / "pyproject.toml").read_text().splitlines()
    after = (tree / "pyproject.toml").read_text().splitlines()
    assert [(a, b) for a, b in zip(before, after, strict=True) if a != b] == [
        (f'version = "{version.project_version()}"', f'version = "{ahead}"')
    ]


def test_set_refuses_a_version_that_is_not_semver(tree: Path) -> None:
    with pytest.raises(SystemExit, match="not MAJOR.MINOR.PATCH"):
        version.set_version("1.2", tree)
    assert version.problems(tree) == []


def test_the_command_prints_the_version_and_checks() -> None:
    done = subprocess.run(
        [sys.executable, str(RELEASE / "version.py")], capture_output=True, text=True, check=True
    )
    assert done.stdout == version.project_version() + "\n"
    bad = subprocess.run(
        [sys.executable, str(RELEASE / "version.py"), "check", "--tag", "v0.0.0-not"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1
    assert "the tag v0.0.0-not is not" in bad.stderr


CHANGELOG = """\
# Changelog

Intro.

## Unreleased (0.3.0)

- next

## 0.2.0 (2027-01-15)

### Metrics

- one

### Fixed

- two

## 0.1.0

The first release.
"""


def test_the_section_is_everything_under_its_heading() -> None:
    assert changelog.section(CHANGELOG, "0.2.0") == "### Metrics\n\n- one\n\n### Fixed\n\n- two\n"
    assert changelog.section(CHANGELOG, "0.1.0") == "The first release.\n"


@pytest.mark.parametrize(
    ("wanted", "reason"),
    [
        ("0.3.0", "0.3.0 is still headed '## Unreleased (0.3.0)'"),
        ("0.2", "no '## 0.2' heading"),
        ("9.9.9", "no '## 9.9.9' heading"),
    ],
)
def test_no_section_says_why(wanted: str, reason: str) -> None:
    with pytest.raises(changelog.NoSection, match=reason.replace("(", r"\(").replace(")", r"\)")):
        changelog.section(CHANGELOG, wanted)


def test_the_command_takes_a_tag_and_the_real_changelog_has_every_release(tmp_path: Path) -> None:
    path = tmp_path / "CHANGELOG.md"
    path.write_text(CHANGELOG)
    done = subprocess.run(
        [sys.executable, str(RELEASE / "changelog.py"), "v0.1.0", "--changelog", str(path)],
        capture_output=True,
        text=True,
    )
    assert (done.returncode, done.stdout) == (0, "The first release.\n")
    assert changelog.section((ROOT / "CHANGELOG.md").read_text(), "0.1.0").strip()


def test_the_workflow_uses_both_scripts_on_the_tag() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    runs = "\n".join(
        step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]
    )
    assert 'deploy/release/version.py check --tag "$TAG"' in runs
    assert 'deploy/release/changelog.py "$VERSION" > notes.md' in runs
    # yaml reads the key `on` as True
    assert workflow[True] == {"push": {"tags": ["v*"]}}
