"""The Helm chart deploy/helm/npumon, with Helm's own engine (helm-python-sdk: Helm v4 as a
library, no helm binary): lint, render, the rendered core manifests against Kubernetes' schemas
(kubernetes-validate), the ServiceMonitor, PodMonitor and PrometheusRule against the
prometheus-operator CRD schemas (tests/fixtures/crds, jsonschema), and the chart's copies of the
rules and dashboards against the repository's files. After changing the rules, a dashboard or
the chart: `make generate`.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import helm_python as helm
import jsonschema
import kubernetes_validate
import pytest
import yaml
from chart_render import (
    CHART,
    CRD_KINDS,
    K8S_VERSIONS,
    REGENERATE,
    ROOT,
    by_kind,
    container,
    generator,
    one,
    pod_spec,
    render,
    validate,
    validate_crd,
)

from npumon.daemon.config import parse_config
from npumon.exporters.web.webconfig import WebConfig, parse_web_config

BCRYPT = "$2b$10$" + "N" * 53
PROMETHEUS_SELECTOR = [
    {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "obs"}},
        "podSelector": {"matchLabels": {"app": "prometheus"}},
    }
]
# the `helm test` pod (templates/tests/scrape.yaml), admitted from the release's namespace
HELM_TEST_PEER = {
    "podSelector": {
        "matchLabels": {
            "app.kubernetes.io/name": "npumon-test",
            "app.kubernetes.io/instance": "npumon",
        }
    }
}

VALUE_SETS: dict[str, dict[str, Any]] = {
    "default": {},
    "kube-prometheus-stack": {
        "serviceMonitor": {
            "enabled": True,
            "labels": {"release": "kube-prometheus-stack"},
            "metricRelabelings": [
                {"action": "drop", "regex": "go_.*", "sourceLabels": ["__name__"]}
            ],
        },
        "prometheusRule": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
        "dashboards": {"namespace": "monitoring", "annotations": {"grafana_folder": "NPU"}},
        "networkPolicy": {"from": PROMETHEUS_SELECTOR},
    },
    "umbrella": {
        "namespaceOverride": "npu-monitoring",
        "global": {"imageRegistry": "mirror.example:5000"},
        "revisionHistoryLimit": 3,
        "serviceMonitor": {"enabled": True, "podTargetLabels": ["team"]},
        "prometheusRule": {"enabled": True},
    },
    "tls-basic-auth": {
        "web": {
            "tls": {"enabled": True, "secretName": "npumon-tls", "minVersion": "TLS13"},
            "basicAuthUsers": {"prometheus": BCRYPT},
            "headers": {"Strict-Transport-Security": "max-age=31536000"},
        },
        "serviceMonitor": {
            "enabled": True,
            "basicAuth": {
                "username": {"name": "npumon-scrape", "key": "username"},
                "password": {"name": "npumon-scrape", "key": "password"},
            },
            "tlsConfig": {
                "ca": {"secret": {"name": "npumon-tls", "key": "ca.crt"}},
                "serverName": "npumon",
            },
        },
    },
    "mtls": {
        "web": {
            "tls": {
                "enabled": True,
                "secretName": "npumon-tls",
                "clientAuthType": "RequireAndVerifyClientCert",
            }
        },
        "serviceMonitor": {"enabled": True},
    },
    "existing-secret": {"web": {"existingSecret": "my-web-config", "tls": {"enabled": True}}},
    "minimal": {
        "serviceAccount": {"create": False},
        "networkPolicy": {"enabled": False},
        "dashboards": {"enabled": False},
        "priorityClassName": "",
        "tolerations": [],
        "npuNodeAffinity": {"enabled": False},
        "env": [],
        "updateStrategy": {},
        "hostMounts": {
            "podResources": {"enabled": False},
            "npuLog": {"enabled": False},
            "ascendInstallInfo": {"enabled": False},
        },
    },
    "extras": {
        "image": {"repository": "registry.example/npumon", "tag": "0.1.1"},
        "imagePullSecrets": [{"name": "pull"}],
        "nodeSelector": {"npu": "yes"},
        "podAnnotations": {"a": "b"},
        "podLabels": {"team": "infra"},
        "extraArgs": ["--web.max-requests=8"],
        "hostMounts": {"hccnTool": {"enabled": True}},
        "extraHostMounts": [
            {
                "name": "hccn-conf",
                "hostPath": "/etc/hccn.conf",
                "mountPath": "/etc/hccn.conf",
                "type": "File",
                "readOnly": True,
            }
        ],
        "config": {"profiling": {"enabled": True}, "logging": {"level": "debug"}},
        "networkPolicy": {"from": [], "egress": [{"ports": [{"port": 53, "protocol": "UDP"}]}]},
    },
    "ascend-runtime": {"deviceAccess": "ascendRuntime", "runtimeClassName": "ascend"},
    "ascend-runtime-profiling": {
        "deviceAccess": "ascendRuntime",
        "runtimeClassName": "ascend",
        "config": {"profiling": {"enabled": True}},
    },
}


# --- lint ----------------------------------------------------------------------------------


@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_helm_lint_strict_is_clean(values: dict[str, Any]) -> None:
    report = helm.lint(
        CHART, values, strict=True, namespace="npumon", kube_version=f"v{K8S_VERSIONS[0]}"
    )
    problems = [m for m in report["messages"] if m["severity"] >= 2]  # 2 warning, 3 error
    assert report["total_charts_linted"] == 1
    assert not problems and not report["errors"], report


def test_helm_lint_reports_a_broken_template(tmp_path: Path) -> None:
    broken = tmp_path / "npumon"
    shutil.copytree(CHART, broken)
    with (broken / "templates" / "service.yaml").open("a") as f:
        f.write("  {{ .Values.web.nothing.here }}\n")
    report = helm.lint(broken, strict=True)
    assert report["errors"], report


def test_helm_lint_and_render_check_values_against_the_schema() -> None:
    typo = {"serviceMonitor": {"enabeld": True}}
    report = helm.lint(CHART, typo, strict=True)
    assert any("enabeld" in e for e in report["errors"]), report
    with pytest.raises(helm.HelmValuesError, match="enabeld"):
        render(typo)
    with pytest.raises(helm.HelmValuesError):
        render({"web": {"basicAuthUsers": {"prometheus": "plain-text-password"}}})
    with pytest.raises(helm.HelmValuesError):
        render({"config": {"web": {"listen_address": ":1"}}})  # web.* comes from `web:`


def test_tls_without_a_certificate_secret_does_not_render() -> None:
    with pytest.raises(helm.HelmError, match="web.tls.secretName"):
        render({"web": {"tls": {"enabled": True}}})


# --- the rendered manifests against their schemas --------------------------------------------


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_rendered_manifests_validate(values: dict[str, Any], version: str) -> None:
    documents = render(values)
    assert documents
    for document in documents:
        validate(document, version)


def test_crd_schemas_catch_mistakes() -> None:
    documents = render(VALUE_SETS["kube-prometheus-stack"])
    rule = copy.deepcopy(one(documents, "PrometheusRule"))
    rule["spec"]["groups"][0]["interval"] = "five minutes"
    with pytest.raises(jsonschema.ValidationError):
        validate_crd(rule)
    monitor = copy.deepcopy(one(documents, "ServiceMonitor"))
    monitor["spec"]["endpoints"][0]["scrapeTimout"] = "10s"
    with pytest.raises(jsonschema.ValidationError, match="scrapeTimout"):
        validate_crd(monitor)
    daemonset = copy.deepcopy(one(documents, "DaemonSet"))
    daemonset["spec"]["template"]["spec"]["hostPid"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(daemonset, K8S_VERSIONS[-1], strict=True)


# --- in sync with the repository -------------------------------------------------------------


def test_chart_copies_of_rules_and_dashboards_are_in_sync() -> None:
    gen = generator()
    stale = [
        path.relative_to(ROOT).as_posix()
        for path, content in gen.chart_files().items()
        if not path.exists() or path.read_bytes() != content
    ]
    stale += [path.relative_to(ROOT).as_posix() for path in gen.stale_copies()]
    assert not stale, f"the chart's copies differ from the repository's: {stale}; {REGENERATE}"


def test_plain_manifests_are_the_rendered_chart() -> None:
    plain = ROOT / "deploy" / "kubernetes" / "npumon.yaml"
    assert plain.read_text() == generator().render_plain(), (
        f"deploy/kubernetes/npumon.yaml is not what the chart renders; {REGENERATE}"
    )


def test_generate_check_passes() -> None:
    assert generator().main(["--check"]) == 0, REGENERATE


def test_prometheusrule_carries_the_rules_file() -> None:
    """With the default values the groups are the rules file's, but for runbook_url, which is
    the chart's runbookBaseUrl and the file's anchor."""
    rule = one(render({"prometheusRule": {"enabled": True}}), "PrometheusRule")
    rules = yaml.safe_load((ROOT / "config" / "prometheus" / "npumon-rules.yml").read_text())
    base = yaml.safe_load((CHART / "values.yaml").read_text())["prometheusRule"]["runbookBaseUrl"]
    for group in rules["groups"]:
        for each in group["rules"]:
            if "runbook_url" in each.get("annotations", {}):
                anchor = each["annotations"]["runbook_url"].rsplit("#", 1)[1]
                each["annotations"]["runbook_url"] = f"{base}#{anchor}"
    assert rule["spec"] == {"groups": rules["groups"]}, REGENERATE


def test_one_dashboard_configmap_per_dashboard_for_the_sidecar() -> None:
    configmaps = [
        c
        for c in by_kind(render(), "ConfigMap")
        if c["metadata"]["labels"].get("grafana_dashboard") == "1"
    ]
    dashboards = {p.name: p for p in (ROOT / "grafana" / "dashboards").glob("*.json")}
    assert len(configmaps) == len(dashboards) >= 3
    carried = {name: text for c in configmaps for name, text in c["data"].items()}
    assert set(carried) == set(dashboards), REGENERATE
    for name, text in carried.items():
        assert json.loads(text) == json.loads(dashboards[name].read_text()), REGENERATE
    moved = render({"dashboards": {"namespace": "monitoring", "labelValue": "yes"}})
    for c in by_kind(moved, "ConfigMap"):
        if "grafana_dashboard" in c["metadata"]["labels"]:
            assert c["metadata"]["namespace"] == "monitoring"
            assert c["metadata"]["labels"]["grafana_dashboard"] == "yes"
    assert not [
        c
        for c in by_kind(render({"dashboards": {"enabled": False}}), "ConfigMap")
        if "grafana_dashboard" in c["metadata"]["labels"]
    ]


# --- what the manifests say ------------------------------------------------------------------


def test_operator_resources_are_switched_by_their_values() -> None:
    kinds = {d["kind"] for d in render()}
    assert not kinds & set(CRD_KINDS)  # the CRDs may be missing: off unless asked for
    kinds = {d["kind"] for d in render(VALUE_SETS["kube-prometheus-stack"])}
    assert {"ServiceMonitor", "PrometheusRule"} <= kinds and "PodMonitor" not in kinds
    kinds = {d["kind"] for d in render({"podMonitor": {"enabled": True}})}
    assert kinds & set(CRD_KINDS) == {"PodMonitor"}


def test_kube_prometheus_stack_release_label_and_job_name() -> None:
    documents = render(VALUE_SETS["kube-prometheus-stack"], name="npu-monitoring")
    monitor = one(documents, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert one(documents, "PrometheusRule")["metadata"]["labels"]["release"] == (
        "kube-prometheus-stack"
    )
    # job = the Service's app.kubernetes.io/name whatever the release name, so the rules'
    # up{job=~"npumon.*"} and the dashboards keep matching
    service = one(documents, "Service")
    assert service["metadata"]["name"] == "npu-monitoring-npumon"
    assert service["metadata"]["labels"][monitor["spec"]["jobLabel"]] == "npumon"
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["npumon"]}
    endpoint = monitor["spec"]["endpoints"][0]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["scheme"] == "http"
    assert endpoint["relabelings"][0] == {
        "sourceLabels": ["__meta_kubernetes_pod_node_name"],
        "targetLabel": "instance",
    }
    assert endpoint["metricRelabelings"][0]["action"] == "drop"


def test_service_is_headless_and_selects_the_pods() -> None:
    documents = render()
    service = one(documents, "Service")
    assert service["spec"]["clusterIP"] == "None"
    labels = one(documents, "DaemonSet")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["ports"][0]["targetPort"] == container(documents)["ports"][0]["name"]


def test_daemonset_mounts_what_npu_smi_needs() -> None:
    documents = render()
    pod = pod_spec(documents)
    host_paths = {
        v["hostPath"]["path"]: v["hostPath"].get("type") for v in pod["volumes"] if "hostPath" in v
    }
    assert {
        "/usr/local/Ascend/driver",
        "/usr/local/bin/npu-smi",
        "/dev",
        "/var/lib/kubelet/pod-resources",
        "/etc/ascend_install.info",
    } <= set(host_paths)
    assert host_paths["/usr/local/bin/npu-smi"] == "File"
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    keys = {e["key"] for t in terms["nodeSelectorTerms"] for e in t["matchExpressions"]}
    assert keys == {"accelerator"}
    assert pod["tolerations"] == [{"operator": "Exists"}]
    npumon = container(documents)
    assert {"requests", "limits"} <= set(npumon["resources"])
    assert npumon["ports"][0]["containerPort"] == 9732
    env = {e["name"]: e["value"] for e in npumon["env"]}
    assert env["LD_LIBRARY_PATH"].startswith("/usr/local/Ascend/driver/lib64")


def test_host_tools_are_mounted_read_only() -> None:
    documents = render(VALUE_SETS["extras"])
    volumes = {v["name"]: v for v in pod_spec(documents)["volumes"]}
    mounts = {m["mountPath"]: m for m in container(documents)["volumeMounts"]}
    read_only = {
        "/usr/local/Ascend/driver",
        "/usr/local/bin/npu-smi",
        "/etc/ascend_install.info",
        "/usr/local/bin/hccn_tool",
        "/var/lib/kubelet/pod-resources",
        "/etc/hccn.conf",
        "/etc/npumon",
    }
    for path in read_only:
        assert mounts[path]["readOnly"] is True, path
    writable = {m for m, v in mounts.items() if not v.get("readOnly")}
    # the state directory, /tmp, /dev (device nodes are opened read-write), npu-smi's logs
    assert writable == {"/var/lib/npumon", "/tmp", "/dev", "/var/log/npu"}
    assert volumes["hccn-tool"]["hostPath"] == {
        "path": "/usr/local/Ascend/driver/tools/hccn_tool",
        "type": "File",
    }
    assert "hccn-tool" not in {v["name"] for v in pod_spec(render())["volumes"]}


def test_pod_logs_are_mounted_read_only_only_for_the_step_log() -> None:
    def mounts(config: dict[str, Any]) -> dict[str, Any]:
        documents = render({"config": config})
        volumes = {v["name"]: v for v in pod_spec(documents)["volumes"]}
        found = {m["name"]: m for m in container(documents)["volumeMounts"]}
        return {"volume": volumes.get("pod-logs"), "mount": found.get("pod-logs")}

    on = {"enabled": True, "step_log": {"enabled": True}}
    assert mounts({"profiling": on}) == {
        "volume": {"name": "pod-logs", "hostPath": {"path": "/var/log/pods", "type": "Directory"}},
        "mount": {"name": "pod-logs", "mountPath": "/var/log/pods", "readOnly": True},
    }
    elsewhere = {"enabled": True, "step_log": {"enabled": True, "root": "/data/pods"}}
    assert mounts({"profiling": elsewhere})["mount"]["mountPath"] == "/data/pods"
    off = {"profiling": {"enabled": True, "step_log": {"enabled": False}}}
    captures_off = {"profiling": {"enabled": False, "step_log": {"enabled": True}}}
    for config in ({}, off, captures_off):
        assert mounts(config) == {"volume": None, "mount": None}


def test_pod_hardening() -> None:
    documents = render()
    pod = pod_spec(documents)
    assert pod["automountServiceAccountToken"] is False
    account = one(documents, "ServiceAccount")
    assert account["automountServiceAccountToken"] is False
    assert pod["serviceAccountName"] == account["metadata"]["name"]
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["hostPID"] is True and "hostNetwork" not in pod and "hostIPC" not in pod
    security = container(documents)["securityContext"]
    # privileged: the davinci devices reach the device cgroup no other way (docs/privileges.md)
    assert security == {"privileged": True, "runAsUser": 0, "readOnlyRootFilesystem": True}
    assert pod["priorityClassName"] == "system-node-critical"
    no_account = pod_spec(render(VALUE_SETS["minimal"]))
    assert no_account["serviceAccountName"] == "default"
    assert no_account["automountServiceAccountToken"] is False


@pytest.mark.parametrize(
    ("values", "added"),
    [
        (VALUE_SETS["ascend-runtime"], ["DAC_OVERRIDE"]),
        (VALUE_SETS["ascend-runtime-profiling"], ["DAC_OVERRIDE", "DAC_READ_SEARCH", "SYS_PTRACE"]),
    ],
    ids=["profiling-off", "profiling-on"],
)
def test_ascend_runtime_mode_is_unprivileged_with_the_capabilities_of_privileges_md(
    values: dict[str, Any], added: list[str]
) -> None:
    """docs/privileges.md's table: DAC_OVERRIDE for the HwHiAiUser-owned devices and the state
    directory; SYS_PTRACE (other jobs' environ, msprof attach) and DAC_READ_SEARCH (private
    profile directories) for profiling; root for the kubelet's root-only socket."""
    documents = render(values)
    for version in K8S_VERSIONS:
        for document in documents:
            validate(document, version)
    npumon = container(documents)
    assert npumon["securityContext"] == {
        "privileged": False,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"], "add": added},
        "runAsUser": 0,
        "readOnlyRootFilesystem": True,
    }
    pod = pod_spec(documents)
    assert pod["runtimeClassName"] == "ascend"
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    # the runtime puts the devices into the container: the host's /dev is not mounted over them
    host_paths = {v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    assert "/dev" not in host_paths
    assert "/dev" not in {m["mountPath"] for m in npumon["volumeMounts"]}
    assert {"/usr/local/Ascend/driver", "/var/lib/kubelet/pod-resources"} <= host_paths
    env = {e["name"]: e["value"] for e in npumon["env"]}
    assert env["ASCEND_VISIBLE_DEVICES"] == "0-7"
    assert env["LD_LIBRARY_PATH"].startswith("/usr/local/Ascend/driver/lib64")
    default = container(render())
    assert "ASCEND_VISIBLE_DEVICES" not in {e["name"] for e in default["env"]}
    assert "/dev" in {m["mountPath"] for m in default["volumeMounts"]}


def test_ascend_visible_devices_is_a_value_and_env_naming_it_wins() -> None:
    ascend = {"deviceAccess": "ascendRuntime"}
    env = container(render({**ascend, "ascendVisibleDevices": "0-15"}))["env"]
    assert {"name": "ASCEND_VISIBLE_DEVICES", "value": "0-15"} in env
    own = [{"name": "ASCEND_VISIBLE_DEVICES", "value": "Ascend910-0,Ascend910-1"}]
    env = container(render({**ascend, "env": own}))["env"]
    assert [e for e in env if e["name"] == "ASCEND_VISIBLE_DEVICES"] == own


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (
            {"securityContext": {"privileged": False, "capabilities": {"add": ["SYS_PTRACE"]}}},
            {
                "privileged": False,
                "capabilities": {"add": ["SYS_PTRACE"]},
                "runAsUser": 0,
                "readOnlyRootFilesystem": True,
            },
        ),
        (
            {"securityContext": {"privileged": None}},
            {"runAsUser": 0, "readOnlyRootFilesystem": True},
        ),
        (
            {
                "deviceAccess": "ascendRuntime",
                "securityContext": {
                    "readOnlyRootFilesystem": False,
                    "capabilities": {"add": ["DAC_OVERRIDE", "SYS_PTRACE"]},
                },
            },
            {
                "privileged": False,
                "allowPrivilegeEscalation": False,
                "capabilities": {"drop": ["ALL"], "add": ["DAC_OVERRIDE", "SYS_PTRACE"]},
                "runAsUser": 0,
                "readOnlyRootFilesystem": False,
            },
        ),
    ],
    ids=["privileged-overridden", "privileged-removed", "ascend-runtime-overridden"],
)
def test_the_security_context_value_is_merged_over_the_modes_and_wins(
    values: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert container(render(values))["securityContext"] == expected


def test_schema_refuses_an_unknown_device_access_naming_the_choices() -> None:
    with pytest.raises(helm.HelmValuesError) as refused:
        render({"deviceAccess": "unprivileged"})
    assert "deviceAccess" in str(refused.value)
    assert "'privileged', 'ascendRuntime'" in str(refused.value)
    report = helm.lint(CHART, {"deviceAccess": "Privileged"}, strict=True)
    assert any("deviceAccess" in e for e in report["errors"]), report
    # "all" is not a format the Ascend Docker Runtime is documented to accept
    with pytest.raises(helm.HelmValuesError, match="ascendVisibleDevices"):
        render({"deviceAccess": "ascendRuntime", "ascendVisibleDevices": "all"})


@pytest.mark.parametrize(
    ("values", "scheme"),
    [
        ({}, "HTTP"),
        (VALUE_SETS["tls-basic-auth"], "HTTPS"),
        (VALUE_SETS["existing-secret"], "HTTPS"),
        ({"web": {"basicAuthUsers": {"prometheus": BCRYPT}}}, "HTTP"),
    ],
    ids=["plain", "tls-basic-auth", "existing-secret", "basic-auth"],
)
def test_probes_use_the_unauthenticated_liveness_path(values: dict[str, Any], scheme: str) -> None:
    npumon = container(render(values))
    for probe in ("livenessProbe", "readinessProbe"):
        assert npumon[probe]["httpGet"] == {
            "path": "/-/healthy",
            "port": "metrics",
            "scheme": scheme,
        }
        assert npumon[probe]["timeoutSeconds"] == 5


def test_probes_fall_back_to_tcp_when_a_client_certificate_is_required() -> None:
    documents = render(VALUE_SETS["mtls"])
    npumon = container(documents)
    for probe in ("livenessProbe", "readinessProbe"):
        assert npumon[probe]["tcpSocket"] == {"port": "metrics"}
        assert "httpGet" not in npumon[probe]
    assert one(documents, "ServiceMonitor")["spec"]["endpoints"][0]["scheme"] == "https"


def _web_config(documents: list[dict[str, Any]]) -> tuple[Any, str]:
    """The generated web-config.yml and the path npumon is told to read it from."""
    secret = one(documents, "Secret")
    args = container(documents)["args"]
    flag = next(a for a in args if a.startswith("--web.config.file="))
    return yaml.safe_load(secret["stringData"]["web-config.yml"]), flag.split("=", 1)[1]


def test_web_config_secret_for_tls_and_basic_auth() -> None:
    documents = render(VALUE_SETS["tls-basic-auth"])
    config, path = _web_config(documents)
    # everything npumon's own loader checks but the certificate files' presence
    parsed = WebConfig.model_validate(config)
    assert parsed.basic_auth_users == {"prometheus": BCRYPT}
    tls = parsed.tls_server_config
    assert tls is not None and tls.min_version == "TLS13"
    mounts = {m["name"]: m["mountPath"] for m in container(documents)["volumeMounts"]}
    volumes = {v["name"]: v for v in pod_spec(documents)["volumes"]}
    assert Path(tls.cert_file).parent == Path(tls.key_file).parent == Path(mounts["tls"])
    assert volumes["tls"]["secret"]["secretName"] == "npumon-tls"
    assert Path(path).parent == Path(mounts["web-config"])
    assert (
        volumes["web-config"]["secret"]["secretName"]
        == one(documents, "Secret")["metadata"]["name"]
    )
    assert one(documents, "ServiceMonitor")["spec"]["endpoints"][0]["scheme"] == "https"


def test_web_config_for_basic_auth_alone_loads_in_npumon(tmp_path: Path) -> None:
    config, _ = _web_config(render({"web": {"basicAuthUsers": {"prometheus": BCRYPT}}}))
    assert parse_web_config(config, base=tmp_path).basic_auth_users == {"prometheus": BCRYPT}
    mtls, _ = _web_config(render(VALUE_SETS["mtls"]))
    assert mtls["tls_server_config"]["client_ca_file"].endswith("/ca.crt")


def test_no_web_config_without_tls_or_auth_and_none_generated_for_an_existing_secret() -> None:
    plain = render()
    assert not by_kind(plain, "Secret")
    assert not [a for a in container(plain)["args"] if a.startswith("--web.config.file")]
    existing = render(VALUE_SETS["existing-secret"])
    assert not by_kind(existing, "Secret")
    volumes = {v["name"]: v for v in pod_spec(existing)["volumes"]}
    assert volumes["web-config"]["secret"]["secretName"] == "my-web-config"
    assert "tls" not in volumes


@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_rendered_npumon_config_is_valid_and_matches_the_mounts(values: dict[str, Any]) -> None:
    documents = render(values)
    configmap = next(c for c in by_kind(documents, "ConfigMap") if "npumon.yaml" in c["data"])
    config = parse_config(yaml.safe_load(configmap["data"]["npumon.yaml"]))
    npumon = container(documents)
    mounts = {m["mountPath"] for m in npumon["volumeMounts"]}
    assert config.npu_smi.command[0] in mounts
    assert str(config.state_directory) in mounts
    assert "--config=/etc/npumon/npumon.yaml" in npumon["args"]
    assert npumon["args"][0] == "run"


def test_a_config_change_rolls_the_pods() -> None:
    def annotations(values: dict[str, Any]) -> dict[str, str]:
        metadata = one(render(values), "DaemonSet")["spec"]["template"]["metadata"]
        result: dict[str, str] = metadata["annotations"]
        return result

    base = annotations({})
    assert annotations({}) == base
    changed = annotations({"config": {"logging": {"level": "debug"}}})
    assert changed["checksum/config"] != base["checksum/config"]
    assert changed["checksum/web-config"] == base["checksum/web-config"]
    auth = annotations({"web": {"basicAuthUsers": {"prometheus": BCRYPT}}})
    assert auth["checksum/web-config"] != base["checksum/web-config"]
    assert auth["checksum/config"] == base["checksum/config"]


def test_network_policy_admits_prometheus_to_the_metrics_port_only() -> None:
    documents = render()
    policy = one(documents, "NetworkPolicy")["spec"]
    labels = one(documents, "DaemonSet")["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"].items() <= labels.items()
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    assert policy["egress"] == []  # npumon makes no network calls, not even DNS
    [rule] = policy["ingress"]
    assert rule["ports"] == [{"port": "metrics", "protocol": "TCP"}]
    # Prometheus pods in any namespace: the Prometheus Operator labels its servers and agents
    # so (kube-prometheus-stack's among them), wherever they run
    assert rule["from"] == [
        {
            "namespaceSelector": {},
            "podSelector": {
                "matchExpressions": [
                    {
                        "key": "app.kubernetes.io/name",
                        "operator": "In",
                        "values": ["prometheus", "prometheus-agent", "vmagent"],
                    }
                ]
            },
        },
        HELM_TEST_PEER,
    ]
    assert container(documents)["ports"][0]["name"] == "metrics"
    custom = one(render(VALUE_SETS["kube-prometheus-stack"]), "NetworkPolicy")["spec"]
    assert custom["ingress"][0]["from"] == [*PROMETHEUS_SELECTOR, HELM_TEST_PEER]
    # any other scraper, in any namespace, by a label its pods carry
    alloy = {"networkPolicy": {"scraperSelector": {"app.kubernetes.io/name": "alloy"}}}
    [_, admitted, _] = one(render(alloy), "NetworkPolicy")["spec"]["ingress"][0]["from"]
    assert admitted == {
        "namespaceSelector": {},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "alloy"}},
    }
    anyone = one(render(VALUE_SETS["extras"]), "NetworkPolicy")["spec"]
    assert "from" not in anyone["ingress"][0]  # from: [] -> any source, still that port only
    assert anyone["egress"] == [{"ports": [{"port": 53, "protocol": "UDP"}]}]
    assert not by_kind(render(VALUE_SETS["minimal"]), "NetworkPolicy")


def test_umbrella_chart_values_are_honoured() -> None:
    """namespaceOverride moves every namespaced object, global.imageRegistry is the registry
    unless image.registry names one, revisionHistoryLimit and podTargetLabels reach their
    objects."""
    documents = render(VALUE_SETS["umbrella"])
    namespaces = {d["kind"]: d["metadata"].get("namespace") for d in documents}
    assert set(namespaces.values()) == {"npu-monitoring"}, namespaces
    monitor = one(documents, "ServiceMonitor")["spec"]
    assert monitor["namespaceSelector"] == {"matchNames": ["npu-monitoring"]}
    assert monitor["podTargetLabels"] == ["team"]
    assert container(documents)["image"].startswith("mirror.example:5000/npumon:")
    assert one(documents, "DaemonSet")["spec"]["revisionHistoryLimit"] == 3
    assert one(render(), "DaemonSet")["spec"]["revisionHistoryLimit"] == 10
    assert "podTargetLabels" not in one(render(VALUE_SETS["mtls"]), "ServiceMonitor")["spec"]
    own = render({**VALUE_SETS["umbrella"], "image": {"registry": "own.example"}})
    assert container(own)["image"].startswith("own.example/npumon:")
    pods = render({"podMonitor": {"enabled": True, "podTargetLabels": ["team"]}})
    assert one(pods, "PodMonitor")["spec"]["podTargetLabels"] == ["team"]


def test_image_and_scheduling_values() -> None:
    documents = render(VALUE_SETS["extras"])
    pod = pod_spec(documents)
    # (the set enables profiling: the image's profiling variant, test_helm_image_variant.py)
    assert container(documents)["image"] == "registry.example/npumon:0.1.1-profiling"
    assert (
        container(render())["image"]
        == "npumon:" + yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    )
    assert pod["imagePullSecrets"] == [{"name": "pull"}]
    assert pod["nodeSelector"] == {"npu": "yes"}
    metadata = one(documents, "DaemonSet")["spec"]["template"]["metadata"]
    assert metadata["annotations"]["a"] == "b" and metadata["labels"]["team"] == "infra"
    assert container(documents)["args"][-1] == "--web.max-requests=8"
    minimal = pod_spec(render(VALUE_SETS["minimal"]))
    assert "priorityClassName" not in minimal and "tolerations" not in minimal


@pytest.mark.parametrize("doc", ["README.md", "deploy/README.md", "deploy/helm/npumon/README.md"])
def test_documented_install_command_renders(doc: str) -> None:
    """The `helm install` command of each README, its --set flags parsed by Helm's strvals."""
    text = (ROOT / doc).read_text().replace("\\\n", " ")
    [command] = [
        line.split()
        for line in text.splitlines()
        if line.startswith("helm install npumon deploy/helm/npumon")
    ]
    assert command[command.index("-n") + 1] == "npumon" and "--create-namespace" in command
    values: dict[str, Any] = {}
    for flag, expression in zip(command, command[1:], strict=False):
        if flag == "--set":
            for key, value in helm.parse_set_string(expression).items():
                values.setdefault(key, {}).update(value)
    monitor = one(render(values), "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_web_values_reach_npumon_as_flags_it_parses() -> None:
    from npumon.daemon.cli import _parser, _with_flags

    values = {"web": {"maxRequests": 12, "maxConnections": 300}}
    args = _parser().parse_args(container(render(values))["args"])
    web = _with_flags(parse_config({}), args).web
    assert (web.max_requests, web.max_connections) == (12, 300)
    default = _parser().parse_args(container(render({}))["args"])
    assert _with_flags(parse_config({}), default).web.max_connections == 1024
