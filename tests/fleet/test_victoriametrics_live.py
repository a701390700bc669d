"""The fleet on VictoriaMetrics: the live scenario (fleet_scenario.py) is scraped by a single-node
victoria-metrics with Prometheus' own scrape config, and vmalert evaluates the shipped rules
against it. Every rule's expression, every recorded series and every dashboard target answers
there as on Prometheus, at the same instant, within TOLERANCE, and the same alerts are
pending. And a Prometheus in agent mode remote-writes the same scrapes into it
(docs/scaling.md: agents feeding a scale-out store)."""

from __future__ import annotations

import contextlib
import math
import re
import time
import urllib.error
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fleet_scenario import POLLING, PROMETHEUS, READY, RULES, Fleet, dashboard_exprs

from tests.helpers.http import get_json
from tests.helpers.wait import wait_for

pytestmark = pytest.mark.fleet

Labels = tuple[tuple[str, str], ...]
Answer = dict[Labels, float]
# The engines scrape the same targets independently (each its own phase in the 1 s interval)
# and evaluate the rules each on its own clock, so one instant holds samples up to a scrape and
# an evaluation apart: a gauge that moves (the simulated load), a rate over a window holding one
# sample more or less. Label sets must match exactly; values within this relative difference
# (or ABSOLUTE, for values near zero).
TOLERANCE = 0.1
# npu-smi reports utilization in whole percent: a ratio near 0 moves in steps of 0.01
ABSOLUTE = 0.01
# Expressions over counters (rate, irate, increase): COUNTER_WINDOW below, for windows that
# hold the series' start (every window of a young fleet); compared within this.
COUNTER_TOLERANCE = 0.5
COUNTER_FUNCTIONS = re.compile(r"\b(?:rate|irate|increase)\(")
# Where the engines differ by design, by rule (record or alert name) or dashboard target
# ("dashboard / panel title"). VALUES: the label sets must match, the values are not compared;
# ANSWERS: both must answer, neither the label sets nor the values are compared.
SCRAPE_OWN = (
    "each engine reads what its own scrape measured: the render time of that scrape, the run "
    "time of the latest poll, the age of the last poll when it was taken (a sawtooth from 0 "
    "to the poll interval)"
)
COUNTER_WINDOW = (
    "VictoriaMetrics' rate() and increase() do not extrapolate to the window's edges, start "
    "from the last sample before the window, and count a counter's first sample as its "
    "increase from 0 when the series begins inside the window (every window of a fleet "
    "younger than it): the link counters here move in steps tens of seconds apart"
)
BAND_EDGE = (
    "a 5-minute average sits at a band's threshold (the 910B's simulated load, 75 +- 10 %, "
    "against training's 80 %): the engines' averages over their own samples fall either side"
)
YOUNG_RECORD = (
    "a recorded series averaged over a window longer than the fleet has run: each rule engine "
    "records from its own first evaluation, so the averages hold different samples (the "
    "recorded series themselves are compared value by value)"
)
# An average over a recorded series (a name with a colon) across minutes: YOUNG_RECORD
RECORD_AVERAGE = re.compile(r"\bavg_over_time\(\w+:[\w:]+(?:\{[^}]*\})?\[\d+[mh]\]\)")
YOUNG_AVERAGE = (
    "a 5-minute average of a moving gauge (the simulated load) while the fleet is younger than "
    "the window or just past it: each engine averages its own scrapes, a few samples each"
)
TOP_TIE = (
    "a top 10 of moving values (temperatures a degree apart, headroom to the limit): the last "
    "places fall to different chips at each engine's own samples"
)
VALUES = {
    "npumon_source:age_seconds": SCRAPE_OWN,
    "npumon-fleet / Data age (oldest node)": SCRAPE_OWN,
    "npumon-fleet / Collector render time (slowest node)": SCRAPE_OWN,
    "npumon-fleet / Source run time (slowest node)": SCRAPE_OWN,
    "npu_chip:utilization_band:code": BAND_EDGE,
    "npu_port:receive_errors:rate2m": COUNTER_WINDOW,
    "npu_chip:aicore_utilization:avg5m": YOUNG_AVERAGE,
    "fleet:npu_chips_allocated_in_band:count": BAND_EDGE,
    "fleet:npumon_source_age_seconds:max": SCRAPE_OWN,
    "fleet:npumon_source_duration_seconds:max": SCRAPE_OWN,
    "fleet:npumon_scrape_collector_duration_seconds:max": SCRAPE_OWN,
}
ANSWERS = {
    "npumon-fleet / Chips nearest their temperature limit": TOP_TIE,
    "NpuNetworkErrors": COUNTER_WINDOW,
    "NpuRoceRetransmissions": COUNTER_WINDOW,
    "npumon-fleet / Bad links (up to 50 each)": COUNTER_WINDOW,
    "NpuAllocatedChipModerateUtilization": BAND_EDGE,
    "NpuAllocatedChipLowUtilization": BAND_EDGE,
}
# How long (before scaled()) an expression that differs is asked again at later instants
# before the difference counts (Comparison).
AGAIN_SECONDS = 15
# Labels left out of the comparison: vmalert's ALERTS carry their rule group's name
# (alertgroup); VictoriaMetrics keeps the metric name where Prometheus drops it (e.g. through
# max_over_time and topk), which no panel shows.
NOT_COMPARED = {"alertgroup", "__name__"}


def answer(url: str, expr: str, at: float) -> Answer:
    """The instant query's series at ``at``, without the labels the engines name differently
    (NOT_COMPARED)."""
    query = urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"})
    try:
        data = get_json(f"{url}/api/v1/query?{query}", timeout=30)
    except urllib.error.HTTPError as error:  # the engine's reason is in the body
        raise AssertionError(f"{url}: {expr}: {error.read().decode()[-1000:]}") from None
    assert data["status"] == "success", (url, expr, data)
    return {
        tuple(sorted((k, v) for k, v in s["metric"].items() if k not in NOT_COMPARED)): float(
            s["value"][1]
        )
        for s in data["data"]["result"]
    }


def difference(a: float, b: float) -> float:
    """Relative difference (0: equal; NaN equals NaN, as both engines print it)."""
    if math.isnan(a) or math.isnan(b):
        return 0.0 if math.isnan(a) and math.isnan(b) else math.inf
    if abs(a - b) <= ABSOLUTE:
        return 0.0
    return abs(a - b) / max(abs(a), abs(b))


class Comparison:
    """Both engines asked at one instant; ``worst`` keeps the largest value difference seen.

    Where they differ, they are asked again, a second apart, at later instants for up to
    scaled(AGAIN_SECONDS): each engine scrapes and evaluates on its own, so a value that resets
    (a source's age when a slow pass completes), sits on a threshold (a utilization band), or
    lags on one engine (a scrape or a rule evaluation late on a busy machine) may differ for a
    while; a difference in what an expression means shows at every instant."""

    def __init__(self, prometheus: str, victoriametrics: str, at: float) -> None:
        self.prometheus, self.victoriametrics, self.at = prometheus, victoriametrics, at
        self.compared = 0
        self.asked_again = 0
        self.worst = (0.0, "")

    def differences(self, where: str, expr: str, at: float) -> tuple[list[str], float, str]:
        on_prometheus = answer(self.prometheus, expr, at)
        on_vm = answer(self.victoriametrics, expr, at)
        if where in ANSWERS:
            if not (on_prometheus and on_vm):
                return [f"{where}: no answer on one engine: {expr}"], 0.0, ""
            return [], 0.0, ""
        problems = []
        for labels in on_prometheus.keys() ^ on_vm.keys():
            side = "Prometheus" if labels in on_prometheus else "VictoriaMetrics"
            problems.append(f"{where}: only on {side}: {dict(labels)} in {expr}")
        worst = (0.0, "")
        for labels in on_prometheus.keys() & on_vm.keys():
            a, b = on_prometheus[labels], on_vm[labels]
            off = 0.0 if where in VALUES or RECORD_AVERAGE.search(expr) else difference(a, b)
            worst = max(worst, (off, f"{where} {dict(labels)}: {a:g} vs {b:g}"))
            if off > (COUNTER_TOLERANCE if COUNTER_FUNCTIONS.search(expr) else TOLERANCE):
                problems.append(f"{where}: {dict(labels)} {a:g} on Prometheus, {b:g} on VM")
        return problems, *worst

    def __call__(self, where: str, expr: str) -> list[str]:
        """What differs between the engines' answers to ``expr`` (empty: they agree)."""
        self.compared += 1
        problems, off, which = self.differences(where, expr, self.at)
        if problems:
            self.asked_again += 1

            def agree() -> bool:
                nonlocal problems, off, which
                problems, off, which = self.differences(where, expr, time.time() - 2)
                return not problems

            with contextlib.suppress(AssertionError):  # the caller names the difference
                wait_for(agree, AGAIN_SECONDS, f"{where} to agree", poll=1.0)
        if not problems:
            self.worst = max(self.worst, (off, which))
        return problems


@pytest.fixture
def compare(prometheus: str, victoriametrics: str) -> Iterator[Comparison]:
    """Both engines at one instant 2 s back, once every READY expression (two passes of the
    link counters, a recording rule's answer) answers at that instant on both; each test its
    own instant."""
    at = time.time() - 2

    def ready() -> bool:
        nonlocal at
        at = time.time() - 2
        return all(answer(url, e, at) for url in (prometheus, victoriametrics) for e in READY)

    wait_for(ready, 60, "READY on Prometheus and VictoriaMetrics 2 s back", **POLLING)
    comparison = Comparison(prometheus, victoriametrics, at)
    yield comparison


def rules() -> list[dict[str, Any]]:
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


def report(comparison: Comparison, what: str, before: tuple[int, int]) -> None:
    off, where = comparison.worst
    print(
        f"\n{comparison.compared - before[0]} {what} compared"
        f" ({comparison.asked_again - before[1]} asked again at a later instant);"
        f" largest difference so far {off:.3%} ({where})"
    )


def counts(comparison: Comparison) -> tuple[int, int]:
    return comparison.compared, comparison.asked_again


def test_every_rule_agrees(compare: Comparison) -> None:
    """Each rule's expression on both engines (each reading its own recording rules), and each
    recorded series as vmalert wrote it."""
    records = sorted({r["record"] for r in rules() if "record" in r})
    assert len(records) > 20
    before = counts(compare)
    problems = [p for r in rules() for p in compare(r.get("record") or r["alert"], r["expr"])]
    problems += [p for name in records for p in compare(name, name)]
    report(compare, "rule expressions and recorded series", before)
    assert problems == [], "\n".join(problems)


def test_every_alert_is_pending_on_both(compare: Comparison) -> None:
    """The alerts pending (every `for:` is 1h here, so each holding condition stays pending) in
    the last 5 s on each engine, by name: vmalert writes ALERTS at every evaluation and no
    staleness marker when an alert ends, so its series are compared through their
    expressions (test_every_rule_agrees), not one by one."""
    alerts = {r["alert"] for r in rules() if "alert" in r}
    expr = 'count by (alertname) (last_over_time(ALERTS{alertstate="pending"}[5s]))'
    names: dict[str, set[str]] = {}

    def same() -> bool:
        at = time.time() - 2
        for engine, url in (("Prometheus", compare.prometheus), ("VM", compare.victoriametrics)):
            found = {dict(k)["alertname"] for k in answer(url, expr, at)}
            names[engine] = found - ANSWERS.keys()
        return names["Prometheus"] == names["VM"]

    with contextlib.suppress(AssertionError):  # the assertion below names the difference
        wait_for(same, 10, "the same alerts pending on both engines", **POLLING)
    assert names["Prometheus"] <= alerts and len(names["Prometheus"]) > 10
    assert names["Prometheus"] == names["VM"]
    print(f"\n{len(names['VM'])} alerts pending on both: {sorted(names['VM'])}")


def test_every_dashboard_target_agrees(compare: Comparison) -> None:
    exprs = dashboard_exprs()
    assert len(exprs) > 50
    before = counts(compare)
    problems = [p for where, expr in exprs for p in compare(where, expr)]
    report(compare, "dashboard targets", before)
    assert problems == [], "\n".join(problems)


def agent_config(fleet: Fleet, url: str) -> dict[str, Any]:
    """The fleet's scrape config, remote-written to ``url`` under scraper="prometheus-agent"
    (so its copies stay apart from what VictoriaMetrics scrapes itself)."""
    return {
        **fleet.scrape,
        "global": {**fleet.scrape["global"], "external_labels": {"scraper": "prometheus-agent"}},
        "remote_write": [{"url": f"{url}/api/v1/write"}],
    }


def test_a_prometheus_agent_remote_writes_to_victoriametrics(
    fleet: Fleet, victoriametrics: str, compare: Comparison
) -> None:
    """Every chip VictoriaMetrics scrapes also arrives through the agent, and so do the
    targets. Last in the module: the copies it sends (label scraper) stay out of the
    comparisons above, which run first on the same fleet."""
    assert PROMETHEUS is not None
    folder: Path = fleet.tmp / "prometheus-agent"
    folder.mkdir()
    (folder / "prometheus.yml").write_text(yaml.safe_dump(agent_config(fleet, victoriametrics)))
    fleet.procs.prometheus_agent(PROMETHEUS, folder)

    def chips(scraper: str) -> set[Labels]:
        """npu_chip_info series VictoriaMetrics received in the last 5 s (its own scrapes:
        scraper ""), that label left out; 5 s, not the default lookback: a chip's first
        series (before serial and firmware are read) is not current."""
        expr = f'last_over_time(npu_chip_info{{scraper="{scraper}"}}[5s])'
        found = answer(victoriametrics, expr, time.time())
        return {tuple(p for p in labels if p[0] != "scraper") for labels in found}

    same: list[set[Labels]] = []

    def arrived() -> bool:
        same[:] = [chips("prometheus-agent"), chips("")]
        return bool(same[0]) and same[0] == same[1]

    wait_for(arrived, 60, "the agent's npu_chip_info on VictoriaMetrics", **POLLING)
    up = 'last_over_time(up{scraper="prometheus-agent"}[5s])'
    wait_for(
        lambda: sorted(answer(victoriametrics, up, time.time()).values()) == [0.0, 1.0, 1.0, 1.0],
        60,
        "the four targets' up via the agent",
        **POLLING,
    )
    chips_seen = len(same[0])
    print(f"\nagent mode: {chips_seen} npu_chip_info series and 4 targets' up answer on VM")
