"""No product class in daemon/sources/ spans more than 200 lines: a class that large holds more
than one job (issue 39: who serves a chip query apart from how DCMI reads it)."""

from __future__ import annotations

import ast
from pathlib import Path

import npumon.daemon.sources

SOURCES = Path(npumon.daemon.sources.__file__).parent
MAX_CLASS_LINES = 200


def class_spans(root: Path) -> dict[str, int]:
    """ "path:Class" -> the lines from its `class` line to its last, for every class under root."""
    spans = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                name = f"{path.relative_to(root)}:{node.name}"
                spans[name] = node.end_lineno - node.lineno + 1
    return spans


def test_no_class_in_sources_spans_more_than_200_lines() -> None:
    spans = class_spans(SOURCES)
    assert "dcmi/serving.py:DcmiBackend" in spans  # the walk reaches the package's classes
    assert {name: n for name, n in spans.items() if n > MAX_CLASS_LINES} == {}


def test_a_long_class_is_measured(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_CLASS_LINES))
    (tmp_path / "long.py").write_text(f"class Long:\n{body}\n\nclass Short:\n    pass\n")
    assert class_spans(tmp_path) == {"long.py:Long": MAX_CLASS_LINES + 1, "long.py:Short": 2}
