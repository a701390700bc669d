"""Supervisor: a bad config keeps the old agent, a good one swaps it; what /metrics has."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from prometheus_client import generate_latest

from npumon.daemon.config import Config, ConfigError, parse_config
from npumon.daemon.supervisor import Supervisor
from npumon.exporters.builtin import RELOAD
from tests.helpers.exposition import key, names, samples


class FakeAgent:
    """What the supervisor uses of an Agent; records start/stop."""

    def __init__(self, config: Config, previous: FakeAgent | None = None) -> None:
        from npumon.daemon.app import Agent

        self.config = config
        real = Agent(config, previous=previous)  # type: ignore[arg-type]  # a real store and collector; its scheduler is never started
        self.store, self.collector = real.store, real.collector
        self.sources = real.sources
        self.hccn = real.hccn
        self.events: list[str] = []

    def start(self) -> None:
        self.events.append("start")

    def stop(self) -> None:
        self.events.append("stop")

    def running(self) -> bool:
        return self.events[-1:] == ["start"]


def config(**extra: Any) -> Config:
    return parse_config({"npu_smi": {"command": ["/nonexistent/npu-smi"]}, **extra})


class Loader:
    def __init__(self) -> None:
        self.next: Config | ConfigError = config()

    def __call__(self) -> Config:
        if isinstance(self.next, ConfigError):
            raise self.next
        return self.next


def supervisor(loader: Loader, now: list[float]) -> Supervisor:
    s = Supervisor(config(), loader, make_agent=FakeAgent, clock=lambda: now[0])  # type: ignore[arg-type]
    s.start()
    return s


def exposition(s: Supervisor) -> dict[Any, float]:
    return samples(s.exposition(False))  # what /metrics serves


def test_a_good_reload_swaps_the_agent_and_says_so() -> None:
    loader, now = Loader(), [100.0]
    s = supervisor(loader, now)
    old = s.agent
    loader.next = config(collectors={"disabled": ["sources"]})
    now[0] = 200.0
    assert s.reload() is True
    assert old.events == ["start", "stop"] and s.agent.events == ["start"]  # type: ignore[attr-defined]
    got = exposition(s)
    assert got[key("npumon_config_last_reload_successful")] == 1.0
    assert got[key("npumon_config_last_reload_success_timestamp_seconds")] == 200.0
    assert not any(name.startswith("npumon_source_") for name, _ in got)  # the new config


def test_a_bad_config_keeps_the_running_one(caplog: pytest.LogCaptureFixture) -> None:
    loader, now = Loader(), [100.0]
    s = supervisor(loader, now)
    old, identity = s.agent, s.identity()
    loader.next = ConfigError("npumon.yaml", ["chips.timeout: expected a duration"])
    now[0] = 300.0
    with caplog.at_level(logging.ERROR):
        assert s.reload() is False
    assert s.agent is old and old.events == ["start"]  # type: ignore[attr-defined]
    got = exposition(s)
    assert got[key("npumon_config_last_reload_successful")] == 0.0
    assert got[key("npumon_config_last_reload_success_timestamp_seconds")] == 100.0
    assert "chips.timeout" in caplog.text and "kept_running_config" in caplog.text
    assert s.identity() is not identity  # the cached exposition must show the failure


def test_an_agent_that_cannot_start_brings_the_previous_config_back() -> None:
    loader, now = Loader(), [100.0]
    made: list[Config] = []

    def make(c: Config, previous: FakeAgent | None = None) -> FakeAgent:
        made.append(c)
        if len(made) == 2:  # the reloaded config's agent
            raise OSError("state directory not writable")
        return FakeAgent(c, previous)

    first = config()
    s = Supervisor(first, loader, make_agent=make, clock=lambda: now[0])  # type: ignore[arg-type]
    s.start()
    old = s.agent
    loader.next = config(collectors={"disabled": ["ecc"]})
    assert s.reload() is False
    assert old.events == ["start", "stop"]  # type: ignore[attr-defined]
    assert s.agent is not old and s.agent.config is first  # the previous config, running again
    assert s.agent.events == ["start"]  # type: ignore[attr-defined]
    assert s.reload_successful is False


def test_settings_a_running_server_cannot_change_are_named(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loader, now = Loader(), [1.0]
    s = supervisor(loader, now)
    loader.next = config(web={"listen_address": ":9999"})
    with caplog.at_level(logging.WARNING):
        assert s.reload() is True
    assert "setting=web.listen_address reason=needs_a_restart" in caplog.text


def test_process_and_python_families_are_on_metrics_only() -> None:
    s = supervisor(Loader(), [1.0])
    served = names(exposition(s))
    assert {
        "process_resident_memory_bytes",
        "process_cpu_seconds_total",
        "python_info",
        "npumon_build_info",
        "npumon_config_last_reload_successful",
    } <= served
    # the textfile (read by node_exporter, which has its own process_*) and collect --once
    textfile = names(samples(s.agent.collector.exposition()))
    assert "npumon_build_info" in textfile
    assert not any(n.startswith(("process_", "python_", "npumon_config_")) for n in textfile)


def test_metrics_body_is_the_agents_families_then_the_registrys_in_both_formats() -> None:
    from prometheus_client.openmetrics.exposition import generate_latest as openmetrics

    s = supervisor(Loader(), [1.0])
    expected = (
        names(samples(s.agent.collector.exposition()))
        | names(samples(generate_latest(s.registry)))
        | {f.sample_name for f in RELOAD}
    )
    assert names(samples(s.exposition(False))) == expected
    body = s.exposition(True).decode()
    assert body.endswith("# EOF\n") and body.count("# EOF") == 1
    assert body.index("npumon_build_info") < body.index("npumon_config_last_reload_successful")
    lines = {line.split(" ")[0] for line in body.splitlines() if not line.startswith("#")}
    reference = openmetrics(s.registry).decode().splitlines()
    assert {line.split(" ")[0] for line in reference if not line.startswith("#")} <= lines


def test_the_body_is_rendered_again_after_each_publish_and_reload() -> None:
    from npumon.daemon.model.chips import ChipResults
    from npumon.daemon.model.snapshot import SourceStatus

    loader = Loader()
    s = supervisor(loader, [1.0])
    first = s.exposition(False)
    assert s.exposition(False) is first  # the same snapshot: the same bytes
    s.agent.store.publish_chips(ChipResults(), SourceStatus("npu_smi_table", True, 0.1, 1.0, 0))
    published = s.exposition(False)
    assert published is not first and b'npumon_source_up{source="npu_smi_table"} 1.0' in published
    loader.next = config(collectors={"disabled": ["sources"]})
    assert s.reload() is True
    assert b"npumon_source_up" not in s.exposition(False)  # the new agent's, at once
