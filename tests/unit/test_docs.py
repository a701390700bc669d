"""The README is a front door: short, and every page it (or a page under docs/) links exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)\s]*)?\)")


def test_the_readme_is_under_200_lines() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) < 200


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_local_link_names_a_file_that_exists(page: Path) -> None:
    targets = [t for t in LINK.findall(page.read_text()) if not re.match(r"[a-z]+:", t)]
    missing = [t for t in targets if not (page.parent / t).exists()]
    assert not missing, f"{page.relative_to(ROOT)} links to missing {missing}"
