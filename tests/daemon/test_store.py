"""SnapshotStore: an unchanged part keeps its identity across publishes; listeners hear each."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from npumon.daemon import store as store_module
from npumon.daemon.model.chips import ChipMapping, ChipResults, MappedChip
from npumon.daemon.model.kubelet import (
    ChipOwner,
    ContainerAllocation,
    DeviceRef,
    PodResourcesResults,
)
from npumon.daemon.model.network import ChipInterconnect, HccnResults, NetAddress
from npumon.daemon.model.snapshot import SourceStatus
from npumon.daemon.parsers.table import parse_info
from npumon.daemon.sources.chips import SOURCES
from npumon.daemon.store import IDENTITY_SOURCE, SnapshotStore
from tests.daemon.model.test_reading import CONFIG
from tests.daemon.sources.fake_runner import NPU_SMI, TABLE

UP = SourceStatus("npu_smi_table", True, 0.0, 1.0, 0)


def results(text: str = TABLE) -> ChipResults:
    return ChipResults(table=parse_info(text))


def test_equal_parts_keep_their_identity_and_changed_ones_do_not() -> None:
    store = SnapshotStore(CONFIG)
    store.publish_chips(results(), UP)
    first = store.latest()
    store.publish_chips(results(), UP)  # a new poll, the same values: a new merge
    second = store.latest()
    assert second is not first
    assert second.chips is first.chips and second.network is first.network
    assert second.node is first.node and second.sources is first.sources
    store.publish_hccn_tool(
        HccnResults(address={(0, 0, 0): NetAddress(addresses=(("10.0.0.1", "255.0.0.0"),))}),
        SourceStatus("hccn_tool", True, 0.0, 2.0, 0),
    )
    third = store.latest()
    assert third.network is not second.network and third.network.ports
    assert third.network.chips is second.network.chips  # the interconnect part did not change
    assert third.chips is second.chips and third.sources is not second.sources


def test_the_network_view_is_read_again_only_when_its_inputs_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads: list[object] = []
    real = store_module.read_network
    monkeypatch.setattr(store_module, "read_network", lambda *a: reads.append(a) or real(*a))
    store, polled = SnapshotStore(CONFIG), results()  # the sources keep one links mapping
    hccn = HccnResults(address={(0, 0, 0): NetAddress(addresses=(("10.0.0.1", "255.0.0.0"),))})
    store.publish_hccn_tool(hccn, SourceStatus("hccn_tool", True, 0.0, 2.0, 0))
    store.publish_chips(polled, UP)  # the chips appear: read
    assert len(reads) == 2 and store.latest().network.ports
    for _ in range(3):  # table polls: the same hccn_tool results, links and chips
        store.publish_chips(replace(polled, table=parse_info(TABLE)), UP)
    store.publish_hccn_tool(hccn, SourceStatus("hccn_tool", True, 0.0, 3.0, 0))  # the same object
    assert len(reads) == 2
    store.publish_hccn_tool(replace(hccn), SourceStatus("hccn_tool", True, 0.0, 4.0, 0))
    assert len(reads) == 3
    links: dict[tuple[int, int], ChipInterconnect] = {}
    store.publish_chips(replace(polled, interconnect=links), UP)  # new link results
    assert len(reads) == 4
    other = (NPU_SMI / "info_910a_8chip_warning_procs_24.1rc2.txt").read_text()
    store.publish_chips(replace(polled, interconnect=links, table=parse_info(other)), UP)
    assert len(reads) == 5  # other chips
    assert [(c.npu, c.chip) for c in store.latest().chips] == [(n, 0) for n in range(8)]


def pods(*devices: int) -> PodResourcesResults:
    refs = tuple(DeviceRef(f"Ascend910-{d}", d) for d in devices)
    return PodResourcesResults(
        (ContainerAllocation("ml", "train", "main", "huawei.com/Ascend910", refs),)
    )


def test_no_unmapped_device_is_counted_before_the_chip_identities_are_in(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # the demo's start: the kubelet answers at 0.2 s, before the table and the identity run
    store = SnapshotStore(CONFIG)
    store.publish_pod_resources(pods(0, 1), SourceStatus("kubelet_pod_resources", True, 0, 1, 0))
    store.publish_chips(results(), UP)  # a table, but no physical IDs yet (910B: -m has them)
    assert store.latest().attribution_problems == ()
    mapping = ChipMapping((MappedChip(0, 0, 0, None), MappedChip(1, 0, 1, None)))
    identity = SourceStatus(IDENTITY_SOURCE, True, 0.0, 1.0, 0)
    store.publish_chips(replace(results(), mapping=mapping), identity)
    assert store.latest().attribution_problems == ()
    assert {o for c in store.latest().chips for o in c.owners} == {ChipOwner("ml", "train", "main")}
    store.publish_pod_resources(pods(0, 1, 7), SourceStatus("kubelet_pod_resources", True, 0, 2, 0))
    assert store.latest().attribution_problems == (("unmapped_device", 1),)  # a real one counts
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        "event=attribution_unmapped_device detail=Ascend910-7"
    ]


def test_the_identity_source_name_is_the_npu_smi_sources_own() -> None:
    assert IDENTITY_SOURCE in SOURCES
