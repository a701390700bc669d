"""The wheel carries the whole product: setup.py finds the packages (nothing lists them), so this
builds the wheel from a copy of the checkout and holds it to the tree. Every top-level folder with
an ``__init__.py`` is a product tree; every module under it, in a folder with an
``__init__.py``, and every data file under it (the package data of pyproject.toml) must be in the
wheel as ``npumon/<its path>``."""

from __future__ import annotations

import ast
import shutil
import zipfile
from pathlib import Path

import pytest

from tests.helpers.wheel import pip_wheel

ROOT = Path(__file__).resolve().parents[1]
# what the wheel is built from besides the product trees
PROJECT_FILES = ("pyproject.toml", "setup.py", "README.md")


def product_trees() -> list[str]:
    return sorted(p.parent.name for p in ROOT.glob("*/__init__.py"))


def expected_files() -> set[str]:
    """npumon/<path> of every module in a package folder and every data file of the trees."""
    expected = set()
    for tree in product_trees():
        for path in (ROOT / tree).rglob("*"):
            relative = path.relative_to(ROOT)
            if path.is_dir() or "__pycache__" in relative.parts or path.name.startswith("."):
                continue
            if path.suffix == ".py" and not (path.parent / "__init__.py").is_file():
                continue  # a module outside any package cannot be imported as npumon.*
            expected.add(f"npumon/{relative.as_posix()}")
    return expected


def build_wheel(tmp_path: Path) -> set[str]:
    """The names in the wheel pip builds from a copy of the checkout (setuptools writes build/
    and *.egg-info beside the sources, so never into the checkout)."""
    source = tmp_path / "src"
    source.mkdir()
    for name in PROJECT_FILES:
        shutil.copy(ROOT / name, source / name)
    for tree in product_trees():
        shutil.copytree(ROOT / tree, source / tree, ignore=shutil.ignore_patterns("__pycache__"))
    wheel = pip_wheel(source, tmp_path / "wheels")
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def setup_trees() -> list[str]:
    """setup.py's TREES, read without running setup()."""
    module = ast.parse((ROOT / "setup.py").read_text())
    [trees] = [
        node.value
        for node in module.body
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["TREES"]
    ]
    return sorted(ast.literal_eval(trees))


def test_setup_py_finds_packages_in_every_product_tree() -> None:
    assert setup_trees() == product_trees()


@pytest.mark.integration
def test_the_wheel_holds_every_package_and_data_file_of_the_tree(tmp_path: Path) -> None:
    names = build_wheel(tmp_path)
    packages = {
        f"npumon/{p.parent.relative_to(ROOT).as_posix()}/__init__.py"
        for tree in product_trees()
        for p in (ROOT / tree).rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    missing_packages = sorted(packages - names)
    assert not missing_packages, f"packages missing from the wheel: {missing_packages}"
    missing = sorted(expected_files() - names)
    assert not missing, f"files missing from the wheel: {missing}"
