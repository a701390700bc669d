"""Ascend device IDs and ASCEND_VISIBLE_DEVICES, and pod UIDs from real cgroup lines."""

from __future__ import annotations

import pytest

from npumon.daemon.containers import pod_uid
from npumon.daemon.model.kubelet import UNRESOLVED, DeviceRef
from npumon.daemon.parsers.device_ids import parse_device_id, parse_visible_devices
from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.pod_resources import parse_pod_resources
from tests.support import FIXTURES


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Ascend910-3", DeviceRef("Ascend910-3", 3)),
        ("Ascend310P-0", DeviceRef("Ascend310P-0", 0)),
        ("npu-15", DeviceRef("npu-15", 15)),
        ("Ascend910-2c-100-0", DeviceRef("Ascend910-2c-100-0", 0, 100)),
        ("Ascend910-2c-117-1", DeviceRef("Ascend910-2c-117-1", 1, 117)),
        ("Ascend310P-4c.3cpu-102-0", DeviceRef("Ascend310P-4c.3cpu-102-0", 0, 102)),
        ("Ascend310P-2-1", DeviceRef("Ascend310P-2-1", 2)),  # share mode: physical ID, index
    ],
)
def test_device_ids_name_the_physical_chip(text: str, expected: DeviceRef) -> None:
    assert parse_device_id(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Ascend910",
        "Ascend910-",
        "Ascend910-x",
        "GPU-0",
        "Ascend910-2c-100-3",  # vdev of chip 0
        "Ascend910-2c-1-0",
        "nvidia.com/gpu-0",
        "Ascend910-2c--1",
    ],
)
def test_malformed_device_ids_raise(text: str) -> None:
    with pytest.raises(ParseError):
        parse_device_id(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0,1,2,3", (0, 1, 2, 3)),
        ("0-3", (0, 1, 2, 3)),
        ("Ascend910-5", (5,)),
        ("100", (100,)),
        ("void", ()),
        ("", ()),
        ("1, 0-1,npu-7", (1, 0, 7)),
    ],
)
def test_visible_devices(text: str, expected: tuple[int, ...]) -> None:
    assert parse_visible_devices(text) == expected


@pytest.mark.parametrize("text", ["3-1", "a", "0-200"])
def test_bad_visible_devices_raise(text: str) -> None:
    with pytest.raises(ParseError):
        parse_visible_devices(text)


def test_pod_uids_of_every_real_cgroup_layout() -> None:
    lines = (FIXTURES / "kubernetes" / "cgroups.txt").read_text().splitlines()
    cases = [(lines[i].rsplit(": ", 1)[1], lines[i + 1]) for i in range(0, len(lines), 2)]
    assert len(cases) == 6
    for uid, line in cases:
        assert pod_uid(line) == uid, line
    assert pod_uid("0::/user.slice/user-1000.slice/session-3.scope") is None
    assert pod_uid("0::/kubepods/burstable") is None  # a QoS cgroup, no pod


def test_only_npu_resources_are_kept_and_bad_ids_are_set_aside() -> None:
    rows = [
        ("ml", "a", "main", "huawei.com/Ascend910", ("Ascend910-0", "garbage", "Ascend910-1")),
        ("ml", "b", "main", "nvidia.com/gpu", ("GPU-1",)),
        ("ml", "c", "main", "huawei.com/Ascend910-2c", ("Ascend910-2c-100-0",)),
        ("ml", "d", "main", "huawei.com/Ascend910", ("bad",)),
    ]
    found = parse_pod_resources(rows, ("huawei.com/Ascend", "huawei.com/npu"))
    assert [(a.pod, [d.physical_id for d in a.devices]) for a in found.allocations] == [
        ("a", [0, 1]),
        ("c", [0]),
    ]
    assert found.malformed == ("garbage", "bad")


def test_a_hami_id_carries_the_chips_vdie_id_and_waits_for_its_chip() -> None:
    ref = parse_device_id("185011d4-21104518-A0C4ED94-14CC040A-56102003-12")
    assert ref.vdie_id == "185011D4-21104518-A0C4ED94-14CC040A-56102003"
    assert ref.physical_id == UNRESOLVED and ref.vnpu_id is None
    with pytest.raises(ParseError):
        parse_device_id("185011D4-21104518-A0C4ED94-14CC040A-3")  # four words: no VDie ID
