"""SnapshotStore: an unchanged part keeps its identity across publishes; listeners hear each."""

from __future__ import annotations

import logging

import pytest

from npumon.daemon.model.network import HccnResults, NetAddress
from npumon.daemon.model.npu_smi import NpuSmiResults
from npumon.daemon.model.snapshot import SourceStatus
from npumon.daemon.parsers.table import parse_info
from npumon.daemon.store import SnapshotStore
from tests.daemon.model.test_reading import CONFIG
from tests.daemon.sources.fake_runner import TABLE

UP = SourceStatus("npu_smi_table", True, 0.0, 1.0, 0)


def results(text: str = TABLE) -> NpuSmiResults:
    return NpuSmiResults(table=parse_info(text))


def test_equal_parts_keep_their_identity_and_changed_ones_do_not() -> None:
    store = SnapshotStore(CONFIG)
    store.publish_npu_smi(results(), UP)
    first = store.latest()
    store.publish_npu_smi(results(), UP)  # a new poll, the same values: a new merge
    second = store.latest()
    assert second is not first
    assert second.chips is first.chips and second.network is first.network
    assert second.node is first.node and second.sources is first.sources
    store.publish_hccn_tool(
        HccnResults(address={(0, 0, 0): NetAddress(addresses=(("10.0.0.1", "255.0.0.0"),))}),
        SourceStatus("hccn_tool", True, 0.0, 2.0, 0))
    third = store.latest()
    assert third.network is not second.network and third.network.ports
    assert third.network.chips is second.network.chips  # the interconnect part did not change
    assert third.chips is second.chips and third.sources is not second.sources


def test_listeners_hear_every_publish_and_a_failing_one_stops_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = SnapshotStore(CONFIG)
    heard: list[float] = []

    def broken() -> None:
        raise RuntimeError("listener bug")

    store.listeners += [broken, lambda: heard.append(store.latest().taken_at)]
    with caplog.at_level(logging.ERROR, logger="npumon.daemon.store"):
        store.publish_npu_smi(results(), UP)
        store.publish_status(UP)
        store.set_profiling(frozenset())
        store.set_profiles(None)
    assert len(heard) == 4 and heard[0] > 0  # each after its snapshot was in place
    assert caplog.text.count("event=publish_listener_failed") == 4
