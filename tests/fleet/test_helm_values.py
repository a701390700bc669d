"""The chart's values for a fleet (issue 20): the rules' job matcher, runbook base, disabled
alerts and extra labels; the NetworkPolicy, affinity, PodMonitor, scrape limits,
runtimeClassName, extra volumes, env with valueFrom, image registry and digest, commonLabels and
the chart's metadata. Rendered with Helm's engine, validated against the Kubernetes and
prometheus-operator schemas (chart_render)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml
from chart_render import (
    CHART,
    K8S_VERSIONS,
    ROOT,
    by_kind,
    container,
    one,
    pod_spec,
    render,
    validate,
)

from tests.helpers.wait import scaled

VALUES = yaml.safe_load((CHART / "values.yaml").read_text())
SCHEMA = yaml.safe_load((CHART / "values.schema.json").read_text())
RULES = yaml.safe_load((ROOT / "config" / "prometheus" / "npumon-rules.yml").read_text())
SOURCE_MATCHER = 'job=~"npumon.*"'
DIGEST = "sha256:" + "0123456789abcdef" * 4
FAULT_CODES = {"name": "fault-codes", "configMap": {"name": "npu-fault-codes"}}
FAULT_CODES_MOUNT = {
    "name": "fault-codes",
    "mountPath": "/etc/npumon/fault-codes",
    "readOnly": True,
}
NODE_NAME = {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
RULE_VALUES = {
    "enabled": True,
    "jobMatcher": 'job="ascend-exporter"',
    "runbookBaseUrl": "https://wiki.example/npu/runbooks",
    "disabled": {"NpuNodeWithoutNpumon": True, "NpumonDown": False},
    "additionalRuleLabels": {"team": "npu-infra", "severity": "page"},
}
# every new value at once, on top of the defaults
FLEET: dict[str, Any] = {
    "image": {"registry": "mirror.example:5000/ascend", "repository": "npumon", "digest": DIGEST},
    "commonLabels": {"team": "npu-infra", "cost-center": "ai"},
    "runtimeClassName": "ascend",
    "env": [NODE_NAME, {"name": "TZ", "value": "UTC"}],
    "extraVolumes": [FAULT_CODES],
    "extraVolumeMounts": [FAULT_CODES_MOUNT],
    "affinity": {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "podAffinityTerm": {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": {"x": "y"}},
                    },
                }
            ]
        }
    },
    "podMonitor": {
        "enabled": True,
        "labels": {"release": "kube-prometheus-stack"},
        "sampleLimit": 10000,
        "targetLimit": 2000,
    },
    "prometheusRule": RULE_VALUES,
}


def rules_of(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for g in one(documents, "PrometheusRule")["spec"]["groups"] for r in g["rules"]]


def source_rules() -> list[dict[str, Any]]:
    return [r for g in RULES["groups"] for r in g["rules"]]


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_every_new_value_renders_valid_manifests(version: str) -> None:
    documents = render(FLEET)
    assert {d["kind"] for d in documents} >= {"DaemonSet", "PodMonitor", "PrometheusRule"}
    for document in documents:
        validate(document, version)
    report = helm.lint(
        CHART, FLEET, strict=True, namespace="npumon", kube_version=f"v{K8S_VERSIONS[0]}"
    )
    assert not [m for m in report["messages"] if m["severity"] >= 2] and not report["errors"]


def _schema_at(schema: dict[str, Any], key: str) -> dict[str, Any] | None:
    if "$ref" in schema:
        schema = SCHEMA["definitions"][schema["$ref"].rsplit("/", 1)[1]]
    found: dict[str, Any] | None = schema.get("properties", {}).get(key)
    return found


def _value_paths(values: dict[str, Any], schema: dict[str, Any], prefix: str) -> list[str]:
    """Dotted keys of values.yaml down to where the schema stops naming properties."""
    missing = []
    for key, value in values.items():
        sub = _schema_at(schema, key)
        if sub is None:
            missing.append(prefix + key)
        elif isinstance(value, dict) and ("properties" in sub or "$ref" in sub):
            missing += _value_paths(value, sub, f"{prefix}{key}.")
    return missing


def test_every_value_is_in_the_schema() -> None:
    assert _value_paths(VALUES, SCHEMA, "") == []
    assert SCHEMA["additionalProperties"] is False


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"prometheusRule": {"jobMatcher": "npumon"}}, "jobMatcher"),
        ({"prometheusRule": {"runbookBaseUrl": "docs/runbooks.md"}}, "runbookBaseUrl"),
        ({"prometheusRule": {"disabled": {"NpumonDown": "yes"}}}, "disabled"),
        ({"image": {"digest": "latest"}}, "digest"),
        ({"env": {"LD_LIBRARY_PATH": "/x"}}, "env"),
        ({"env": [{"name": "A", "value": "1", "valueFrom": {}}]}, "env"),
        ({"serviceMonitor": {"sampleLimit": -1}}, "sampleLimit"),
        ({"podMonitor": {"enabeld": True}}, "enabeld"),
        ({"runtimeClassName": "Ascend Runtime"}, "runtimeClassName"),
        ({"commonLabels": {"team": 1}}, "commonLabels"),
        (
            {"npuNodeAffinity": {"enabled": True, "key": "accelerator", "values": []}},
            "npuNodeAffinity",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_schema_rejects_bad_new_values(values: dict[str, Any], where: str) -> None:
    with pytest.raises(helm.HelmValuesError, match=where):
        render(values)


# --- the rules --------------------------------------------------------------------------------


def test_runbook_urls_are_absolute_under_the_base() -> None:
    alerts = [r for r in rules_of(render({"prometheusRule": {"enabled": True}})) if "alert" in r]
    assert len(alerts) == len([r for r in source_rules() if "alert" in r]) > 20
    base = VALUES["prometheusRule"]["runbookBaseUrl"]
    for alert in alerts:
        assert alert["annotations"]["runbook_url"] == f"{base}#{alert['alert'].lower()}"
    custom = [r for r in rules_of(render({"prometheusRule": RULE_VALUES})) if "alert" in r]
    assert {r["annotations"]["runbook_url"].split("#")[0] for r in custom} == {
        "https://wiki.example/npu/runbooks"
    }


def test_job_matcher_replaces_the_rules_matcher() -> None:
    source = [r["expr"] for r in source_rules()]
    # the matcher stands once, in npumon_target:up, which NpumonDown reads
    assert SOURCE_MATCHER in next(
        r["expr"] for r in source_rules() if r.get("record") == "npumon_target:up"
    )
    assert "npumon_target:up" in next(
        r["expr"] for r in source_rules() if r.get("alert") == "NpumonDown"
    )
    default = rules_of(render({"prometheusRule": {"enabled": True}}))
    assert [r["expr"] for r in default] == source
    rendered = {
        r.get("alert") or r["record"]: r for r in rules_of(render({"prometheusRule": RULE_VALUES}))
    }
    assert not [e for r in rendered.values() if SOURCE_MATCHER in (e := r["expr"])]
    assert rendered["npumon_target:up"]["expr"] == 'up{job="ascend-exporter"}'
    assert sum(r["expr"].count('job="ascend-exporter"') for r in rendered.values()) == sum(
        e.count(SOURCE_MATCHER) for e in source
    ) - rules_matcher_count("NpuNodeWithoutNpumon")


def rules_matcher_count(alert: str) -> int:
    return next(r["expr"].count(SOURCE_MATCHER) for r in source_rules() if r.get("alert") == alert)


def test_disabled_alerts_are_left_out_and_extra_labels_go_on_every_alert() -> None:
    rendered = rules_of(render({"prometheusRule": RULE_VALUES}))
    names = {r.get("alert") for r in rendered}
    assert "NpuNodeWithoutNpumon" not in names and "NpumonDown" in names  # false keeps it
    assert len(rendered) == len(source_rules()) - 1
    for rule in rendered:
        if "alert" in rule:
            assert rule["labels"]["team"] == "npu-infra"
            assert rule["labels"]["severity"] == "page"  # the value wins over the rule's own
        else:
            assert "team" not in rule.get("labels", {})  # recorded series keep their labels
    untouched = rules_of(render({"prometheusRule": {"enabled": True}}))
    assert {r["labels"]["severity"] for r in untouched if "alert" in r} >= {"warning"}


def test_a_disabled_name_that_is_no_alert_fails_naming_the_alerts() -> None:
    with pytest.raises(helm.HelmError, match="NpumonDwn, which is no alert.*NpumonDown"):
        render({"prometheusRule": {"enabled": True, "disabled": {"NpumonDwn": True}}})


TUNED = {
    "enabled": True,
    "alerts": {
        "NpuNetworkPfcStorm": {"threshold": 25000, "for": "2m", "severity": "critical"},
        "NpuThermalThrottling": {"threshold": 0.35},
        "NpuAllocatedChipIdle": {"for": "3h", "severity": "info"},
    },
}
THRESHOLDS = yaml.safe_load(
    (ROOT / "config" / "prometheus" / "npumon-rules.thresholds.yml").read_text()
)


def number_tokens(expr: str, number: str) -> int:
    return len(re.findall(rf"(?:^|[^0-9.a-zA-Z_:]){re.escape(number)}(?=[^0-9.a-zA-Z_:]|$)", expr))


def test_every_tunable_threshold_stands_in_its_alerts_expr() -> None:
    alerts = {r["alert"]: r for r in source_rules() if "alert" in r}
    for name, number in THRESHOLDS.items():
        assert number_tokens(alerts[name]["expr"], number) >= 1, (name, number)


def test_alert_values_set_threshold_for_and_severity(tmp_path: Path) -> None:
    source = {r["alert"]: r for r in source_rules() if "alert" in r}
    rendered = {r["alert"]: r for r in rules_of(render({"prometheusRule": TUNED})) if "alert" in r}
    storm = rendered["NpuNetworkPfcStorm"]
    assert number_tokens(storm["expr"], "25000") == number_tokens(
        source["NpuNetworkPfcStorm"]["expr"], "10000"
    )
    assert number_tokens(storm["expr"], "10000") == 0
    assert (storm["for"], storm["labels"]["severity"]) == ("2m", "critical")
    thermal = rendered["NpuThermalThrottling"]
    assert "[20m]) >= 0.35" in thermal["expr"] and "0.2" not in thermal["expr"]
    assert thermal["for"] == source["NpuThermalThrottling"]["for"]
    idle = rendered["NpuAllocatedChipIdle"]
    assert (idle["expr"], idle["for"], idle["labels"]["severity"]) == (
        source["NpuAllocatedChipIdle"]["expr"],
        "3h",
        "info",
    )
    untouched = {n for n in rendered if n not in TUNED["alerts"]}
    assert all(rendered[n] == source[n] for n in untouched - {"NpumonDown"})
    path = tmp_path / "rules.yml"
    path.write_text(
        yaml.safe_dump(one(render({"prometheusRule": TUNED}), "PrometheusRule")["spec"])
    )
    result = subprocess.run(
        ["promtool", "check", "rules", str(path)],
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_alert_window_sets_every_range_of_its_expr_and_nothing_else() -> None:
    source = {r["alert"]: r for r in source_rules() if "alert" in r}
    tuned = {"enabled": True, "alerts": {"NpuThermalThrottling": {"window": "2m", "for": "12s"}}}
    rendered = {r["alert"]: r for r in rules_of(render({"prometheusRule": tuned})) if "alert" in r}
    thermal = rendered["NpuThermalThrottling"]
    assert "[20m]" in source["NpuThermalThrottling"]["expr"]
    assert thermal["expr"] == source["NpuThermalThrottling"]["expr"].replace("[20m]", "[2m]")
    assert thermal["for"] == "12s"
    assert all(
        rendered[n] == source[n]
        for n in rendered
        if n not in ("NpuThermalThrottling", "NpumonDown")
    )


def test_alert_values_name_alerts_and_thresholds_that_exist() -> None:
    with pytest.raises(helm.HelmError, match="NpuPfcStrom, which is no alert.*NpuNetworkPfcStorm"):
        render({"prometheusRule": {"enabled": True, "alerts": {"NpuPfcStrom": {"for": "1m"}}}})
    with pytest.raises(helm.HelmError, match="NpumonDown.threshold: this alert has no single"):
        render({"prometheusRule": {"enabled": True, "alerts": {"NpumonDown": {"threshold": 1}}}})


def test_rendered_rules_pass_promtool(tmp_path: Path) -> None:
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(one(render(FLEET), "PrometheusRule")["spec"]))
    result = subprocess.run(
        ["promtool", "check", "rules", str(path)],
        capture_output=True,
        text=True,
        timeout=scaled(60),
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(source_rules()) - 1} rules found" in result.stdout


# --- scraping ---------------------------------------------------------------------------------


def test_podmonitor_scrapes_like_the_servicemonitor() -> None:
    pod_monitor = one(render(FLEET), "PodMonitor")
    service_monitor = one(render({"serviceMonitor": {"enabled": True}}), "ServiceMonitor")
    assert pod_monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    spec = pod_monitor["spec"]
    assert spec["podMetricsEndpoints"] == service_monitor["spec"]["endpoints"]
    assert spec["jobLabel"] == "app.kubernetes.io/name"
    pod_labels = one(render(FLEET), "DaemonSet")["spec"]["template"]["metadata"]["labels"]
    assert pod_labels[spec["jobLabel"]] == "npumon"
    assert spec["selector"]["matchLabels"].items() <= pod_labels.items()
    assert (spec["sampleLimit"], spec["targetLimit"]) == (10000, 2000)
    assert "sampleLimit" not in service_monitor["spec"]  # 0: no limit, so none rendered


def test_scrape_limits_on_the_servicemonitor() -> None:
    spec = one(
        render({"serviceMonitor": {"enabled": True, "sampleLimit": 5000, "targetLimit": 1500}}),
        "ServiceMonitor",
    )["spec"]
    assert (spec["sampleLimit"], spec["targetLimit"]) == (5000, 1500)


def test_servicemonitor_and_podmonitor_together_fail() -> None:
    with pytest.raises(helm.HelmError, match="enable one"):
        render({"serviceMonitor": {"enabled": True}, "podMonitor": {"enabled": True}})


def test_network_policy_admits_prometheus_in_any_namespace() -> None:
    # and the `helm test` pod, from the release's namespace (tests/fleet/test_helm_ci.py)
    [peer, _] = one(render(), "NetworkPolicy")["spec"]["ingress"][0]["from"]
    assert peer["namespaceSelector"] == {}  # every namespace
    # the labels the Prometheus Operator v0.93.0 puts on the pods it runs
    # (pkg/prometheus/server, pkg/prometheus/agent), and VictoriaMetrics operator's vmagent
    [expression] = peer["podSelector"]["matchExpressions"]
    assert expression["key"] == "app.kubernetes.io/name"
    assert set(expression["values"]) == {"prometheus", "prometheus-agent", "vmagent"}


def test_plain_manifests_carry_the_release_label_kube_prometheus_stack_selects() -> None:
    documents = [
        d
        for d in yaml.safe_load_all((ROOT / "deploy" / "kubernetes" / "npumon.yaml").read_text())
        if d
    ]
    for kind in ("ServiceMonitor", "PrometheusRule"):
        assert one(documents, kind)["metadata"]["labels"]["release"] == "kube-prometheus-stack"


# --- the pod ----------------------------------------------------------------------------------


def _node_affinity_keys(pod: dict[str, Any]) -> set[str]:
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    return {e["key"] for t in terms["nodeSelectorTerms"] for e in t["matchExpressions"]}


@pytest.mark.parametrize("affinity", [{}, None], ids=["empty", "null"])
def test_empty_or_null_affinity_keeps_the_npu_node_affinity(affinity: Any) -> None:
    default = pod_spec(render())["affinity"]
    assert pod_spec(render({"affinity": affinity}))["affinity"] == default
    assert _node_affinity_keys(pod_spec(render())) == {"accelerator"}


def test_affinity_without_node_affinity_adds_to_it_and_with_one_replaces_it() -> None:
    pod = pod_spec(render(FLEET))
    assert _node_affinity_keys(pod) == {"accelerator"}
    assert pod["affinity"]["podAntiAffinity"] == FLEET["affinity"]["podAntiAffinity"]
    own = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "npu", "operator": "Exists"}]}]
            }
        }
    }
    assert pod_spec(render({"affinity": own}))["affinity"] == own
    assert "affinity" not in pod_spec(render({"npuNodeAffinity": {"enabled": False}}))
    assert "affinity" not in pod_spec(render({"npuNodeAffinity": None}))
    moved = pod_spec(render({"npuNodeAffinity": {"key": "node.kubernetes.io/npu"}}))
    assert _node_affinity_keys(moved) == {"node.kubernetes.io/npu"}


def test_env_list_with_value_from_and_the_driver_library_path() -> None:
    env = container(render(FLEET))["env"]
    assert env[1:] == FLEET["env"]
    assert env[0]["name"] == "LD_LIBRARY_PATH"
    assert env[0]["value"].split(":")[0] == "/usr/local/Ascend/driver/lib64"
    own = container(render({"env": [{"name": "LD_LIBRARY_PATH", "value": "/opt/lib"}]}))["env"]
    assert own == [{"name": "LD_LIBRARY_PATH", "value": "/opt/lib"}]
    moved = container(render({"hostMounts": {"driver": {"mountPath": "/ascend/driver/"}}}))
    assert moved["env"][0]["value"] == (
        "/ascend/driver/lib64:/ascend/driver/lib64/common:/ascend/driver/lib64/driver"
    )
    assert "env" not in container(render({"hostMounts": {"driver": {"enabled": False}}}))


def test_runtime_class_and_extra_volumes() -> None:
    documents = render(FLEET)
    pod = pod_spec(documents)
    assert pod["runtimeClassName"] == "ascend"
    assert "runtimeClassName" not in pod_spec(render())
    assert pod["volumes"][-1] == FAULT_CODES
    assert container(documents)["volumeMounts"][-1] == FAULT_CODES_MOUNT


@pytest.mark.parametrize(
    ("image", "reference"),
    [
        ({}, "npumon:{app}"),
        ({"registry": "mirror.example:5000/", "tag": "0.2.0"}, "mirror.example:5000/npumon:0.2.0"),
        (
            {"registry": "mirror.example:5000/ascend", "digest": DIGEST},
            f"mirror.example:5000/ascend/npumon@{DIGEST}",
        ),
        ({"tag": "0.2.0", "digest": DIGEST}, f"npumon@{DIGEST}"),
    ],
    ids=["default", "registry", "registry-digest", "digest-wins"],
)
def test_image_reference(image: dict[str, Any], reference: str) -> None:
    app = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    assert container(render({"image": image}))["image"] == reference.format(app=app)


def test_common_labels_on_every_object_and_the_pods_but_not_the_selectors() -> None:
    values = {
        **FLEET,
        "commonLabels": {"team": "npu-infra", "app.kubernetes.io/name": "other"},
        "podLabels": {"team": "pod-team"},
        "dashboards": {"labels": {"team": "grafana"}},
    }
    documents = render(values)
    for document in documents:
        labels = document["metadata"]["labels"]
        # never overridden; the `helm test` pod has a name of its own, which no selector matches
        name = "npumon-test" if document["kind"] == "Pod" else "npumon"
        assert labels["app.kubernetes.io/name"] == name, document["kind"]
        assert "team" in labels, document["kind"]
    daemonset = one(documents, "DaemonSet")
    assert daemonset["metadata"]["labels"]["team"] == "npu-infra"
    assert daemonset["spec"]["template"]["metadata"]["labels"]["team"] == "pod-team"
    assert "team" not in daemonset["spec"]["selector"]["matchLabels"]
    dashboards = [
        c for c in by_kind(documents, "ConfigMap") if "grafana_dashboard" in c["metadata"]["labels"]
    ]
    assert {c["metadata"]["labels"]["team"] for c in dashboards} == {"grafana"}


def test_chart_metadata_points_at_the_project() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    home = chart["home"]
    assert home.startswith("https://github.com/") and chart["sources"] == [home]
    owner_repo = home.removeprefix("https://github.com/")
    icon = re.fullmatch(
        rf"https://raw\.githubusercontent\.com/{owner_repo}/main/(.+)", chart["icon"]
    )
    assert icon and (ROOT / icon.group(1)).is_file()
    runbooks = re.fullmatch(rf"{home}/blob/main/(.+)", VALUES["prometheusRule"]["runbookBaseUrl"])
    assert runbooks and (ROOT / runbooks.group(1)).is_file()


NEW_VALUES = (
    "image.registry",
    "global.imageRegistry",
    "namespaceOverride",
    "revisionHistoryLimit",
    "serviceMonitor.podTargetLabels",
    "networkPolicy.scraperSelector",
    "image.digest",
    "commonLabels",
    "env",
    "extraVolumes",
    "extraVolumeMounts",
    "npuNodeAffinity.enabled",
    "affinity",
    "runtimeClassName",
    "serviceMonitor.sampleLimit",
    "serviceMonitor.targetLimit",
    "podMonitor",
    "prometheusRule.jobMatcher",
    "prometheusRule.runbookBaseUrl",
    "prometheusRule.disabled",
    "prometheusRule.additionalRuleLabels",
)


def test_the_chart_readme_documents_every_top_level_and_new_value() -> None:
    readme = (CHART / "README.md").read_text()
    for key in [*VALUES, *NEW_VALUES]:
        head, _, last = key.rpartition(".")
        # `a.b`, or `a.x`, `.b` in one row
        short = bool(head) and f"`{head}." in readme and f"`.{last}`" in readme
        assert f"`{key}" in readme or short, key


NULLABLE = (
    "commonLabels",
    "env",
    "extraVolumes",
    "extraVolumeMounts",
    "npuNodeAffinity",
    "affinity",
    "runtimeClassName",
    "image.registry",
    "image.digest",
    "prometheusRule.disabled",
    "prometheusRule.additionalRuleLabels",
    "prometheusRule.jobMatcher",
    "serviceMonitor.sampleLimit",
    "podMonitor.targetLimit",
)


@pytest.mark.parametrize("key", NULLABLE)
def test_a_null_value_renders_like_its_empty_default(key: str) -> None:
    """`--set key=null` (or `key: null` in a values file) deletes the key in Helm."""
    head, _, last = key.rpartition(".")
    nulled: dict[str, Any] = {last: None}
    if head:
        nulled = {head: nulled}
    enabled = {"prometheusRule": {"enabled": True}, "podMonitor": {"enabled": True}}
    for section, values in enabled.items():
        nulled[section] = {**values, **nulled.get(section, {})}
    documents = render(nulled)
    for document in documents:
        validate(document, K8S_VERSIONS[-1])
    assert rules_of(documents) == rules_of(render(enabled))


def test_an_empty_runbook_base_fails_saying_what_to_set() -> None:
    with pytest.raises(helm.HelmError, match="runbookBaseUrl is empty"):
        render({"prometheusRule": {"enabled": True, "runbookBaseUrl": None}})
