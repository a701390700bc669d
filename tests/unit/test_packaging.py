"""A non-editable install (the Docker image) ships every package the source tree has."""

from __future__ import annotations

import tomllib

from tests.support import ROOT

FOLDERS = {
    "npumon.daemon": "daemon",
    "npumon.exporters": "exporters",
    "npumon.simulator": "simulator",
    "npumon.podresources": "podresources",
    "npumon.yamlfile": "yamlfile",
}


def test_every_source_package_is_listed_in_pyproject() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-dir"] == FOLDERS
    on_disk = set()
    for name, folder in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            on_disk.add(".".join((name, *parts)))
    data_only = set(setuptools["package-data"])  # folders of data files, listed to ship them
    assert set(setuptools["packages"]) == on_disk | data_only


def test_the_import_names_are_ours_not_python_daemon() -> None:
    import npumon.daemon
    import npumon.exporters

    assert npumon.daemon.__file__ == str(ROOT / "daemon" / "__init__.py")
    assert npumon.exporters.__file__ == str(ROOT / "exporters" / "__init__.py")
