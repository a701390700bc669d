"""The OpenTelemetry Collector recipe in docs/install.md: no Collector binary is installable here
(not in Debian or PyPI), so its structure is checked as `otelcol validate` would first check it:
every component a pipeline names is defined, the prometheus receiver scrapes npumon's port, and
the pipeline ends in OTLP."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from npumon.daemon.config import Web

INSTALL = Path(__file__).parents[2] / "docs" / "install.md"


def recipe() -> dict[str, Any]:
    section = INSTALL.read_text().split("## OpenTelemetry: a Collector recipe", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert block is not None, "no yaml block in the OpenTelemetry section"
    loaded: dict[str, Any] = yaml.safe_load(block.group(1))
    return loaded


def test_every_component_a_pipeline_names_is_defined() -> None:
    config = recipe()
    pipelines = config["service"]["pipelines"]
    assert set(pipelines) == {"metrics"}
    for kind in ("receivers", "processors", "exporters"):
        for name in pipelines["metrics"][kind]:
            assert name in config[kind], f"{kind}: {name} used but not defined"


def test_it_scrapes_npumon_and_sends_otlp() -> None:
    config = recipe()
    (scrape,) = config["receivers"]["prometheus"]["config"]["scrape_configs"]
    port = Web().listen_address.rsplit(":", 1)[1]
    assert scrape["static_configs"][0]["targets"] == [f"localhost:{port}"]
    assert config["service"]["pipelines"]["metrics"]["exporters"] == ["otlp"]
    assert config["exporters"]["otlp"]["endpoint"].endswith(":4317")
