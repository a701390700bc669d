"""The metric reference is the rows': docs/metrics.md and the README's collector table are what
docs/generate_metrics.py writes from them now, and every series of the golden expositions is a
row's, with only the labels the row declares."""

from __future__ import annotations

import importlib.util
import re
from types import ModuleType

from npumon.exporters.builtin import BUILD, RESULTS
from npumon.exporters.collector import COLLECTORS
from tests.helpers.exposition import samples
from tests.support import FIXTURES, ROOT

REGENERATE = "run make generate (docs/generate_metrics.py) and commit the result"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "generate_metrics", ROOT / "docs" / "generate_metrics.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_metrics_md_is_generated_from_the_rows() -> None:
    assert (ROOT / "docs" / "metrics.md").read_text() == generator().metrics_md(), REGENERATE


def test_the_readme_collector_table_is_generated_from_the_rows() -> None:
    gen = generator()
    text = (ROOT / "README.md").read_text()
    assert gen.readme(text) == text, REGENERATE
    marked = f"intro\n{gen.BEGIN}\nold table\n{gen.END}\nrest\n"
    assert gen.readme(marked) == f"intro\n{gen.BEGIN}\n{gen.collector_table()}\n{gen.END}\nrest\n"
    assert gen.readme("no markers\n") == "no markers\n"


def test_every_golden_series_is_a_rows_with_the_labels_it_declares() -> None:
    rows = {f.sample_name: f for c in COLLECTORS for f in c.families}
    rows |= {f.sample_name: f for f in (*BUILD, *RESULTS)}
    undeclared: set[str] = set()
    for golden in sorted((FIXTURES / "nodes").glob("*/expected*.prom")):
        text = re.sub(r" <\w+>$", " 0", golden.read_text(), flags=re.MULTILINE)
        for name, labels in samples(text):
            row = rows.get(name)
            names = {n for n, _ in labels}
            if row is None or not set(row.labels) <= names <= {*row.labels, *row.optional}:
                undeclared.add(f"{golden.parent.name}: {name} {sorted(names)}")
    assert sorted(undeclared) == []
