"""The OpenTelemetry Collector recipe (deploy/otel/collector.yaml) and docs/install.md's table of
npumon's families against the `hw.*` semantic conventions: the recipe's pipeline is whole, its
scrape config is valid Prometheus (promtool), its selector keeps the chart's pods on their
metrics port, the docs show the file as it is, and every family the table names exists."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml
from chart_render import ROOT, one, render

from tests.helpers.wait import scaled

RECIPE = ROOT / "deploy" / "otel" / "collector.yaml"
INSTALL = ROOT / "docs" / "install.md"
METRICS = ROOT / "docs" / "metrics.md"


def recipe() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(RECIPE.read_text())
    return loaded


def scrape_config() -> dict[str, Any]:
    [config] = recipe()["receivers"]["prometheus"]["config"]["scrape_configs"]
    result: dict[str, Any] = config
    return result


def test_the_pipeline_names_only_components_the_recipe_defines() -> None:
    config = recipe()
    [pipeline] = config["service"]["pipelines"].values()
    for kind in ("receivers", "processors", "exporters"):
        assert pipeline[kind], kind
        assert set(pipeline[kind]) <= set(config[kind]), kind
    # memory_limiter first, as the Collector's docs ask
    assert pipeline["processors"][0] == "memory_limiter"


def test_the_scrape_config_passes_promtool(tmp_path: Path) -> None:
    config = dict(scrape_config())
    # Debian's promtool is built without the Kubernetes discovery: a static target in its place
    assert config.pop("kubernetes_sd_configs") == [{"role": "pod"}]
    config["static_configs"] = [{"targets": ["127.0.0.1:9732"]}]
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump({"scrape_configs": [config]}))
    done = subprocess.run(
        ["promtool", "check", "config", str(path)],
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # the job name the rules select (config/prometheus/npumon-rules.yml: job=~"npumon.*")
    assert re.fullmatch("npumon.*", config["job_name"])


def meta_labels(pod_labels: dict[str, str], port: str) -> dict[str, str]:
    """The __meta_kubernetes_pod_* labels Prometheus' pod discovery gives one container port."""
    labels = {
        "__meta_kubernetes_pod_label_" + re.sub(r"[^a-zA-Z0-9_]", "_", k): v
        for k, v in pod_labels.items()
    }
    labels["__meta_kubernetes_pod_container_port_name"] = port
    return labels


def kept(labels: dict[str, str]) -> bool:
    """The recipe's keep rules applied as Prometheus does (joined by ';', anchored regex)."""
    for rule in scrape_config()["relabel_configs"]:
        if rule.get("action") == "keep":
            value = ";".join(labels.get(name, "") for name in rule["source_labels"])
            if not re.fullmatch(rule["regex"], value):
                return False
    return True


def test_the_selector_keeps_the_charts_pods_on_their_metrics_port_only() -> None:
    documents = render()
    template = one(documents, "DaemonSet")["spec"]["template"]
    [container] = template["spec"]["containers"]
    [port] = container["ports"]
    assert kept(meta_labels(template["metadata"]["labels"], port["name"]))
    assert not kept(meta_labels(template["metadata"]["labels"], "other"))
    # the `helm test` pod is not an exporter
    assert not kept(meta_labels(one(documents, "Pod")["metadata"]["labels"], "metrics"))


def test_the_docs_show_the_recipe_as_it_is() -> None:
    assert f"```yaml\n{RECIPE.read_text()}```" in INSTALL.read_text()


def test_every_family_the_hw_table_names_exists() -> None:
    text = INSTALL.read_text()
    table = text[text.index("| npumon family | `hw.*` metric |") :].split("\n\n", 1)[0]
    named = set(re.findall(r"`(npu_[a-z_]+)`", table))
    families = set(re.findall(r"^\| `(npu_[a-z_]+)` \|", METRICS.read_text(), re.M))
    assert len(named) >= 10
    assert named <= families, named - families
