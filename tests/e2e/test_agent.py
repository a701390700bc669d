"""The agent end to end with real subprocesses: absent values, failures, chips that come and go,
a hung npu-smi that never delays a scrape, and `npumon collect --once` as a user runs it."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import yaml

from npumon.daemon.app import Agent
from npumon.daemon.config import parse_config
from npumon.exporters.web.http import serve
from tests.helpers.exposition import Samples, names, samples, value
from tests.helpers.http import get
from tests.helpers.wait import scaled, wait_for
from tests.support import ROOT, fake_npu_smi

MIB = 1024 * 1024

pytestmark = pytest.mark.integration  # every test runs npu-smi (fake or simulated)


def agent_for(command: list[str], **chips: object) -> Agent:
    settings = {"npu_smi": {"command": command}, "chips": {"timeout": "20s", **chips}}
    return Agent(parse_config(settings))


def test_na_values_and_unsupported_commands_give_no_sample_never_zero() -> None:
    found = samples(agent_for(fake_npu_smi("a3_25.2.0")).collect_once().decode())
    # die 0 of NPU 0 reports power; die 1 prints '-': no sample, not 0
    assert value(found, "npu_power_watts", npu="0", chip="0") == 162.8
    assert value(found, "npu_power_watts", npu="0", chip="1") is None
    assert value(found, "npu_hbm_used_bytes", npu="1", chip="1") == 10568 * MIB
    # -t usages/common are not supported on this fixture node: no AI CPU series at all, and
    # the refusals are counted; a query the chip does not offer does not make the source down
    assert "npu_aicpu_utilization_ratio" not in names(found)
    assert "npu_aicore_frequency_hertz" not in names(found)
    assert value(found, "npumon_source_up", source="npu_smi_detail") == 1
    assert (
        value(
            found, "npumon_source_failures_total", source="npu_smi_detail", reason="not_supported"
        )
        == 4.0
    )  # 2 NPUs x (usages, common)
    assert value(found, "npumon_source_up", source="npu_smi_table") == 1


def test_310p_power_na_is_absent() -> None:
    found = samples(agent_for(fake_npu_smi("310p3duo_25.3rc1")).collect_once().decode())
    assert "npu_power_watts" not in names(found)
    assert value(found, "npu_temperature_celsius", npu="32896", chip="1") == 81
    assert value(found, "npu_memory_used_bytes", npu="0", chip="0") == 35552 * MIB
    # the process name is empty in that capture (container without host PIDs): no label value
    process = value(found, "npu_process_hbm_used_bytes", npu="0", chip="0", pid="326429")
    assert process == 33842 * MIB


def test_failed_table_drops_every_chip_and_says_why() -> None:
    agent = agent_for(fake_npu_smi("910b4-1_25.2.2", "--fail-on", "info", "--exit-code", "251"))
    found = samples(agent.collect_once().decode())
    assert not {n for n in names(found) if n.startswith("npu_") and n != "npu_node_info"}
    assert value(found, "npumon_source_up", source="npu_smi_table") == 0
    assert (
        value(found, "npumon_source_failures_total", source="npu_smi_table", reason="dcmi_init")
        == 1
    )
    table = next(s for s in agent.store.latest().sources if s.source == "npu_smi_table")
    assert "HwHiAiUser" in (table.last_error or "")  # what the landing page and /healthz show


def test_garbage_is_a_parse_error_not_a_crash() -> None:
    agent = agent_for(fake_npu_smi("910b4-1_25.2.2", "--garbage-on", "info"))
    found = samples(agent.collect_once().decode())
    assert (
        value(found, "npumon_source_failures_total", source="npu_smi_table", reason="parse_error")
        == 1
    )
    assert value(found, "npumon_chips") in (None, 0)


def test_endless_output_is_cut_off_and_said() -> None:
    # the table, then 50 MB of process rows: the old runner kept it all and served it as up
    agent = agent_for(fake_npu_smi("910b4-1_25.2.2", "--flood-on", "info"))
    found = samples(agent.collect_once().decode())
    assert value(found, "npumon_source_up", source="npu_smi_table") == 0
    assert (
        value(
            found, "npumon_source_failures_total", source="npu_smi_table", reason="output_too_large"
        )
        == 1
    )
    assert value(found, "npu_hbm_used_bytes", npu="0", chip="0") is None


def test_a_helper_holding_the_output_open_cannot_stretch_the_timeout(tmp_path: Path) -> None:
    helper = tmp_path / "helper.pid"
    agent = agent_for(
        fake_npu_smi(
            "910b4-1_25.2.2",
            "--linger-on",
            "info",
            "--linger-seconds",
            "600",
            "--linger-pidfile",
            str(helper),
        ),
        timeout="2s",
    )
    helper_ran_on = False
    try:
        agent.sources.poll_table()
        # the helper holds stdout for 600 s: still running means the 2 s deadline ended the poll
        helper_ran_on = psutil.pid_exists(int(helper.read_text()))
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(helper.read_text()), signal.SIGKILL)  # the fake's helper, ours to end
    found = samples_of(agent)
    assert helper_ran_on, "the poll waited for the helper to close npu-smi's stdout"
    assert value(found, "npumon_source_up", source="npu_smi_table") == 0
    assert (
        value(found, "npumon_source_failures_total", source="npu_smi_table", reason="timeout") == 1
    )
    assert value(found, "npu_hbm_used_bytes", npu="0", chip="0") is None


def test_chip_vanishes_and_returns_with_the_next_poll(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    scenario = tmp_path / "flaky-card.yaml"
    scenario.write_text(
        "family: 910b\nevents:\n  - {kind: disappear, npu: 2, start: 60, end: 120}\n"
    )
    agent = agent_for(["npumon-sim-npu-smi", "--scenario", str(scenario)])
    monkeypatch.setenv("NPUMON_SIM_TIME", "10")
    agent.sources.poll_table()
    agent.sources.poll_identity()
    before = samples_of(agent)
    assert value(before, "npu_temperature_celsius", npu="2", chip="0") is not None
    monkeypatch.setenv("NPUMON_SIM_TIME", "70")  # NPU 2 falls off the bus at 60 s
    agent.sources.poll_table()
    gone = samples_of(agent)
    assert value(gone, "npu_temperature_celsius", npu="2", chip="0") is None
    assert value(gone, "npu_temperature_celsius", npu="1", chip="0") is not None
    assert value(gone, "npumon_chips") == 7
    assert (
        value(gone, "npumon_source_failures_total", source="npu_smi_table", reason="chip_missing")
        == 1
    )
    monkeypatch.setenv("NPUMON_SIM_TIME", "130")  # and is back at 120 s
    agent.sources.poll_table()
    back = samples_of(agent)
    assert value(back, "npu_temperature_celsius", npu="2", chip="0") is not None
    assert value(back, "npumon_chips") == 8
    assert value(back, "npumon_source_up", source="npu_smi_table") == 1


def samples_of(agent: Agent) -> Samples:
    return samples(agent.collector.exposition().decode())


@pytest.fixture
def hung_agent() -> Iterator[tuple[Agent, int]]:
    """A running daemon whose `npu-smi info` hangs for 60 s (killed after the 3 s timeout)."""
    from npumon.daemon.supervisor import Supervisor

    agent = agent_for(fake_npu_smi("910b4-1_25.2.2", "--hang-on", "info"), timeout="3s")
    supervisor = Supervisor(agent.config, lambda: agent.config, make_agent=lambda _: agent)
    server = serve(supervisor.exposition, "127.0.0.1:0", None, supervisor.healthy)  # as `run`
    supervisor.start()
    try:
        yield agent, server.port
    finally:
        agent.stop()  # not supervisor.stop(): its terminate_all() ends child processes for good
        server.shutdown()


def hung_table_calls() -> set[int]:
    """pids of the running `npu-smi info` calls that hang (the fake's table call)."""
    found = set()
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            argv = child.cmdline()
            if "--hang-on" in argv and argv[argv.index("--hang-on") + 2 :] == ["info"]:
                found.add(child.pid)
    return found


def test_a_hung_npu_smi_does_not_delay_a_scrape(hung_agent: tuple[Agent, int]) -> None:
    agent, port = hung_agent
    url = f"http://127.0.0.1:{port}/metrics"
    slowest = 0.0
    during_the_hang = 0  # scrapes that began and ended while one hung call stayed alive

    def scrape_reports_the_timeout() -> bool:
        nonlocal slowest, during_the_hang
        before = hung_table_calls()
        started = time.monotonic()
        found = samples(get(url))
        slowest = max(slowest, time.monotonic() - started)
        during_the_hang += bool(before & hung_table_calls())
        return bool(
            value(found, "npumon_source_failures_total", source="npu_smi_table", reason="timeout")
        )

    wait_for(scrape_reports_the_timeout, 30, "the hung call to be reported as a timeout", poll=0.1)
    # the claim, without a stopwatch: scrapes were answered while the call hung
    assert during_the_hang >= 1
    # (the scrape-latency figures, p50/p99 while npu-smi hangs, are bench/daemon_bench.py's)
    assert value(samples(get(url)), "npumon_source_up", source="npu_smi_table") == 0


def test_collect_once_cli_against_a_replayed_real_sample(tmp_path: Path) -> None:
    config = tmp_path / "npumon.yaml"
    config.write_text(yaml.safe_dump({"npu_smi": {"command": fake_npu_smi("910b4-1_25.2.2")}}))
    npumon = Path(sys.executable).parent / "npumon"
    done = subprocess.run(
        [str(npumon), "collect", "--once", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=scaled(120),
        cwd=ROOT,
    )
    found = samples(done.stdout)
    # values read off info_910b4-1_2chip_procs_25.2.2.txt
    assert value(found, "npu_hbm_used_bytes", npu="0", chip="0") == 61825 * MIB
    assert value(found, "npu_hbm_total_bytes", npu="1", chip="0") == 65536 * MIB
    assert value(found, "npu_power_watts", npu="1", chip="0") == 77.9
    assert value(found, "npu_temperature_celsius", npu="0", chip="0") == 40
    assert (
        value(
            found,
            "npu_process_hbm_used_bytes",
            npu="1",
            chip="0",
            pid="19341",
            process_name="VLLMWorker_TP",
        )
        == 58472 * MIB
    )
    assert value(found, "npu_node_info", npu_smi_version="25.2.2", driver_version="25.2.2") == 1
    # and from the replayed 25.5.1 -t usages / -t board captures
    assert value(found, "npu_ctrlcpu_utilization_ratio", npu="0", chip="0") == 0.06
    # -t common has no capture for this node (the fake answers "not supported"): counted, the
    # source stays up and the exit status is 0
    assert (
        value(
            found, "npumon_source_failures_total", source="npu_smi_detail", reason="not_supported"
        )
        == 2.0
    )
    assert done.returncode == 0, done.stderr


def test_collect_once_cli_exits_1_when_a_source_fails(tmp_path: Path) -> None:
    config = tmp_path / "npumon.yaml"
    argv = ", ".join(f'"{part}"' for part in fake_npu_smi("910b4-1_25.2.2", "--fail-on=info -m"))
    config.write_text(f"npu_smi:\n  command: [{argv}]\n")
    npumon = Path(sys.executable).parent / "npumon"
    done = subprocess.run(
        [str(npumon), "collect", "--once", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=scaled(120),
        cwd=ROOT,
    )
    assert done.returncode == 1
    assert "npu_smi_identity failed" in done.stderr and "-8005" in done.stderr


def test_collect_once_cli_against_the_simulator() -> None:
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "npumon"),
            "collect",
            "--once",
            "--config",
            "config/demo.yaml",
        ],
        capture_output=True,
        text=True,
        timeout=scaled(180),
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "NPUMON_SIM_TIME": "200"},
    )
    assert done.returncode == 0, done.stderr
    found = samples(done.stdout)
    # t=200 s in 910b-8.yaml: NPU 3 overheats (96 C) and clocks down to 1100 MHz under load
    assert value(found, "npu_throttled", npu="3", chip="0", reason="thermal") == 1
    assert value(found, "npu_aicore_frequency_hertz", npu="3", chip="0") == 1.1e9
    assert value(found, "npu_throttled", npu="0", chip="0", reason="thermal") == 0
    # NPU 6 is allocated but idle, clocked down at idle: not throttling
    assert value(found, "npu_throttled", npu="6", chip="0", reason="unknown") == 0
    assert (
        value(
            found,
            "npu_process_hbm_used_bytes",
            npu="6",
            chip="0",
            pid="31337",
            process_name="jupyter-lab",
        )
        == 20480 * MIB
    )
    assert len({labels for name, labels in found if name == "npu_temperature_celsius"}) == 8
    # it takes seconds: a progress line per step on stderr, the exposition alone on stdout
    steps = re.findall(
        r"^npumon: collect: (\S+) (?:up|down|off) in \d+\.\d s$", done.stderr, re.MULTILINE
    )
    # each tool's steps in their order; the tools side by side (tests/daemon/test_collect_progress)
    assert sorted(steps) == sorted(
        [
            "npu_smi_table",
            "npu_smi_identity",
            "npu_smi_detail",
            "npu_smi_health",
            "hccn_tool_identity",
            "hccn_tool",
            "kubelet_pod_resources",
            "profiling_ingest",
        ]
    ), done.stderr
    assert [s for s in steps if s.startswith("npu_smi_")] == [
        "npu_smi_table",
        "npu_smi_identity",
        "npu_smi_detail",
        "npu_smi_health",
    ], done.stderr


def test_polling_and_scraping_never_import_pandas(tmp_path: Path) -> None:
    """pandas belongs to the analysis worker process only (docs/architecture.md)."""
    script = (
        "import sys\n"
        "from npumon.daemon.app import Agent\n"
        "from npumon.daemon.config import parse_config\n"
        f"command = {fake_npu_smi('910b4-1_25.2.2')!r}\n"
        "agent = Agent(parse_config({'npu_smi': {'command': command},\n"
        f"    'state_directory': {str(tmp_path)!r}, 'profiling': {{'enabled': True}}}}))\n"
        "agent.collect_once()\n"
        "print('pandas' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=scaled(120),
        cwd=ROOT,
    )
    assert done.stdout.strip() == "False", done.stderr
