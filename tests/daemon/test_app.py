"""Agent wiring: which registry carries what."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from npumon.daemon.app import Agent
from npumon.daemon.config import parse_config


def names(body: bytes) -> set[str]:
    return {f.name for f in text_string_to_metric_families(body.decode())}


def test_collectors_disabled_in_config_are_left_out() -> None:
    config = parse_config({"npu_smi": {"command": ["/nonexistent/npu-smi"]},
                           "collectors": {"disabled": ["sources"]}})  # fmt: skip
    served = names(generate_latest(Agent(config).registry))
    assert not any(n.startswith("npumon_source_") for n in served)
    assert "npumon_scrape_collector_success" in served
