"""The fault catalog through the real rule engines: every alert fires on each fault it exists for
within its stated delay, and nothing fires on a must-not-page case (docs/alerts.md)."""

from __future__ import annotations

import importlib.util
import shutil
from types import ModuleType

import pytest

from npumon.simulator.fault_catalog import Catalog, load
from tests.alerts.engines import Firing, encode, rule_levels, run_engines
from tests.alerts.report import DOC, ENGINES, RULES, judge, table, with_table

CATALOG = load()
BINARIES = {"prometheus": ("promtool",), "victoriametrics": ("victoria-metrics", "vmalert")}


@pytest.fixture(scope="module")
def firings() -> dict[str, list[Firing]]:
    """Both engines' alerts over the whole catalog (each engine run once per test session, the
    two side by side)."""
    missing = [b for e in ENGINES for b in BINARIES[e] if shutil.which(b) is None]
    assert not missing, f"{missing} not installed: `make tools` installs them"
    return run_engines(ENGINES, RULES, list(CATALOG.scenarios))


@pytest.mark.integration
@pytest.mark.parametrize("engine", ENGINES)
def test_every_fault_caught_in_time_and_no_false_pages(
    engine: str, firings: dict[str, list[Firing]]
) -> None:
    rows, problems = judge(CATALOG, engine, firings[engine])
    print(table(rows))
    assert not problems, "\n".join(problems)


@pytest.mark.integration
def test_docs_carry_the_current_table(firings: dict[str, list[Firing]]) -> None:
    rows = [row for e in ENGINES for row in judge(CATALOG, e, firings[e])[0]]
    document = DOC.read_text()
    assert with_table(document, table(rows)) == document, (
        "docs/alerts.md is out of date: .venv/bin/python -m tests.alerts.report --write"
    )


def _alerts() -> set[str]:
    return {
        str(r["alert"])
        for level in rule_levels(RULES)
        for g in level["groups"]  # type: ignore[attr-defined]
        for r in g["rules"]
        if "alert" in r
    }


def test_every_catalog_alert_is_a_rule() -> None:
    assert isinstance(CATALOG, Catalog)
    assert set(CATALOG.delays) <= _alerts()


def test_every_alert_is_a_fault_s_and_a_near_miss_s() -> None:
    """Each shipped alert is the expected alert of a fault and guarded by a must-not-page
    case (its twin), so the replay measures both that it fires and that it does not."""
    expected = {a for s in CATALOG.scenarios if s.kind == "fault" for a in s.expect}
    guarded = {a for s in CATALOG.scenarios if s.kind == "must_not_page" for a in s.guards}
    alerts = _alerts()
    assert sorted(alerts - expected) == [], "alerts no fault expects"
    assert sorted(alerts - guarded) == [], "alerts no must-not-page case guards"


def _generator() -> ModuleType:
    path = RULES.parents[2] / "docs" / "generate_catalog.py"
    spec = importlib.util.spec_from_file_location("generate_catalog", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_counts_the_catalog() -> None:
    generator = _generator()
    text = generator.README.read_text()
    assert generator.readme(text, CATALOG) == text, "run make generate and commit the result"
    faults = sum(s.kind == "fault" for s in CATALOG.scenarios)
    assert f"the {faults} scripted faults" in text


def test_encode_uses_promtool_expanding_notation() -> None:
    assert encode([1.0, 1.0, 1.0, 2.0, 4.0, 6.0, None, None, 3.0]) == "1x2 2+2x2 stale _ 3"
