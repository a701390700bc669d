"""Rendering the Helm chart deploy/helm/npumon with Helm's own engine (helm-python-sdk: Helm v4
as a library, no helm binary), and checking manifests against the Kubernetes schemas
(kubernetes-validate) and the prometheus-operator CRD schemas (tests/fixtures/crds)."""

from __future__ import annotations

import copy
import importlib.util
import json
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import helm_python as helm
import jsonschema
import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "npumon"
CRDS = ROOT / "tests" / "fixtures" / "crds"
REGENERATE = "run `make generate` (deploy/helm/generate.py) and commit the result"
# the chart's kubeVersion floor, and the newest Kubernetes kubernetes-validate has schemas for
K8S_VERSIONS = ("1.25.0", kubernetes_validate.latest_version())
CRD_KINDS = {
    "ServiceMonitor": "servicemonitors",
    "PodMonitor": "podmonitors",
    "PrometheusRule": "prometheusrules",
}


def render(
    values: dict[str, Any] | None = None, *, name: str = "npumon", namespace: str = "npumon"
) -> list[dict[str, Any]]:
    """The chart's manifests as Helm renders them for an install (NOTES.txt left out)."""
    return copy.deepcopy(_render(json.dumps(values or {}, sort_keys=True), name, namespace))


@cache
def _render(values: str, name: str, namespace: str) -> list[dict[str, Any]]:
    with helm.Chart.load(CHART) as chart:
        rendered = chart.render(json.loads(values), name=name, namespace=namespace, is_install=True)
    documents = []
    for path, text in sorted(rendered.items()):
        if path.endswith(".yaml"):
            documents += [d for d in yaml.safe_load_all(text) if d is not None]
    return documents


def by_kind(documents: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in documents if d["kind"] == kind]


def one(documents: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = by_kind(documents, kind)
    assert len(found) == 1, f"{len(found)} {kind}s"
    return found[0]


def pod_spec(documents: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = one(documents, "DaemonSet")["spec"]["template"]["spec"]
    return spec


def container(documents: list[dict[str, Any]]) -> dict[str, Any]:
    containers = pod_spec(documents)["containers"]
    assert len(containers) == 1
    result: dict[str, Any] = containers[0]
    return result


def _strict(schema: Any) -> Any:
    """The CRD's OpenAPI schema as JSON Schema that rejects unknown fields, as `kubectl apply`
    (server-side field validation Strict) does, instead of pruning them silently."""
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    result = {k: _strict(v) for k, v in schema.items()}
    if (
        "properties" in result
        and "additionalProperties" not in result
        and not result.get("x-kubernetes-preserve-unknown-fields")
    ):
        result["additionalProperties"] = False
    return result


@cache
def crd_schema(kind: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRDS / f"monitoring.coreos.com_{CRD_KINDS[kind]}.yaml").read_text())
    assert crd["spec"]["names"]["kind"] == kind
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    schema: dict[str, Any] = _strict(version["schema"]["openAPIV3Schema"])
    # the API server checks metadata as an ObjectMeta; here: names and string labels
    schema["properties"]["metadata"] = {
        "type": "object",
        "required": ["name", "namespace"],
        "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }
    return schema


def validate_crd(document: dict[str, Any]) -> None:
    assert document["apiVersion"] == "monitoring.coreos.com/v1"
    jsonschema.Draft7Validator(crd_schema(document["kind"])).validate(document)


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "npumon_chart_generate", ROOT / "deploy" / "helm" / "generate.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def validate(document: dict[str, Any], version: str) -> None:
    """Fail the test naming the object and the path where a manifest breaks its schema."""
    where = f"{document['kind']}/{document['metadata']['name']}"
    if document["kind"] in CRD_KINDS:
        try:
            validate_crd(document)
        except jsonschema.ValidationError as exc:
            pytest.fail(f"{where}: {exc.json_path}: {exc.message}")
        return
    try:
        kubernetes_validate.validate(document, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        path = ".".join(str(p) for p in exc.path)
        pytest.fail(f"{where} against Kubernetes {version}: {path}: {exc.message}")
