"""A capture the daemon takes, seen in its report: the job, its slot and its global steps in
the JSON and on the page's first line, and the hardware join bracketed by polls, so a capture
shorter than the poll interval still sees a retransmission burst and throttling on its chip."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from profiling_helpers import config_for, profiler_for, train_job

from npumon.daemon.config import Throttle
from npumon.daemon.model.network_view import NetworkView, PortReading
from npumon.daemon.model.reading import ChipReading
from npumon.daemon.model.snapshot import EMPTY_SNAPSHOT, NodeSnapshot, SourceStatus
from npumon.daemon.profiling.window import WindowSampler, measure
from npumon.daemon.profiling.workloads import Workload

pytestmark = pytest.mark.integration  # real msprof and training-job simulators

JOB = "llama-master-0.llama:23456"
NPU = 5
GHZ = 1e9
POLL_SECONDS = 60.0  # far longer than the capture: no poll lands inside it by itself


class Node:
    """The telemetry a node's store holds: polled POLL_SECONDS apart, the last one 30 s before
    the capture; ``poll_now`` (the scheduler's run_now) reads the chip and port at once. The
    chip and its port are what the capture changes: during it the port retransmits 1200 packets
    and the chip is clocked down by power."""

    def __init__(self) -> None:
        self.retransmitted = 100
        self.clock_hertz = 1.8 * GHZ
        self.asked = 0
        self._lock = threading.Lock()
        self.snapshot = self._poll(time.time() - POLL_SECONDS / 2)

    def _poll(self, at: float) -> NodeSnapshot:
        reading = ChipReading(
            npu=NPU,
            chip=0,
            identity=(("name", "910B3"),),
            aicore_frequency_hertz=self.clock_hertz,
            aicore_rated_frequency_hertz=1.8 * GHZ,
            power_watts=420.0 if self.clock_hertz < 1.7 * GHZ else 250.0,
            temperature_celsius=60.0,
            capture_active=True,
        )
        port = PortReading(
            npu=NPU, chip=0, port=0, roce_errors=(("retransmissions", self.retransmitted),)
        )
        sources = tuple(
            SourceStatus(name, True, 0.1, at, 0) for name in ("hccn_tool", "npu_smi_table")
        )
        return replace(
            EMPTY_SNAPSHOT,
            taken_at=at,
            chips=(reading,),
            sources=sources,
            network=NetworkView(ports=(port,)),
        )

    def latest(self) -> NodeSnapshot:
        with self._lock:
            return self.snapshot

    def capturing(self, chips: frozenset[tuple[int, int]]) -> None:
        if chips:  # the burst and the throttling, between two polls
            self.retransmitted += 1200
            self.clock_hertz = 1.1 * GHZ

    def poll_now(self) -> None:
        with self._lock:
            self.asked += 1
            self.snapshot = self._poll(time.time())


def test_the_report_names_the_slot_the_steps_and_what_the_ports_did(tmp_path: Path) -> None:
    node = Node()
    profiler, recorder = profiler_for(config_for(tmp_path, interval="60s"))
    sampler: list[WindowSampler] = []

    def window() -> WindowSampler:  # the Profiler's own, on this node's telemetry
        sampler.append(WindowSampler(node.latest, period=0.05, poll_now=node.poll_now, settle=30.0))
        return sampler[-1]

    profiler.capturer.window = window
    host = profiler.host

    def set_capturing(chips: frozenset[tuple[int, int]]) -> None:
        node.capturing(chips)
        recorder(chips)

    profiler.host = profiler.capturer.host = replace(host, set_capturing=set_capturing)
    slot = float(int(time.time()))
    with train_job(tmp_path, "balanced", environ={"RANK": "0"}) as job:
        workload = Workload(
            JOB,
            (job.pid,),
            "msprof_attach",
            frozenset({(NPU, 0)}),
            attachable=True,
            interval_seconds=60.0,
            source="master_addr",
            ranks=((0, (NPU, 0)),),
            slot=slot,
        )
        outcome = profiler.capture(workload)
    assert outcome.result == "ok", outcome.message
    assert node.asked == 1  # one poll asked for at the stop

    reports = tmp_path / "state" / "reports"
    info = json.loads((reports / f"{JOB}.json").read_text())["capture_info"]
    first, last = info["first_step"], info["last_step"]
    assert isinstance(first, int) and isinstance(last, int) and first <= last
    assert info["steps"] == last - first + 1
    assert info["rank_steps"] == {"rank0": [first, last]}
    assert (info["workload"], info["workload_source"]) == (JOB, "master_addr")
    assert (info["slot"], info["interval_seconds"]) == (slot, 60.0)
    started, stopped = info["window"]
    for source in ("hccn_tool", "npu_smi_table"):  # the polls around the capture, not in it
        before, after = info["telemetry"][source]
        assert before < started and stopped <= after, (source, info)

    meta = json.loads((reports / f"{JOB}.capture.json").read_text())
    assert {k: meta[k] for k in info} == info  # the metadata and the report agree
    (rank,) = meta["hardware"]
    assert rank["errors"] == [["retransmissions", 1200]]
    assert rank["throttle_reason"] == "power" and rank["throttled_share"] == 0.5
    assert "its RoCE ports retransmitted 1200 packets" in rank["said"]

    page = (reports / f"{JOB}.html").read_text(encoding="utf-8")
    hhmmss = datetime.fromtimestamp(slot, UTC).strftime("%H:%M:%S")
    line = f"Captured steps {first}-{last} in the {hhmmss} UTC slot of job {JOB} (from MASTER_ADDR)"
    head = page[page.index("<h1>") :]
    assert head.splitlines()[1] == f'<p class="note">{line}</p>'


def test_without_the_poll_at_the_stop_a_short_capture_sees_nothing() -> None:
    """The same window measured as before bracketing: the counters of one poll only."""
    node = Node()
    sampler = WindowSampler(node.latest, period=0.05)  # no poll asked, no settle
    sampler.start()
    node.capturing(frozenset({(NPU, 0)}))
    snaps = sampler.stop()
    assert len(snaps) == 1 and sampler.telemetry()["hccn_tool"][0] == snaps[0].taken_at

    (rank,) = measure([(0, (NPU, 0))], snaps, Throttle())
    assert rank.errors == () and not rank.throttled


def test_a_poll_that_does_not_come_ends_the_wait_at_the_settle_and_says_so() -> None:
    node = Node()
    sampler = WindowSampler(node.latest, period=0.01, poll_now=lambda: None, settle=0.05)
    sampler.start()
    sampler.stop()
    before, after = sampler.telemetry()["hccn_tool"]
    assert before == after == node.snapshot.taken_at  # no poll since: the JSON shows it
