"""Agent wiring: the collectors it runs, its jobs and their clocks."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from npumon.daemon.app import Agent
from npumon.daemon.config import parse_config
from npumon.daemon.model.snapshot import BackendInfo
from npumon.daemon.runner import CommandResult, run_command
from npumon.daemon.sources.dcmi.serving import DcmiBackend
from npumon.daemon.sources.npu_smi import NpuSmi
from tests.helpers.clock import SteppedClock
from tests.helpers.wait import scaled, wait_for
from tests.support import FROZEN_TIME, NODES, fake_npu_smi


def names(body: bytes) -> set[str]:
    return {f.name for f in text_string_to_metric_families(body.decode())}


def test_collectors_disabled_in_config_are_left_out() -> None:
    config = parse_config(
        {"npu_smi": {"command": ["/nonexistent/npu-smi"]}, "collectors": {"disabled": ["sources"]}}
    )
    served = names(Agent(config).collector.exposition())
    assert not any(n.startswith("npumon_source_") for n in served)
    assert "npumon_scrape_collector_success" in served


def test_under_backend_cli_the_chips_are_npu_smis_alone() -> None:
    """chips.backend cli builds no DCMI object: NpuSmi is the backend, announced as configured;
    auto builds the DCMI backend over it (here without a library: npu-smi serves)."""
    built = {}
    for backend in ("cli", "auto"):
        settings = {
            "npu_smi": {"command": ["/nonexistent/npu-smi"]},
            "chips": {"backend": backend},
            "dcmi": {"library": str(NODES / "no-libdcmi.so")},
        }
        agent = Agent(parse_config(settings))
        built[backend] = agent.chip_backend
        assert agent.store.latest().backend == BackendInfo(
            "cli", "configured" if backend == "cli" else "library_not_found"
        )
        agent.stop()
    assert type(built["cli"]) is NpuSmi
    assert isinstance(built["auto"], DcmiBackend)
    assert built["auto"].helper is None


def test_a_wall_clock_step_either_way_moves_no_poll() -> None:
    """Polls run on the scheduler's monotonic clock: the wall clock only stamps results."""
    wall, calls = [FROZEN_TIME], []

    def counting(argv: Sequence[str], timeout: float, **options: Any) -> CommandResult:
        calls.append(tuple(argv[-1:]))
        return run_command(argv, timeout, **options)

    settings: dict[str, object] = {
        "npu_smi": {"command": fake_npu_smi("910b4-1_25.2.2")},
        "chips": {"timeout": "20s"},
        "kubernetes": {"pod_resources_socket": "/nonexistent/kubelet.sock"},
        "hccn_tool": {"command": ["/nonexistent/hccn_tool"]},
    }
    clock = SteppedClock()
    agent = Agent(
        parse_config(settings),
        runner=counting,
        clock=lambda: wall[0],
        proc_root=NODES / "no-proc",
        scheduler_clock=clock,
    )
    agent.start()
    try:
        jobs = 7  # four npu-smi tiers, two hccn_tool jobs, the kubelet
        clock.advance(3.0, jobs)  # every start offset passed
        for step in (-3600.0, +7200.0):
            wall[0] += step
            tables = calls.count(("info",))
            clock.advance(5.0, jobs)  # one table interval
            assert calls.count(("info",)) == tables + 1
            assert agent.store.latest().taken_at == wall[0]  # only the timestamps moved
    finally:
        agent.stop()


def test_after_a_reload_a_call_still_in_flight_keeps_its_kind_from_starting_again() -> None:
    """A SIGHUP storm must not pile up npu-smi children: one call of a kind across agents."""
    release, calls = threading.Event(), []

    def blocking(argv: Sequence[str], timeout: float, **options: Any) -> CommandResult:
        calls.append(tuple(argv[-1:]))
        if len(calls) == 1:
            assert release.wait(scaled(30))
        return run_command(argv, timeout, **options)

    config = parse_config(
        {
            "npu_smi": {"command": fake_npu_smi("910b4-1_25.2.2")},
            "hccn_tool": {"command": ["/nonexistent/hccn_tool"]},
        }
    )
    old = Agent(config, runner=blocking, proc_root=NODES / "no-proc")
    in_flight = threading.Thread(target=old.sources.poll_table)
    in_flight.start()
    wait_for(lambda: calls == [("info",)], 10.0, "the old agent's table call")
    new = Agent(config, runner=blocking, previous=old, proc_root=NODES / "no-proc")
    for _ in range(5):
        new.sources.poll_table()  # skipped: the old agent's call of that kind runs on
    assert calls == [("info",)]
    release.set()
    in_flight.join(scaled(30))
    new.sources.poll_table()
    assert calls == [("info",), ("info",)]
