"""Static checks of the Grafana dashboards: layout, units, datasource variable, metric names."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from promql_names import metric_names, selectors, unwrap_label_values

from npumon.daemon.model.profile import CAPTURE_RESULTS

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = sorted((ROOT / "grafana" / "dashboards").glob("*.json"))
RULES = ROOT / "config" / "prometheus" / "npumon-rules.yml"

# The metric contract (docs/architecture.md), written out here as the families a dashboard may use.
CONTRACT = frozenset(
    {
        "npu_chip_info",
        "npu_node_info",
        "npu_health_state",
        "npu_error_code_info",
        "npu_aicore_utilization_ratio",
        "npu_aivector_utilization_ratio",
        "npu_aicube_utilization_ratio",
        "npu_aicpu_utilization_ratio",
        "npu_ctrlcpu_utilization_ratio",
        "npu_utilization_ratio",
        "npu_hbm_bandwidth_utilization_ratio",
        "npu_memory_bandwidth_utilization_ratio",
        "npu_power_watts",
        "npu_temperature_celsius",
        "npu_hbm_temperature_celsius",
        "npu_hbm_used_bytes",
        "npu_hbm_total_bytes",
        "npu_memory_used_bytes",
        "npu_memory_total_bytes",
        "npu_hugepages_used",
        "npu_hugepages_total",
        "npu_aicore_frequency_hertz",
        "npu_aicore_rated_frequency_hertz",
        "npu_throttled",
        "npu_hbm_ecc_errors_total",
        "npu_process_hbm_used_bytes",
        "npu_profiling_active",
        "npu_step_duration_seconds",
        "npu_step_phase_seconds",
        "npu_step_phase_ratio",
        "npu_op_time_ratio",
        "npu_core_type_time_ratio",
        "npu_profile_bottleneck",
        "npu_step_duration_baseline_seconds",
        "npu_step_duration_baseline_band_ratio",
        "npu_step_captured_steps",
        "npu_step_regression_judged",
        "npu_step_regression",
        "npu_communication_time_ratio",
        "npu_communication_wait_ratio",
        "npu_communication_link_bandwidth_bytes_per_second",
        "npu_rank_step_duration_seconds",
        "npumon_source_up",
        "npumon_source_duration_seconds",
        "npumon_source_last_success_timestamp_seconds",
        "npumon_source_failures_total",
        "npumon_captures_total",
        "npumon_capture_last_success_timestamp_seconds",
        "npumon_capture_duration_seconds",
        "npumon_build_info",
        # interconnect (hccn_tool, npu-smi -t hccs / sio-info / pcie-err): the default set only,
        # so no panel is empty without the detail collectors
        "npu_network_up",
        "npu_network_speed_bytes",
        "npu_network_info",
        "npu_network_healthy",
        "npu_network_carrier_up_changes_total",
        "npu_network_receive_bytes_total",
        "npu_network_transmit_bytes_total",
        "npu_network_receive_errors_total",
        "npu_network_transmit_errors_total",
        "npu_network_pause_frames_total",
        "npu_roce_retransmissions_total",
        "npu_ub_link_state",
        "npu_ub_lanes",
        "npu_ub_bandwidth_bytes_per_second",
        "npu_optical_rx_power_min_watts",
        "npu_optical_out_of_range",
        "npu_hccs_errors_total",
        "npu_sio_crc_errors_total",
        "npu_pcie_link_errors_total",
        "npu_chip_allocation_info",
        "npu_chip_allocated",
        "npumon_attribution_problems_total",
        # more per-chip figures and npumon's own health
        "npu_hugepages_used_pages",
        "npu_hugepages_total_pages",
        "npu_aicore_cores",
        "npu_memory_ecc_errors_total",
        "npumon_chips",
        "npumon_snapshot_timestamp_seconds",
        "npumon_scrape_collector_success",
        "npumon_scrape_collector_duration_seconds",
        "npumon_config_last_reload_successful",
        "npumon_values_rejected_total",
        "npumon_state_errors_total",
        "npumon_profile_render_skipped",
    }
)


def recording_rule_names() -> set[str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return {rule["record"] for group in groups for rule in group["rules"] if "record" in rule}


def all_panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Top-level panels plus those nested in collapsed rows."""
    panels: list[dict[str, Any]] = []
    for panel in dashboard["panels"]:
        panels.append(panel)
        panels.extend(panel.get("panels", []))
    return panels


def exprs(dashboard: dict[str, Any]) -> list[str]:
    found = [t["expr"] for p in all_panels(dashboard) for t in p.get("targets", []) if "expr" in t]
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        if variable["type"] == "query":
            found.append(query["query"] if isinstance(query, dict) else query)
    return found


def load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


def test_there_are_four_dashboards() -> None:
    names = {path.name for path in DASHBOARDS}
    assert names == {
        "npumon-attention.json",
        "npumon-fleet.json",
        "npumon-node.json",
        "npumon-workload.json",
    }


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_panel_ids_are_unique(path: Path) -> None:
    ids = [panel["id"] for panel in all_panels(load(path))]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def overlaps(a: dict[str, int], b: dict[str, int]) -> bool:
    return (
        a["x"] < b["x"] + b["w"]
        and b["x"] < a["x"] + a["w"]
        and a["y"] < b["y"] + b["h"]
        and b["y"] < a["y"] + a["h"]
    )


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_grid_positions_do_not_overlap(path: Path) -> None:
    panels = load(path)["panels"]
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["w"] > 0 and grid["h"] > 0
        assert grid["x"] + grid["w"] <= 24, panel["title"]
    for a, b in itertools.combinations(panels, 2):
        assert not overlaps(a["gridPos"], b["gridPos"]), (a["title"], b["title"])


def test_overlap_check_detects_an_overlap() -> None:
    a = {"x": 0, "y": 0, "w": 12, "h": 8}
    assert overlaps(a, {"x": 11, "y": 7, "w": 2, "h": 2})
    assert not overlaps(a, {"x": 12, "y": 0, "w": 12, "h": 8})
    assert not overlaps(a, {"x": 0, "y": 8, "w": 24, "h": 1})


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_every_graph_panel_has_a_unit(path: Path) -> None:
    for panel in all_panels(load(path)):
        if panel["type"] == "row":
            continue
        unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit")
        assert isinstance(unit, str) and unit, panel["title"]


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_datasource_is_a_variable(path: Path) -> None:
    dashboard = load(path)
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    assert "instance" in variables
    if path.name != "npumon-workload.json":
        assert "npu" in variables
    for panel in all_panels(dashboard):
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}", panel["title"]


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_dashboards_link_to_each_other(path: Path) -> None:
    dashboard = load(path)
    assert "npumon" in dashboard["tags"]
    assert any(
        link["type"] == "dashboards" and "npumon" in link["tags"] for link in dashboard["links"]
    )


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_only_exported_metric_names(path: Path) -> None:
    # ALERTS: the rule engine's series of the bundled alerts (the Needs attention dashboard)
    allowed = CONTRACT | recording_rule_names() | {"up", "ALERTS"}
    dashboard = load(path)
    used: set[str] = set()
    for expr in exprs(dashboard):
        names = metric_names(expr)
        assert names, f"no metric found in {expr!r}"
        used |= names
    assert used - allowed == set()


def test_recording_rules_used_by_dashboards_exist() -> None:
    used = {
        name for path in DASHBOARDS for expr in exprs(load(path)) for name in metric_names(expr)
    }
    assert {name for name in used if ":" in name} <= recording_rule_names()


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ('sum by (instance) (npu_power_watts{instance=~"$instance"})', {"npu_power_watts"}),
        ("a and on (instance, npu) b == 1 unless ignoring (x) c", {"a", "b", "c"}),
        ('rate(x_total{l="sum(y)"}[5m] offset 1h) > bool 0.5', {"x_total"}),
        ('max without (state) (h{state="ok"} * 0 or h2 * 4) + vector(0)', {"h", "h2"}),
        ('label_values(npu_chip_info{instance=~"$instance"}, npu)', {"npu_chip_info"}),
        ("topk(10, m * on (i) group_left (name) info) / 1e9", {"m", "info"}),
    ],
)
def test_metric_name_tokenizer(expr: str, expected: set[str]) -> None:
    assert metric_names(expr) == expected


def test_captures_panel_lists_every_capture_result() -> None:
    workload = load(ROOT / "grafana" / "dashboards" / "npumon-workload.json")
    panels = [
        p
        for p in all_panels(workload)
        if any("npumon_captures_total" in t["expr"] for t in p.get("targets", []))
    ]
    assert panels
    for panel in panels:
        described = set(re.findall(r"[a-z_]+", panel["description"]))
        assert set(CAPTURE_RESULTS) - described == set(), panel["title"]


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_a_cluster_variable_narrows_the_nodes(path: Path) -> None:
    variables = {v["name"]: v for v in json.loads(path.read_text())["templating"]["list"]}
    cluster = variables["cluster"]
    assert cluster["definition"] == "label_values(npumon_build_info, cluster)"
    assert cluster["includeAll"] and cluster["allValue"] == ".*"  # All: targets without one too
    assert 'cluster=~"$cluster"' in variables["instance"]["definition"]


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_every_selector_uses_the_cluster_and_job_variables(path: Path) -> None:
    """With instance = All (custom value .*), only the selectors' own matchers narrow them."""
    dashboard = load(path)
    queries = [(p["title"], t["expr"]) for p in all_panels(dashboard) for t in p.get("targets", [])]
    queries += [
        (f"${v['name']}", unwrap_label_values(v["query"]["query"]))
        for v in dashboard["templating"]["list"]
        if v["type"] == "query" and v["name"] != "cluster"
    ]
    for where, expr in queries:
        for selector in selectors(expr):
            assert selector.has("cluster", "=~", "$cluster"), (where, expr)
            if where != "$job":
                assert selector.has("job", "=~", "$job"), (where, expr)


_FALLBACK = re.compile(r"\bor\s+(?:on\s*\(\s*\)\s*)?vector\(")


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_no_target_joins_two_metrics_with_or(path: Path) -> None:
    """`a or b` keeps b only where a has no series with the same labels (the name aside): one
    target per metric instead. `or vector(0)` (a fallback for an empty answer) is fine."""
    joined = []
    for panel in all_panels(load(path)):
        for target in panel.get("targets", []):
            text = _FALLBACK.sub("", target["expr"])
            text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
            if re.search(r"\bor\b", text) and len(metric_names(target["expr"])) > 1:
                joined.append(panel["title"])
    assert joined == []


def test_the_job_variable_lists_npumon_jobs_only() -> None:
    for path in DASHBOARDS:
        job = {v["name"]: v for v in load(path)["templating"]["list"]}["job"]
        assert job["definition"] == 'label_values(npumon_build_info{cluster=~"$cluster"}, job)'
        assert job["includeAll"] and "allValue" not in job  # All: every npumon job, not .*


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_drill_down_links_carry_cluster_and_job(path: Path) -> None:
    text = path.read_text()
    links = re.findall(r'"url": "(/d/[^"]*)"', text)
    for url in links:
        assert "${cluster:queryparam}" in url and "${job:queryparam}" in url, url
    if path.stem == "npumon-fleet":
        assert links


def test_selector_finder() -> None:
    found = selectors('sum(rate(a{x="}", y=~"$v"}[5m])) / on (i) b + {__name__="c"} * vector(1)')
    assert [(s.name, s.matchers) for s in found] == [
        ("a", (("x", "=", '"}"'), ("y", "=~", '"$v"'))),
        ("b", ()),
        ("", (("__name__", "=", '"c"'),)),
    ]
    assert found[0].has("y", "=~", "$v") and not found[0].has("x", "=", "{")


_RATE_WINDOW = re.compile(r"\b(?:rate|irate|increase)\((?:[^()\[\]]|\{[^}]*\})*\[([^\]:]+)\]")


def test_node_rates_follow_the_zoom_unless_a_fixed_window_is_the_meaning() -> None:
    """rate()/increase() on the Node dashboard take Grafana's $__rate_interval; a panel that
    keeps a fixed window says so in its description."""
    fixed = []
    for panel in all_panels(load(ROOT / "grafana" / "dashboards" / "npumon-node.json")):
        for target in panel.get("targets", []):
            windows = set(_RATE_WINDOW.findall(target.get("expr", "")))
            if windows - {"$__rate_interval"} and "fixed" not in panel.get("description", ""):
                fixed.append((panel["title"], target["expr"]))
    assert fixed == []
