"""The simulator's import graph: it imports nothing of the daemon, and has no cycles.

Read off the source with ast (imports inside functions count too), so nothing is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support import ROOT

SIMULATOR = ROOT / "simulator"
PACKAGE = "npumon.simulator"


def _imports(path: Path) -> set[str]:
    """Every npumon.* module a file imports, anywhere in the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("npumon")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("npumon"):
            module = node.module or ""
            # `from npumon.simulator import tables` imports the module npumon.simulator.tables
            found |= {f"{module}.{alias.name}" if module == PACKAGE else module
                      for alias in node.names}
    return found


def _graph() -> dict[str, set[str]]:
    return {f"{PACKAGE}.{path.stem}": _imports(path)
            for path in sorted(SIMULATOR.glob("*.py")) if path.stem != "__init__"}


def test_the_simulator_imports_nothing_of_the_daemon_or_exporters() -> None:
    leaks = {module: sorted(i for i in imports if not i.startswith(PACKAGE))
             for module, imports in _graph().items()}
    assert {m: i for m, i in leaks.items() if i} == {}


def test_the_simulator_has_no_import_cycle() -> None:
    graph = _graph()
    assert f"{PACKAGE}.loader" in graph and f"{PACKAGE}.scenario" in graph
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        if module in path:
            cycle = " -> ".join((*path[path.index(module):], module))
            raise AssertionError(f"import cycle: {cycle}")
        if module in done:
            return
        for imported in sorted(graph.get(module, set())):
            visit(imported, (*path, module))
        done.add(module)

    for module in graph:
        visit(module, ())
