"""The shipped rules with one alert's clock scaled down, rendered through the chart's own tuning
path (prometheusRule.alerts.<Name>.window / for), for the live tests that replay a catalog fault
on a compressed clock."""

from __future__ import annotations

from pathlib import Path

import yaml
from chart_render import one, render
from fleet_scenario import RULES

from npumon.simulator.fault_catalog import seconds


def shipped(alert: str) -> dict[str, object]:
    """The alert's rule as config/prometheus/npumon-rules.yml ships it."""
    return next(
        r
        for g in yaml.safe_load(RULES.read_text())["groups"]
        for r in g["rules"]
        if r.get("alert") == alert
    )


def write_scaled(path: Path, alert: str, scale: int, window: str | None = None) -> dict[str, str]:
    """Writes the rules with ``alert``'s `for` (and ``window``, the shipped duration of its range
    selectors, when given) divided by ``scale``; returns the values the chart was given."""
    tuning = {"for": f"{int(seconds(str(shipped(alert)['for'])) / scale)}s"}
    if window is not None:
        tuning["window"] = f"{int(seconds(window) / scale)}s"
    values = {"prometheusRule": {"enabled": True, "alerts": {alert: tuning}}}
    spec = one(render(values), "PrometheusRule")["spec"]
    rule = next(r for g in spec["groups"] for r in g["rules"] if r.get("alert") == alert)
    assert rule["for"] == tuning["for"], "the for value did not reach the rule"
    if window is not None:
        assert f"[{tuning['window']}]" in rule["expr"], "the window value did not reach the expr"
    path.write_text(yaml.safe_dump({"groups": spec["groups"]}))
    return tuning
