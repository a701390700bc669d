"""The readers (daemon/analysis/readers/) read and measure; the rules judge. No reader imports
the thresholds type or reads one of its fields, so no threshold reaches a reader as an argument
either (import-linter's contract sees modules, not values)."""

from __future__ import annotations

import ast
from pathlib import Path

from npumon.daemon.analysis import readers
from npumon.daemon.model.profile import Thresholds

READERS = Path(readers.__file__).parent


def _uses(path: Path) -> set[str]:
    """Thresholds imported, and every attribute read that is named like one of its fields."""
    fields = set(Thresholds.model_fields)
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and any(a.name == "Thresholds" for a in node.names):
            found.add("Thresholds")
        elif isinstance(node, ast.Attribute) and node.attr in fields:
            found.add(node.attr)
        elif isinstance(node, ast.Name) and node.id == "Thresholds":
            found.add("Thresholds")
    return found


def test_no_reader_imports_or_reads_a_threshold() -> None:
    sources = sorted(READERS.glob("*.py"))
    assert len(sources) > 10  # the package was found
    used = {p.name: u for p in sources if (u := _uses(p))}
    assert used == {}


def test_the_check_sees_a_threshold_passed_to_a_reader(tmp_path: Path) -> None:
    judged = tmp_path / "judged.py"
    judged.write_text(
        "from npumon.daemon.model.profile import Thresholds\n"
        "def small(sizes, t):\n    return [s for s in sizes if s < t.small_packet_sdma_mb]\n"
    )
    assert _uses(judged) == {"Thresholds", "small_packet_sdma_mb"}
