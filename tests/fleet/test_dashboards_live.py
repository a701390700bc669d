"""The dashboards against the live fleet (fleet_scenario.py): every metric a target names shows
in its answer, the cluster variable narrows every target, and each Fleet panel stays bounded at
1,000 nodes (docs/dashboards.md has the arithmetic this test checks)."""

from __future__ import annotations

import json
import re
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
    ROOT,
    VARIABLES,
    may_be_empty,
)
from promql_names import selectors, unwrap_label_values

from tests.helpers.http import get_json
from tests.helpers.wait import wait_for

pytestmark = pytest.mark.fleet

Answer = frozenset[tuple[tuple[tuple[str, str], ...], str]]
ABSENT = "npumon_test_no_such_metric"
# Fleet-scale arithmetic: 1,000 nodes like the largest simulated one, 7 days, one sample per
# series every 15 s (scrape or rule evaluation; kube-prometheus-stack uses 30 s), and at most
# 1,008 points per range query (the Fleet panels' maxDataPoints 1000: Grafana's step for 7 days
# is then at least 10 minutes).
NODES = 1000
RANGE_SECONDS = 7 * 86400
SAMPLE_SECONDS = 15
POINTS = 1008
MAX_SAMPLES = 50_000_000  # Prometheus's default --query.max-samples
UNBOUNDED_LABELS = {"instance", "npu", "chip", "port", "pod"}
# Series per node assumed for a metric the scenario does not export (MAY_BE_EMPTY): one per
# field or reason that ever had an error, far fewer than this on any real node.
ABSENT_PER_NODE = 20


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


_RANGE_AFTER_NAME = re.compile(r'\s*(?:\{(?:"(?:\\.|[^"\\])*"|[^}"])*\})?\s*\[([^\]:]+)\]')


def window_seconds(expr: str, end: int) -> int:
    """The range `[...]` of the selector whose name ends at `end`, in seconds (0: none)."""
    found = _RANGE_AFTER_NAME.match(expr, end)
    if not found:
        return 0
    text = found.group(1).strip()
    if text == "$__range":
        return RANGE_SECONDS
    if text == "$__rate_interval":  # Grafana: the step plus the scrape interval, at least
        return RANGE_SECONDS // POINTS + SAMPLE_SECONDS
    unit = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    return sum(int(n) * unit[u] for n, u in re.findall(r"(\d+)([smhd])", text))


def top_k(expr: str) -> int | None:
    found = re.match(r"\s*(?:topk|bottomk)\(\s*(\d+)\s*,", expr)
    return int(found.group(1)) if found else None


def fleet_cost(target: Target, ask: Any) -> dict[str, Any]:
    """Series read and samples held at NODES nodes over 7 days (the model of docs/dashboards.md):
    a range query holds POINTS samples per input and output series plus one window per range
    selector; an instant query one sample per series, or its window."""
    read = samples = 0
    for selector in selectors(target.expr):
        matchers = ", ".join(label + op + value for label, op, value in selector.matchers)
        per_node = ask(substitute(f"max(count by (instance) ({selector.name}{{{matchers}}}))"))
        absent = target.key(selector.name) in MAY_BE_EMPTY
        series = NODES * max(
            (int(value) for _, value in per_node), default=ABSENT_PER_NODE if absent else 0
        )
        window = window_seconds(target.expr, selector.span[1]) // SAMPLE_SECONDS
        read += series
        samples += series * (max(window, 1) if target.instant else POINTS + window)
    answer = ask(substitute(target.expr))
    labels = {name for series, _ in answer for name, _ in series}
    k = top_k(target.expr)
    bounded = not (labels & UNBOUNDED_LABELS) or (target.instant and k is not None)
    out = k if k is not None else len(answer)
    samples += out * (1 if target.instant else POINTS)
    return {"read": read, "out": out, "samples": samples, "bounded": bounded}


def test_fleet_panels_stay_bounded_at_1000_nodes(ask: Any) -> None:
    doc = (ROOT / "docs" / "dashboards.md").read_text()
    fleet = [t for t in targets() if t.dashboard == "npumon-fleet" and not t.title.startswith("$")]
    problems = []
    print(f"\n{'panel':60} {'read':>8} {'out':>5} {'samples':>12}")
    for target in fleet:
        cost = fleet_cost(target, ask)
        print(f"{target.title[:60]:60} {cost['read']:8} {cost['out']:5} {cost['samples']:12,}")
        if not cost["bounded"]:
            problems.append(f"{target.title}: one series per node or chip: {target.expr}")
        if cost["samples"] >= MAX_SAMPLES:
            problems.append(f"{target.title}: {cost['samples']:,} samples: {target.expr}")
        if f"| {target.title} |" not in doc:
            problems.append(f"{target.title}: not in the table of docs/dashboards.md")
    assert problems == [], "\n".join(problems)
    panels = [
        p
        for p in json.loads((ROOT / "grafana" / "dashboards" / "npumon-fleet.json").read_text())[
            "panels"
        ]
        if p["type"] != "row"
    ]
    assert all(p.get("maxDataPoints", 10**6) <= 1000 for p in panels)
