"""npumon's packages, found rather than listed: every folder under the product trees, imported as
npumon.<its path with dots> (daemon/sources/dcmi -> npumon.daemon.sources.dcmi) through the one
mapping npumon -> the repository root. Everything else is in pyproject.toml."""

from setuptools import find_namespace_packages, setup

TREES = ("daemon", "exporters", "simulator", "podresources", "yamlfile")

setup(
    package_dir={"npumon": "."},
    packages=[
        f"npumon.{name}"
        for name in find_namespace_packages(
            include=[f"{tree}{tail}" for tree in TREES for tail in ("", ".*")],
            exclude=["*.__pycache__"],
        )
    ],
)
