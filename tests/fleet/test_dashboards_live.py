"""The dashboards against the live fleet (fleet_scenario.py): every metric a target names shows
in its answer and the cluster variable narrows every target (what each target costs at 10,000
nodes: test_fleet_cost_live.py)."""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fleet_scenario import (
    DASHBOARDS,
    MAY_BE_EMPTY,
    POLLING,
    READY,
    VARIABLES,
    may_be_empty,
)
from promql_names import selectors, unwrap_label_values

from tests.helpers.http import get_json
from tests.helpers.wait import wait_for

pytestmark = pytest.mark.fleet

Answer = frozenset[tuple[tuple[tuple[str, str], ...], str]]
ABSENT = "npumon_test_no_such_metric"


@dataclass(frozen=True)
class Target:
    dashboard: str
    title: str
    expr: str
    instant: bool

    def key(self, name: str) -> tuple[str, str, str]:
        return (self.dashboard, self.title, name)


def targets() -> list[Target]:
    """Every panel target and query variable (but $cluster's own) of every dashboard."""
    found: list[Target] = []
    for path in DASHBOARDS:
        dashboard = json.loads(path.read_text())
        rows = dashboard["panels"]
        for panel in [*rows, *(p for row in rows for p in row.get("panels", []))]:
            found += [
                Target(path.stem, panel["title"], t["expr"], bool(t.get("instant")))
                for t in panel.get("targets", [])
            ]
        found += [
            Target(path.stem, f"${v['name']}", unwrap_label_values(v["query"]["query"]), True)
            for v in dashboard["templating"]["list"]
            if v["type"] == "query" and v["name"] != "cluster"
        ]
    return found


def substitute(expr: str, **values: str) -> str:
    for variable, value in {**VARIABLES, **{f"${k}": v for k, v in values.items()}}.items():
        expr = expr.replace(variable, value)
    return expr


def without(expr: str, name: str) -> str:
    """The expression with every selector of `name` selecting nothing."""
    for selector in reversed(selectors(expr)):
        if selector.name == name:
            start, end = selector.span
            expr = expr[:start] + ABSENT + expr[end:]
    return expr


@pytest.fixture
def ask(prometheus: str) -> Iterator[Any]:
    """Instant queries at one fixed time, so answers compare exactly: 2 s back, once every
    READY expression answers at that time too (the fixture saw them answer only just now)."""
    at = time.time() - 2

    def answer(expr: str) -> Answer:
        data = get_json(
            f"{prometheus}/api/v1/query?"
            + urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"})
        )
        assert data["status"] == "success", (expr, data)
        return frozenset(
            (tuple(sorted(s["metric"].items())), s["value"][1]) for s in data["data"]["result"]
        )

    def ready() -> bool:
        nonlocal at
        at = time.time() - 2
        return all(answer(expr) for expr in READY)

    wait_for(ready, 30, "the scenario ready 2 s back", **POLLING)
    yield answer


def only(expr: str, name: str) -> str:
    """The expression with every selector but those of `name` selecting nothing."""
    for other in {s.name for s in selectors(expr) if s.name} - {name}:
        expr = without(expr, other)
    return expr


def test_every_metric_of_a_target_shows_in_its_answer(ask: Any) -> None:
    """A metric whose removal leaves the answer as it was contributes nothing (missing in the
    fleet, or hidden by an `or`); and what a metric answers on its own (the others removed)
    must be in the whole answer: `a or b` matches on the labels without the name, so where both
    have a chip, b's series (its name, or its sum) is not."""
    silent, lost = [], []
    for target in targets():
        whole = ask(substitute(target.expr))
        names = sorted({s.name for s in selectors(target.expr) if s.name})
        for name in names:
            where = f"{target.dashboard} / {target.title}: {name} in {target.expr}"
            if len(names) > 1 and not ask(substitute(only(target.expr, name))) <= whole:
                lost.append(where)
            if target.key(name) not in MAY_BE_EMPTY and (
                ask(substitute(without(target.expr, name))) == whole
            ):
                silent.append(where)
    assert lost == [], "metrics whose own series the answer drops:\n" + "\n".join(lost)
    assert silent == [], "metrics that add nothing to their target:\n" + "\n".join(silent)


def test_every_exemption_is_still_needed(ask: Any) -> None:
    """MAY_BE_EMPTY names only metrics that are in fact absent from the scenario's answer."""
    by_key = {t.key(s.name): t for t in targets() for s in selectors(t.expr) if s.name}
    assert set(MAY_BE_EMPTY) <= set(by_key), set(MAY_BE_EMPTY) - set(by_key)
    for key, target in by_key.items():
        if key in MAY_BE_EMPTY:
            assert ask(substitute(without(target.expr, key[2]))) == ask(substitute(target.expr)), (
                f"{key} contributes now: drop it from MAY_BE_EMPTY"
            )


def cluster_instances(prometheus: str) -> dict[str, set[str]]:
    active = get_json(f"{prometheus}/api/v1/targets")["data"]["activeTargets"]
    clusters: dict[str, set[str]] = {}
    for t in active:
        clusters.setdefault(t["labels"]["cluster"], set()).add(t["labels"]["instance"])
    return clusters


def test_the_cluster_variable_narrows_every_target(prometheus: str, ask: Any) -> None:
    """Cluster a holds the 910B and A3 nodes, b the 310P node and a dead target: with one of
    them selected, no series of the other shows, and the answers are not all the fleet's.

    Two clusters may answer alike (the scenarios' timed events: A3 in Warning from 300 s to
    480 s, a 310P chip in Alarm from 100 s to 200 s, beside the 910B's lasting Alarm); a target
    the variable does not narrow answers for each cluster what it answers for the fleet."""
    clusters = cluster_instances(prometheus)
    assert sorted(clusters) == ["a", "b"] and len(clusters["b"]) == 2
    same = []
    for target in targets():
        answers = {}
        for cluster, instances in clusters.items():
            answers[cluster] = ask(substitute(target.expr, cluster=cluster))
            for labels, _ in answers[cluster]:
                found = dict(labels)
                assert found.get("cluster", cluster) == cluster, (target, found)
                assert found.get("instance", next(iter(instances))) in instances, (target, found)
        names = {s.name for s in selectors(target.expr) if s.name}
        if may_be_empty(target.dashboard, target.title, names) and answers["a"] == frozenset():
            continue
        if answers["a"] == answers["b"] == ask(substitute(target.expr)):
            same.append(f"{target.dashboard} / {target.title}: {target.expr}")
    assert same == [], "targets the cluster variable does not change:\n" + "\n".join(same)
