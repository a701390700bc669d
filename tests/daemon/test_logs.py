"""Log volume and formats: a healthy node's day in log lines, logfmt and JSON lines."""

from __future__ import annotations

import io
import json
import logging
import re
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import pytest

from npumon.daemon.app import Agent
from npumon.daemon.config import parse_config
from npumon.daemon.logs import LogFormat, set_format, setup_logging
from npumon.daemon.runner import CommandResult
from npumon.simulator.loader import load_scenario
from npumon.simulator.render import render
from npumon.simulator.state import node_state

HEALTHY_A3 = """\
family: a3
npu_smi_version: "25.2.0"
seed: 7
load: {base_percent: 70, amplitude_percent: 20, sine_period_seconds: 600}
processes:
  - {npu: 0, chip: 0, pid: 632268, name: python3.1, hbm_mb: 40960}
"""
DAY = 86_400
# the simulated day's clock step and table interval: logs follow transitions, not poll counts
# (wrapper.py warns once per new failure reason and once per rejected field), so thousands of
# polls across the whole load cycle show a line per poll or per flap as surely as the 5 s default
STEP = 30


class SimulatedNode:
    """npu-smi answered in-process by the simulator at the injected time (no subprocess)."""

    def __init__(self, scenario: Path) -> None:
        self.scenario = load_scenario(str(scenario))
        self.now = 1_000_000.0
        self.calls = 0
        self._state: tuple[float, object] = (-1.0, None)  # the node at `now`, built once a tick

    def clock(self) -> float:
        return self.now

    def __call__(self, argv: Sequence[str], timeout: float, **_: object) -> CommandResult:
        self.calls += 1
        if self._state[0] != self.now:
            self._state = (self.now, node_state(self.scenario, self.now))
        result = render(list(argv[1:]), self._state[1])  # type: ignore[arg-type]
        return CommandResult(tuple(argv), result.stdout, result.stderr, result.exit_code, 0.0)


@pytest.mark.integration  # ~19,000 simulated npu-smi calls in-process
def test_a_healthy_16_chip_node_logs_fewer_than_50_lines_a_day(
    captured: io.StringIO, tmp_path: Path
) -> None:
    scenario = tmp_path / "healthy.yaml"
    scenario.write_text(HEALTHY_A3)
    (tmp_path / "profiles").mkdir()
    node = SimulatedNode(scenario)
    config = parse_config(
        {
            "npu_smi": {
                "command": ["npu-smi"],
                "intervals": {"table": f"{STEP}s", "detail": f"{3 * STEP}s"},
            },
            "state_directory": str(tmp_path),
            "profiling": {"enabled": True, "ingest": {"paths": [str(tmp_path / "profiles")]}},
        }
    )
    agent = Agent(config, runner=node, clock=node.clock)
    intervals = config.chips.intervals
    jobs = [
        (agent.sources.poll_table, intervals.table),
        (agent.sources.poll_health, intervals.table),
        (agent.sources.poll_detail, intervals.detail),
        (agent.sources.poll_identity, intervals.identity),
    ]
    assert agent.profiler is not None
    jobs += [
        (agent.profiler.tick, 15.0),
        (agent.profiler.ingest_once, config.profiling.ingest.interval),
    ]
    agent.sources.poll_all()
    start_up = len(captured.getvalue().splitlines())
    started = time.monotonic()
    for second in range(0, DAY, STEP):
        node.now += STEP
        for job, every in jobs:
            if second % max(int(every), STEP) == 0:
                job()
    lines = captured.getvalue().splitlines()[start_up:]
    seconds = time.monotonic() - started
    print(
        f"a simulated day: {len(lines)} log lines after start-up, {node.calls} npu-smi calls,"
        f" {seconds:.0f} s of test time"
    )
    assert len(agent.store.latest().chips) == 16 and node.calls > 15_000
    assert len(lines) < 50, "\n".join(lines[:20])


def test_logfmt_lines_carry_time_level_logger(captured: io.StringIO) -> None:
    logging.getLogger("npumon.test").warning("event=source_failed source=npu_smi_table")
    line = captured.getvalue().strip()
    assert line.startswith("ts=") and " level=warning logger=npumon.test " in line
    assert line.endswith("event=source_failed source=npu_smi_table")


def test_json_lines_turn_key_value_messages_into_fields() -> None:
    stream = io.StringIO()
    setup_logging("info", "json", stream)
    try:
        logging.getLogger("npumon.test").info(
            "event=reloaded path=%s tls=%s message=%r", "/etc/npumon/a b.yaml", False, ""
        )
        logging.getLogger("npumon.test").info("a free text message")
    finally:
        setup_logging("warning", "logfmt")
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["event"] == "reloaded" and first["path"] == "/etc/npumon/a b.yaml"
    assert first["tls"] == "false" and first["message"] == ""
    assert first["level"] == "info" and first["logger"] == "npumon.test"
    assert second["msg"] == "a free text message"


def test_third_party_loggers_pass_only_warnings_unless_debug(captured: io.StringIO) -> None:
    logging.getLogger("grpc").info("Using AsyncIOEngine.POLLER as I/O engine")
    logging.getLogger("asyncio").info("Using selector: EpollSelector")
    assert captured.getvalue() == ""
    setup_logging("debug", "logfmt", captured)
    logging.getLogger("grpc").debug("Using AsyncIOEngine.POLLER")
    assert "AsyncIOEngine" in captured.getvalue()


def test_values_are_logfmt_values_never_python_reprs(captured: io.StringIO) -> None:
    log = logging.getLogger("npumon.test")
    log.info("event=started npu_smi=%r", ("npumon-sim-npu-smi", "--scenario", "910b-8"))
    log.info("event=listening tls=%s port=%d message=%r path=%s", False, 9732, "", Path("/x"))
    log.warning("event=failed error=%r detail=%r", ValueError('bad "x"'), "a=b")
    first, second, third = (line.split(" ", 3)[3] for line in captured.getvalue().splitlines())
    assert first == 'event=started npu_smi="npumon-sim-npu-smi --scenario 910b-8"'
    assert second == 'event=listening tls=false port=9732 message="" path=/x'
    assert third == r'event=failed error="ValueError: bad \"x\"" detail="a=b"'


@pytest.mark.parametrize("fmt", ["logfmt", "json"])
def test_third_party_lines_go_through_the_formatter(fmt: LogFormat) -> None:
    stream = io.StringIO()
    with warnings.catch_warnings():  # pytest's own warning capture is put back after
        warnings.simplefilter("always")
        logging.captureWarnings(False)  # an earlier test's capture holds pytest's showwarning
        setup_logging("info", fmt, stream)
        try:
            logging.getLogger("grpc").warning(
                'Invalid HTTP request received: "%s" after %s', "GET / (x=1)", "0:00:03"
            )
            logging.getLogger("asyncio").error("Task exception was never retrieved key=value")
            warnings.warn("a deprecated call", DeprecationWarning, stacklevel=1)
        finally:
            setup_logging("warning", "logfmt")
            logging.captureWarnings(False)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3, lines
    if fmt == "json":
        skipped, task, warned = (json.loads(line) for line in lines)
        assert skipped["logger"] == "grpc"
        assert skipped["level"] == "warning" and skipped["msg"].endswith("after 0:00:03")
        assert task["msg"] == "Task exception was never retrieved key=value" and "key" not in task
        assert warned["logger"] == "py.warnings" and "a deprecated call" in warned["msg"]
        return
    assert lines[0].endswith(
        ' level=warning logger=grpc msg="Invalid HTTP request '
        r'received: \"GET / (x=1)\" after 0:00:03"'
    )
    assert lines[1].endswith(' msg="Task exception was never retrieved key=value"')
    assert " logger=py.warnings msg=" in lines[2] and "a deprecated call" in lines[2]
    for line in lines:
        assert _logfmt_pairs(line)[:3] == ["ts", "level", "logger"]


def _logfmt_pairs(line: str) -> list[str]:
    """The keys of a logfmt line; fails on text that is no key=value pair."""
    keys = []
    for match in re.finditer(r' ?(\w[\w.]*)=("(?:[^"\\]|\\.)*"|[^\s"=]*)(?= |$)', line):
        keys.append(match[1])
    assert re.sub(r' ?(\w[\w.]*)=("(?:[^"\\]|\\.)*"|[^\s"=]*)(?= |$)', "", line) == "", line
    return keys


def test_a_crashed_thread_is_one_formatted_line_and_a_reload_switches_format() -> None:
    import threading

    stream = io.StringIO()
    hook = threading.excepthook
    setup_logging("info", "logfmt", stream)
    try:
        set_format("json")  # what a reload with logging.format: json does
        crash = threading.Thread(target=lambda: 1 / 0, name="npumon-poll")
        crash.start()
        crash.join()
    finally:
        setup_logging("warning", "logfmt")
        threading.excepthook = hook
    (line,) = stream.getvalue().splitlines()
    fields = json.loads(line)
    assert fields["level"] == "error" and fields["thread"] == "npumon-poll"
    assert fields["exception"].endswith("ZeroDivisionError: division by zero")
