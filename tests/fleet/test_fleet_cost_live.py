"""What the dashboards and the bundled rules cost at 10,000 nodes: query statistics measured on
the live fleet (fleet_scenario.py) and extrapolated as docs/scaling.md ("Queries and rules at
10,000 nodes") writes out, against Prometheus' and VictoriaMetrics' default per-query limits.

The fleet scrapes and evaluates every second where a real one does every 15 s, so it runs 15
times faster: every window, offset and range of a target or rule is asked here divided by 15,
and then holds as many samples as it does in a real fleet. From there:

- nodes: x NODES x (chips of the fleet's largest node) / (chips of the fleet), every node as
  large as the largest (an A3, 16 dies), for the Fleet and Needs attention dashboards and the
  rules; a target that reads only `fleet:*` series (one per cluster and job) x CLUSTERS / the
  fleet's clusters (2); the Node dashboard reads that one largest node, the Workload dashboard
  every workload of the fleet;
- a range target is asked over the last MEASURED s at a 1 s step and scaled to POINTS points
  (6 h at Grafana's 20 s step for maxDataPoints 1000); an instant target over `$__range` is
  asked with `$__range` = MEASURED s and scaled to 6 h (1,440 samples a series at 15 s).

Prometheus' limit is the peak samples one query holds (`--query.max-samples`, 50 M; `stats=all`
reports them); VictoriaMetrics' the unique series one query selects
(`-search.maxUniqueTimeseries`, 300 k), counted per target as the sum of its selectors'.
"""

from __future__ import annotations

import re
import time
import urllib.parse
from typing import Any

import pytest
import yaml
from fleet_scenario import ROOT, RULES
from promql_names import selectors
from test_dashboards_live import Target, targets

from tests.helpers.http import get_json

pytestmark = pytest.mark.fleet

NODES = 10_000
SPEEDUP = 15  # a real fleet's scrape and evaluation interval (s) over the live fleet's (1 s)
RANGE_SECONDS = 6 * 3600
POINTS = RANGE_SECONDS // 20 + 1  # Grafana's step for 6 h at maxDataPoints 1000 is 20 s
MEASURED = 60  # seconds of the live fleet a range target is asked over, at a 1 s step
MAX_SAMPLES = 50_000_000  # Prometheus: --query.max-samples
MAX_SERIES = 300_000  # VictoriaMetrics: -search.maxUniqueTimeseries
SCALED_TO_NODES = {"npumon-fleet", "npumon-attention"}
# fleet:* series are one per cluster and job (and source, collector, band...): they grow with
# the clusters, not the nodes. 10,000 nodes in CLUSTERS clusters of 100.
CLUSTERS = 100
RECORDED = r"npu_chip:.+|npu_node:.+|npu_port:.+|npumon_source:.+|npumon_target:.+"
SCALING = ROOT / "docs" / "scaling.md"

_DURATION = re.compile(r"(\[|offset\s+|:)(\d+)([smhd])(?=[\]:\s)])")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def compressed(expr: str, **variables: str) -> str:
    """The expression in the live fleet's time (windows and offsets / SPEEDUP) with Grafana's
    variables as it would set them for 6 h: $__rate_interval 1 m, $__interval 20 s."""

    def shorter(found: re.Match[str]) -> str:
        seconds = int(found.group(2)) * _UNIT[found.group(3)]
        return f"{found.group(1)}{max(1, seconds // SPEEDUP)}s"

    expr = _DURATION.sub(shorter, expr)
    values = {
        "$cluster": ".*",
        "$job": "npumon",
        "$instance": ".*",
        "$npu": ".*",
        "$namespace": ".*",
        "$pod": ".*",
        "$workload": ".*",
        "$__rate_interval": f"{60 // SPEEDUP}s",
        "$__interval": "1s",
        "$__range": f"{MEASURED}s",
        # the fleet's alerts stay pending (fleet_scenario.VARIABLES): read them as firing
        'alertstate="firing"': 'alertstate=~"firing|pending"',
        **{f"${k}": v for k, v in variables.items()},
    }
    for name in sorted(values, key=len, reverse=True):
        expr = expr.replace(name, values[name])

    return expr


def test_compressed_divides_windows_and_offsets_only() -> None:
    assert compressed("rate(a[5m]) - b offset 1h + c[$__rate_interval]") == (
        "rate(a[20s]) - b offset 240s + c[4s]"
    )
    assert compressed('x{l="5m"}[$__range:$__interval]') == 'x{l="5m"}[60s:1s]'


def samples(url: str, expr: str, instant: bool, end: float) -> tuple[int, int]:
    """(peak, total queryable) samples of one query, from Prometheus' own statistics."""
    params: dict[str, Any] = {"query": expr, "stats": "all"}
    if instant:
        path, params["time"] = "query", f"{end:.3f}"
    else:
        path = "query_range"
        params.update(start=f"{end - MEASURED:.3f}", end=f"{end:.3f}", step="1")
    data = get_json(f"{url}/api/v1/{path}?" + urllib.parse.urlencode(params), timeout=30)
    assert data["status"] == "success", (expr, data)
    stats = data["data"]["stats"]["samples"]
    return int(stats["peakSamples"]), int(stats["totalQueryableSamples"])


def instant(url: str, expr: str, end: float) -> list[dict[str, Any]]:
    query = urllib.parse.urlencode({"query": expr, "time": f"{end:.3f}"})
    data = get_json(f"{url}/api/v1/query?{query}", timeout=30)
    assert data["status"] == "success", (expr, data)
    result: list[dict[str, Any]] = data["data"]["result"]
    return result


def series(url: str, expr: str, end: float) -> int:
    """Series the target's selectors select now, summed."""
    total = 0
    for selector in selectors(expr):
        if not selector.name:
            continue
        matchers = ", ".join(label + op + value for label, op, value in selector.matchers)
        answer = instant(url, f"count({selector.name}{{{matchers}}})", end)
        total += int(float(answer[0]["value"][1])) if answer else 0
    return total


def cluster_scale(url: str, end: float) -> float:
    return CLUSTERS / len(instant(url, "count by (cluster) (npumon_build_info)", end))


def node_scale(url: str, end: float) -> tuple[float, str]:
    """NODES x the largest node's chips / the fleet's chips, and the largest node's instance."""
    chips = {
        s["metric"]["instance"]: float(s["value"][1])
        for s in instant(url, "npu_node:chips:count", end)
    }
    largest = max(chips, key=lambda instance: chips[instance])
    return NODES * chips[largest] / sum(chips.values()), largest


def cost(
    url: str, target: Target, end: float, scale: dict[str, float], largest: str
) -> dict[str, Any]:
    variables = {"instance": largest} if target.dashboard == "npumon-node" else {}
    expr = compressed(target.expr, **variables)
    peak, total = samples(url, expr, target.instant, end)
    if target.instant:
        stretch = (RANGE_SECONDS / SPEEDUP) / MEASURED if "$__range" in target.expr else 1.0
    else:
        stretch = POINTS / (MEASURED + 1)
    names = {s.name for s in selectors(target.expr) if s.name}
    if target.dashboard not in SCALED_TO_NODES:
        nodes = 1.0
    elif all(name.startswith("fleet:") for name in names):
        nodes = scale["clusters"]
    else:
        nodes = scale["nodes"]
    return {
        "peak": round(peak * stretch * nodes),
        "total": round(total * stretch * nodes),
        "series": round(series(url, expr, end) * nodes),
    }


def test_every_dashboard_target_loads_at_10000_nodes_over_6_hours(prometheus: str) -> None:
    end = time.time() - 2
    nodes, largest = node_scale(prometheus, end)
    scale = {"nodes": nodes, "clusters": cluster_scale(prometheus, end)}
    doc = SCALING.read_text()
    problems = []
    print(f"\n{scale}; {'target':60} {'peak':>12} {'total':>12} {'series':>8}")
    for target in targets():
        if target.title.startswith("$"):
            continue
        found = cost(prometheus, target, end, scale, largest)
        where = f"{target.dashboard[7:]} / {target.title}"
        print(f"{where[:70]:70} {found['peak']:12,} {found['total']:12,} {found['series']:8,}")
        if found["peak"] >= MAX_SAMPLES:
            problems.append(f"{where}: {found['peak']:,} samples: {target.expr}")
        if found["series"] >= MAX_SERIES:
            problems.append(f"{where}: {found['series']:,} series: {target.expr}")
        if target.dashboard in SCALED_TO_NODES and f"| {target.title} |" not in doc:
            problems.append(f"{where}: not in the table of docs/scaling.md")
    assert problems == [], "\n".join(problems)


def test_rule_cost_and_recorded_series_match_the_docs(prometheus: str) -> None:
    """The samples the bundled rules read in one evaluation round at 10,000 nodes and the series
    they record on the 8 x 910B node, against docs/scaling.md. The groups' evaluation times on
    the fleet are printed, not extrapolated: at three nodes a rule's fixed cost dominates them."""
    end = time.time() - 2
    scale, _ = node_scale(prometheus, end)
    groups = yaml.safe_load(RULES.read_text())["groups"]
    evaluated = {
        g["name"]: g["evaluationTime"]
        for g in get_json(f"{prometheus}/api/v1/rules", timeout=30)["data"]["groups"]
    }
    print(f"\nnodes x {scale:.0f}; {'group':28} {'samples a round':>15} {'eval ms here':>12}")
    round_samples = 0.0
    for group in groups:
        read = sum(samples(prometheus, compressed(r["expr"]), True, end)[1] for r in group["rules"])
        round_samples += read * scale
        print(f"{group['name']:28} {read * scale:15,.0f} {evaluated[group['name']] * 1000:12.2f}")
    print(f"{'all':28} {round_samples:15,.0f}")

    names = instant(prometheus, "count by (instance) (npu_chip_info{name!~'.*310.*'})", end)
    n910b = next(s["metric"]["instance"] for s in names if float(s["value"][1]) == 8)
    recorded = instant(prometheus, f'count({{__name__=~"{RECORDED}", instance="{n910b}"}})', end)
    per_node = int(float(recorded[0]["value"][1]))
    scraped = instant(prometheus, f'scrape_samples_scraped{{instance="{n910b}"}}', end)
    workloads = instant(
        prometheus, f'count by (workload) ({{instance="{n910b}", workload!=""}})', end
    )
    print(f"910B node: {per_node} recorded series ({per_node / 8:.1f} per chip), ", end="")
    print(f"{scraped[0]['value'][1]} samples per scrape, ", end="")
    print(
        "series per profiled workload:", {w["metric"]["workload"]: w["value"][1] for w in workloads}
    )

    doc = SCALING.read_text()
    documented = re.search(r"the rules record (\d+) series on it \(([\d.]+) per chip\)", doc)
    assert documented, "docs/scaling.md names the recorded series of the 8 x 910B node"
    assert int(documented.group(1)) == pytest.approx(per_node, rel=0.1)
    cost_doc = re.search(r"the rules read ([\d.]+) M samples a round", doc)
    assert cost_doc, "docs/scaling.md names the samples the rules read a round at 10,000 nodes"
    # the rules read more while more chips are throttled or allocated: the documented figure is
    # the larger of the measured runs, and a run reads between half of it and a quarter more
    assert 0.5 <= round_samples / (float(cost_doc.group(1)) * 1e6) <= 1.25
