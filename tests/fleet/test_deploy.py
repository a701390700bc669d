"""Deployment files: YAML syntax, files the compose file mounts, generated manifests in sync."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
BIN = Path(sys.executable).parent
YAML_FILES = sorted(
    [*DEPLOY.rglob("*.yaml"), *DEPLOY.rglob("*.yml"), *(ROOT / "grafana").rglob("*.yml"),
     *(ROOT / "config" / "prometheus").glob("*.yml")]
)
SIM_CONFIGS = sorted((DEPLOY / "compose").glob("sim-*.yaml"))


def run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=60,
                          check=False, cwd=ROOT)


def compose() -> dict[str, Any]:
    data = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_yaml_parses(path: Path) -> None:
    documents = [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    assert documents


def test_compose_mounts_files_that_exist() -> None:
    services = compose()["services"]
    sources = [volume.split(":")[0] for service in services.values()
               for volume in service.get("volumes", []) if volume.startswith(".")]
    assert len(sources) >= 6
    for source in sources:
        assert (DEPLOY / source).exists(), source
    for service in services.values():
        if "build" in service:
            assert (DEPLOY / service["build"]["context"]).is_dir()


def test_compose_runs_three_families_on_their_configs() -> None:
    services = compose()["services"]
    nodes = {name: s for name, s in services.items() if s.get("image") == "npumon:dev"}
    assert len(nodes) == 3
    configs = set()
    for service in nodes.values():
        assert service["command"][:2] == ["run", "--config"]
        mounted = {v.split(":")[1]: v.split(":")[0] for v in service["volumes"]}
        configs.add(mounted[service["command"][2]])
    assert configs == {f"./compose/{path.name}" for path in SIM_CONFIGS}
    scenarios = {yaml.safe_load(p.read_text())["npu_smi"]["command"][2] for p in SIM_CONFIGS}
    assert scenarios == {"910b-8", "a3-8x2", "310p-duo"}


def test_compose_prometheus_scrapes_every_node() -> None:
    services = compose()["services"]
    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    targets = {t for job in config["scrape_configs"] if job["job_name"] == "npumon"
               for group in job["static_configs"] for t in group["targets"]}
    nodes = {name for name, s in services.items() if s.get("image") == "npumon:dev"}
    assert targets == {f"{name}:9732" for name in nodes}


@pytest.mark.parametrize("path", SIM_CONFIGS, ids=lambda p: p.name)
def test_sim_configs_are_valid_npumon_configs(path: Path) -> None:
    result = run(BIN / "npumon", "check-config", path)
    assert result.returncode == 0, result.stdout + result.stderr
    command = yaml.safe_load(path.read_text())["npu_smi"]["command"]
    sim = run(BIN / command[0], *command[1:], "info")
    assert sim.returncode == 0, sim.stderr
    assert "NPU" in sim.stdout


@pytest.mark.integration
def test_compose_prometheus_config_is_valid() -> None:
    result = run("promtool", "check", "config", DEPLOY / "prometheus.yml")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.integration
def test_generated_kubernetes_manifests_are_in_sync() -> None:
    result = run(sys.executable, DEPLOY / "kubernetes" / "generate.py", "--check")
    assert result.returncode == 0, result.stderr


def test_prometheusrule_carries_the_rules_file() -> None:
    rule = yaml.safe_load((DEPLOY / "kubernetes" / "prometheusrule.yaml").read_text())
    rules = yaml.safe_load((ROOT / "config" / "prometheus" / "npumon-rules.yml").read_text())
    assert rule["kind"] == "PrometheusRule"
    assert rule["spec"]["groups"] == rules["groups"]


def test_dashboards_configmap_carries_every_dashboard() -> None:
    configmap = yaml.safe_load((DEPLOY / "kubernetes" / "grafana-dashboards.yaml").read_text())
    dashboards = {p.name: p for p in (ROOT / "grafana" / "dashboards").glob("*.json")}
    assert set(configmap["data"]) == set(dashboards)
    for name, text in configmap["data"].items():
        assert json.loads(text) == json.loads(dashboards[name].read_text())


def test_kustomization_lists_every_manifest() -> None:
    folder = DEPLOY / "kubernetes"
    listed = set(yaml.safe_load((folder / "kustomization.yaml").read_text())["resources"])
    assert listed == {p.name for p in folder.glob("*.yaml")} - {"kustomization.yaml"}


def test_daemonset_mounts_what_npu_smi_needs() -> None:
    daemonset = yaml.safe_load((DEPLOY / "kubernetes" / "daemonset.yaml").read_text())
    pod = daemonset["spec"]["template"]["spec"]
    host_paths = {v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    assert {"/usr/local/Ascend/driver", "/usr/local/bin/npu-smi", "/dev"} <= host_paths
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    keys = {e["key"] for t in terms["nodeSelectorTerms"] for e in t["matchExpressions"]}
    assert keys == {"accelerator"}
    container = pod["containers"][0]
    assert {"requests", "limits"} <= set(container["resources"])
    assert container["ports"][0]["containerPort"] == 9732


def test_systemd_unit_keeps_the_npu_devices_visible() -> None:
    lines = (DEPLOY / "systemd" / "npumon.service").read_text().splitlines()
    settings = [line.split("=", 1) for line in lines if "=" in line and not line.startswith("#")]
    keys = {key for key, _ in settings}
    assert {"ExecStart", "ProtectSystem", "NoNewPrivileges", "StateDirectory"} <= keys
    assert "PrivateDevices" not in keys and "DevicePolicy" not in keys
    exec_start = dict(settings)["ExecStart"]
    assert " run --config " in exec_start


def _unit_settings(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


def test_systemd_unit_has_exactly_the_documented_capabilities() -> None:
    unit = _unit_settings(DEPLOY / "systemd" / "npumon.service")
    assert set(unit["CapabilityBoundingSet"].split()) == {
        "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_SYS_PTRACE"}
    assert unit["AmbientCapabilities"] == "" and unit["NoNewPrivileges"] == "yes"
    nonroot = _unit_settings(DEPLOY / "systemd" / "npumon-nonroot.conf")
    assert nonroot == {"User": "npumon", "Group": "HwHiAiUser", "CapabilityBoundingSet": "",
                       "AmbientCapabilities": ""}
    documented = (DEPLOY.parent / "docs" / "privileges.md").read_text()
    assert all(cap in documented for cap in unit["CapabilityBoundingSet"].split())
