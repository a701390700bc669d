"""npumon agent: config, scheduling, npu-smi sources, parsers, state and CLI."""

from importlib.metadata import PackageNotFoundError, version

# One place for the version: pyproject.toml's [project] version, read from the installed
# package's metadata (as `pip show npumon` prints it). npumon runs installed (the image, the venv);
# a tree imported without installing says so rather than claim a release.
try:
    __version__ = version("npumon")
except PackageNotFoundError:
    __version__ = "unknown"
