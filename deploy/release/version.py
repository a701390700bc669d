#!/usr/bin/env python3
"""npumon's version, read from one place: pyproject.toml's [project] version.

    python3 deploy/release/version.py                 # print it
    python3 deploy/release/version.py check [--tag vX.Y.Z]
    python3 deploy/release/version.py set X.Y.Z       # a release: every copy follows

The copies it keeps: the chart's appVersion (the default image tag), the images Artifact Hub
lists (Chart.yaml's artifacthub.io/images annotation) and the chart's own version, which is
never below the app's and moves with it: `set` raises it to the new app version, or, where the
chart is already ahead of that, to its next patch. `check` exits 1 naming each copy that
disagrees, and with --tag also a release tag that is not v<version>. Standard library only, so a
release runner needs nothing installed.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHART = Path("deploy") / "helm" / "npumon" / "Chart.yaml"  # under the repository root
SEMVER = re.compile(r"(\d+)\.(\d+)\.(\d+)")
# Chart.yaml's lines that carry a version (its comments and layout are kept as written)
CHART_VERSION = re.compile(r'^version: *"?([^"\s]+)"?$', re.M)
APP_VERSION = re.compile(r'^appVersion: *"?([^"\s]+)"?$', re.M)
IMAGE_TAG = re.compile(r"^(\s+image: \S+?/npumon:)([^\s-]+)(-profiling)?$", re.M)
PROJECT_VERSION = re.compile(r'^version = "([^"]+)"$', re.M)


def parse(version: str) -> tuple[int, int, int]:
    match = SEMVER.fullmatch(version)
    if match is None:
        raise SystemExit(f"version.py: {version!r} is not MAJOR.MINOR.PATCH")
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def project_version(root: Path = ROOT) -> str:
    version: str = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    return version


def chart_versions(root: Path = ROOT) -> tuple[str, str, list[str]]:
    """(chart version, appVersion, the image tags of artifacthub.io/images)."""
    text = (root / CHART).read_text()
    chart, app = CHART_VERSION.search(text), APP_VERSION.search(text)
    if chart is None or app is None:
        raise SystemExit(f"version.py: {CHART.name} has no version or appVersion line")
    return chart[1], app[1], [m[2] for m in IMAGE_TAG.finditer(text)]


def problems(root: Path = ROOT, tag: str | None = None) -> list[str]:
    """What disagrees with pyproject.toml's version; [] when every copy follows it."""
    version = project_version(root)
    chart, app, tags = chart_versions(root)
    found = []
    if app != version:
        found.append(f"Chart.yaml appVersion {app} is not pyproject.toml's {version}")
    if not tags:
        found.append("Chart.yaml's artifacthub.io/images lists no npumon image")
    found += [
        f"Chart.yaml's artifacthub.io/images tag {t} is not {version}" for t in tags if t != version
    ]
    if parse(chart) < parse(version):
        found.append(f"Chart.yaml version {chart} is below the app version {version}")
    if tag is not None and tag != f"v{version}":
        found.append(f"the tag {tag} is not v{version} (pyproject.toml)")
    return found


def next_chart_version(chart: str, app: str) -> str:
    """The chart's version for a release of app: app itself, or, if the chart is already at or
    past it, the chart's next patch."""
    if parse(chart) < parse(app):
        return app
    major, minor, patch = parse(chart)
    return f"{major}.{minor}.{patch + 1}"


def set_version(new: str, root: Path = ROOT) -> None:
    parse(new)
    pyproject = root / "pyproject.toml"
    text, count = PROJECT_VERSION.subn(f'version = "{new}"', pyproject.read_text(), count=1)
    if count != 1:
        raise SystemExit("version.py: no version line in pyproject.toml")
    pyproject.write_text(text)
    chart_path = root / CHART
    chart, _, _ = chart_versions(root)
    text = chart_path.read_text()
    text = CHART_VERSION.sub(f"version: {next_chart_version(chart, new)}", text, count=1)
    text = APP_VERSION.sub(f'appVersion: "{new}"', text, count=1)
    text = IMAGE_TAG.sub(lambda m: f"{m[1]}{new}{m[3] or ''}", text)
    chart_path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    check = sub.add_parser("check", help="exit 1 naming each copy that disagrees")
    check.add_argument("--tag", help="a release tag, which must be v<version>")
    bump = sub.add_parser("set", help="set the version everywhere it is kept")
    bump.add_argument("version")
    args = parser.parse_args(argv)
    if args.command == "check":
        found = problems(tag=args.tag)
        for problem in found:
            print(f"version.py: {problem}", file=sys.stderr)
        return 1 if found else 0
    if args.command == "set":
        set_version(args.version)
        chart, app, _ = chart_versions()
        print(f"pyproject.toml {project_version()}, chart {chart} (appVersion {app})")
        return 0
    print(project_version())
    return 0


if __name__ == "__main__":
    sys.exit(main())
