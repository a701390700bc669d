"""Deployment files: YAML syntax, files the compose file mounts, the systemd unit. The Helm chart
and deploy/kubernetes (the chart rendered) are tested in test_helm_chart.py."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.wait import scaled

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
IMAGE = f"npumon:{VERSION}"  # the one image name, everywhere
BIN = Path(sys.executable).parent
CHART_TEMPLATES = DEPLOY / "helm" / "npumon" / "templates"  # Go templates, not YAML until rendered
YAML_FILES = sorted(
    [
        p
        for p in [*DEPLOY.rglob("*.yaml"), *DEPLOY.rglob("*.yml")]
        if not p.is_relative_to(CHART_TEMPLATES)
    ]
    + [*(ROOT / "grafana").rglob("*.yml"), *(ROOT / "config" / "prometheus").glob("*.yml")]
)
SIM_CONFIGS = sorted((DEPLOY / "compose").glob("sim-*.yaml"))


def run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv],
        capture_output=True,
        text=True,
        timeout=scaled(60),
        check=False,
        cwd=ROOT,
    )


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
    sources = [
        volume.split(":")[0]
        for service in services.values()
        for volume in service.get("volumes", [])
        if volume.startswith(".")
    ]
    assert len(sources) >= 6
    for source in sources:
        assert (DEPLOY / source).exists(), source
    for service in services.values():
        if "build" in service:
            assert (DEPLOY / service["build"]["context"]).is_dir()


def test_compose_runs_three_families_on_their_configs() -> None:
    services = compose()["services"]
    nodes = {name: s for name, s in services.items() if is_node(s)}
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
    targets = {
        t
        for job in config["scrape_configs"]
        if job["job_name"] == "npumon"
        for group in job["static_configs"]
        for t in group["targets"]
    }
    nodes = {name for name, s in services.items() if is_node(s)}
    assert targets == {f"{name}:9732" for name in nodes}


def is_node(service: dict[str, Any]) -> bool:
    return bool(service.get("image") == IMAGE and service.get("entrypoint") == ["npumon"])


def test_the_910b_node_reads_pods_from_its_fake_kubelet() -> None:
    services = compose()["services"]
    kubelet, node = services["kubelet-910b"], services["npumon-910b"]
    assert kubelet["entrypoint"] == ["npumon-sim-kubelet"]
    socket = kubelet["command"][kubelet["command"].index("--socket") + 1]
    shared = {v.split(":")[0] for v in kubelet["volumes"]} & {
        v.split(":")[0] for v in node["volumes"]
    }
    assert shared == {"kubelet-910b"}
    config = yaml.safe_load((DEPLOY / "compose" / "sim-910b.yaml").read_text())
    assert config["kubernetes"]["pod_resources_socket"] == socket


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


def test_kustomization_lists_every_manifest() -> None:
    folder = DEPLOY / "kubernetes"
    listed = set(yaml.safe_load((folder / "kustomization.yaml").read_text())["resources"])
    assert listed == {p.name for p in folder.glob("*.yaml")} - {"kustomization.yaml"}
    namespace = yaml.safe_load((folder / "namespace.yaml").read_text())
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    namespaces = {
        d["metadata"]["namespace"]
        for d in yaml.safe_load_all((folder / "npumon.yaml").read_text())
        if d is not None
    }
    assert namespaces == {namespace["metadata"]["name"]}


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
        "CAP_DAC_OVERRIDE",
        "CAP_DAC_READ_SEARCH",
        "CAP_SYS_PTRACE",
    }
    assert unit["AmbientCapabilities"] == "" and unit["NoNewPrivileges"] == "yes"
    nonroot = _unit_settings(DEPLOY / "systemd" / "npumon-nonroot.conf")
    assert nonroot == {
        "User": "npumon",
        "Group": "HwHiAiUser",
        "CapabilityBoundingSet": "",
        "AmbientCapabilities": "",
    }
    documented = (DEPLOY.parent / "docs" / "privileges.md").read_text()
    assert all(cap in documented for cap in unit["CapabilityBoundingSet"].split())


def test_one_image_name_everywhere() -> None:
    files = [
        ROOT / "README.md",
        ROOT / "docs" / "install.md",
        DEPLOY / "docker-compose.yml",
        DEPLOY / "kubernetes" / "npumon.yaml",
        DEPLOY / "helm" / "npumon" / "values.yaml",
    ]
    for path in files:
        names = set(re.findall(r"\bnpumon:(?:latest|dev|\d[\w.-]*)", path.read_text()))
        assert names <= {IMAGE}, (path, names)
    readme = (ROOT / "README.md").read_text()
    assert f"docker build -t {IMAGE} ." in readme and f" {IMAGE}\n" in readme
    assert "--pid=host" in readme and "npumon:latest" not in readme
