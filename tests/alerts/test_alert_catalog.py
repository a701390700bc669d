"""The fault catalog through the real rule engines: every alert fires on each fault it exists for
within its stated delay, and nothing fires on a must-not-page case (docs/alerts.md)."""

from __future__ import annotations

import shutil

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


def test_every_catalog_alert_is_a_rule() -> None:
    assert isinstance(CATALOG, Catalog)
    alerts = {
        str(r.get("alert"))
        for level in rule_levels(RULES)
        for g in level["groups"]  # type: ignore[attr-defined]
        for r in g["rules"]
    }
    assert set(CATALOG.delays) <= alerts


def test_encode_uses_promtool_expanding_notation() -> None:
    assert encode([1.0, 1.0, 1.0, 2.0, 4.0, 6.0, None, None, 3.0]) == "1x2 2+2x2 stale _ 3"
