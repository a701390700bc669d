"""The chart tests itself: its ci/ values files (default, profiling, TLS+auth, non-root) render
and validate against the Kubernetes and prometheus-operator schemas, and each carries the
`helm test` pod (templates/tests/scrape.yaml), which the NetworkPolicy admits. The pod's script,
files/helm-test.py, is run here against a real `npumon run`: plain, and with basic auth with and
without the password."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bcrypt
import pytest
import yaml
from chart_render import CHART, K8S_VERSIONS, ROOT, by_kind, generator, one, render, validate

from tests.helpers.processes import reported_port, start_npumon, stop
from tests.helpers.wait import scaled
from tests.support import fake_npu_smi

CI = CHART / "ci"
CI_VALUES = sorted(CI.glob("*-values.yaml"))
SCRIPT = CHART / "files" / "helm-test.py"
HOOK = "helm.sh/hook"


def ci_values(name: str) -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load((CI / f"{name}-values.yaml").read_text()) or {}
    return values


def test_the_ci_values_are_the_four_the_chart_promises() -> None:
    assert [p.name for p in CI_VALUES] == [
        "default-values.yaml",
        "nonroot-values.yaml",
        "profiling-values.yaml",
        "tls-auth-values.yaml",
    ]


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("path", CI_VALUES, ids=lambda p: p.stem)
def test_every_ci_values_file_renders_valid_manifests(path: Path, version: str) -> None:
    documents = render(yaml.safe_load(path.read_text()) or {})
    assert one(documents, "DaemonSet")
    for document in documents:
        validate(document, version)


def hook_pod(values: dict[str, Any]) -> dict[str, Any]:
    pods = [d for d in by_kind(render(values), "Pod") if d["metadata"]["annotations"].get(HOOK)]
    assert len(pods) == 1
    pod: dict[str, Any] = pods[0]
    return pod


def env_of(pod: dict[str, Any]) -> dict[str, Any]:
    return {
        e["name"]: e.get("value", e.get("valueFrom")) for e in pod["spec"]["containers"][0]["env"]
    }


def test_the_test_pod_is_a_helm_test_hook_in_the_npumon_image() -> None:
    pod = hook_pod({})
    daemonset = one(render({}), "DaemonSet")
    [exporter] = daemonset["spec"]["template"]["spec"]["containers"]
    [scrape] = pod["spec"]["containers"]
    assert pod["metadata"]["annotations"][HOOK] == "test"
    assert scrape["image"] == exporter["image"]
    assert scrape["command"] == ["python3", "-c"]
    assert scrape["args"] == [SCRIPT.read_text()]
    assert env_of(pod) == {
        "NPUMON_TEST_HOST": "npumon.npumon.svc",
        "NPUMON_TEST_PORT": "9732",
        "NPUMON_TEST_SCHEME": "http",
    }
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    # not selected by the Service or by the NetworkPolicy (closed egress) of the exporter
    selector = daemonset["spec"]["selector"]["matchLabels"]
    labels = pod["metadata"]["labels"]
    assert not selector.items() <= labels.items()


def test_the_network_policy_admits_the_test_pod_and_only_with_tests_on() -> None:
    pod = hook_pod({})
    labels = pod["metadata"]["labels"]
    [rule] = one(render({}), "NetworkPolicy")["spec"]["ingress"]
    admitted = [
        f
        for f in rule["from"]
        if "namespaceSelector" not in f
        and f["podSelector"]["matchLabels"].items() <= labels.items()
    ]
    assert len(admitted) == 1
    [rule] = one(render({"tests": {"enabled": False}}), "NetworkPolicy")["spec"]["ingress"]
    assert all("namespaceSelector" in f for f in rule["from"])
    assert by_kind(render({"tests": {"enabled": False}}), "Pod") == []


def test_the_test_pod_follows_tls_auth_and_client_certificates() -> None:
    values = ci_values("tls-auth")
    env = env_of(hook_pod(values))
    assert env["NPUMON_TEST_SCHEME"] == "https"
    assert env["NPUMON_TEST_USERNAME"] == {
        "secretKeyRef": {"name": "npumon-scrape", "key": "username"}
    }
    assert env["NPUMON_TEST_PASSWORD"] == {
        "secretKeyRef": {"name": "npumon-scrape", "key": "password"}
    }
    values["web"]["tls"]["clientAuthType"] = "RequireAndVerifyClientCert"
    assert env_of(hook_pod(values))["NPUMON_TEST_TCP_ONLY"] == "true"
    values["tests"] = {"clientCertSecret": "scraper-cert"}
    pod = hook_pod(values)
    assert "NPUMON_TEST_TCP_ONLY" not in env_of(pod)
    assert pod["spec"]["volumes"] == [
        {"name": "client-cert", "secret": {"secretName": "scraper-cert"}}
    ]


def test_the_plain_manifests_leave_the_test_pod_out() -> None:
    documents = list(yaml.safe_load_all(generator().render_plain()))
    assert [d for d in documents if d and d["kind"] == "Pod"] == []


# files/helm-test.py against a real daemon


@pytest.fixture
def web_daemon(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """npumon run with basic auth for prometheus:secret; (tmp_path, port)."""
    web = tmp_path / "web.yml"
    hashed = bcrypt.hashpw(b"secret", bcrypt.gensalt(4)).decode()
    web.write_text(yaml.safe_dump({"basic_auth_users": {"prometheus": hashed}}))
    config, log = tmp_path / "npumon.yaml", tmp_path / "npumon.log"
    config.write_text(
        yaml.safe_dump(
            {
                "npu_smi": {"command": fake_npu_smi("910b4-1_25.2.2")},
                "state_directory": str(tmp_path),
                "web": {"config_file": str(web)},
            }
        )
    )
    process = start_npumon(config, log)
    try:
        yield tmp_path, reported_port(log, process=process)
    finally:
        stop(process)


def run_script(port: int, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT)],
        env={
            **os.environ,
            "NPUMON_TEST_HOST": "127.0.0.1",
            "NPUMON_TEST_PORT": str(port),
            "NPUMON_TEST_DEADLINE": str(scaled(30)),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=scaled(90),
    )


@pytest.mark.integration
def test_the_test_script_passes_a_serving_exporter_and_fails_a_wrong_password(
    web_daemon: tuple[Path, int],
) -> None:
    _, port = web_daemon
    done = run_script(port, NPUMON_TEST_USERNAME="prometheus", NPUMON_TEST_PASSWORD="secret")
    assert done.returncode == 0, done.stderr
    assert "ok: 1 npumon pod(s)" in done.stdout
    # no credentials: the anonymous /metrics must be refused and /-/healthy answer
    anonymous = run_script(port)
    assert anonymous.returncode == 0, anonymous.stderr
    wrong = run_script(
        port,
        NPUMON_TEST_USERNAME="prometheus",
        NPUMON_TEST_PASSWORD="wrong",
        NPUMON_TEST_DEADLINE="0",
    )
    assert wrong.returncode == 1
    assert "/metrics answered 401" in wrong.stderr


@pytest.mark.integration
def test_the_test_script_fails_where_nothing_listens(tmp_path: Path) -> None:
    with socket.socket() as sock:  # bound, never listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        done = run_script(sock.getsockname()[1], NPUMON_TEST_DEADLINE="0")
    assert done.returncode == 1
    assert "FAILED: 127.0.0.1:" in done.stderr


# Artifact Hub (artifacthub.io/docs/topics/annotations/helm): the annotations are YAML in strings
CHANGE_KINDS = {"added", "changed", "deprecated", "removed", "fixed", "security"}


def test_chart_yaml_carries_artifact_hubs_metadata() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert chart["kubeVersion"] == f">={K8S_VERSIONS[0]}-0"
    assert chart["maintainers"] and all(m["name"] for m in chart["maintainers"])
    annotations = chart["annotations"]
    assert annotations["artifacthub.io/license"] == project["license"]
    links = yaml.safe_load(annotations["artifacthub.io/links"])
    assert links and all(link["url"].startswith(chart["home"]) for link in links)
    for link in links:  # the documents they point at exist
        assert (ROOT / link["url"].removeprefix(f"{chart['home']}/blob/main/")).exists() or (
            link["url"] == chart["home"]
        )
    images = yaml.safe_load(annotations["artifacthub.io/images"])
    assert [i["name"] for i in images] == ["npumon", "npumon-profiling"]
    changes = yaml.safe_load(annotations["artifacthub.io/changes"])
    assert changes and all(c["kind"] in CHANGE_KINDS and c["description"] for c in changes)
    assert annotations["artifacthub.io/containsSecurityUpdates"] in {"true", "false"}
    repo = yaml.safe_load((CHART.parent / "artifacthub-repo.yml").read_text())
    assert set(repo) <= {"repositoryID", "owners", "ignore"}
