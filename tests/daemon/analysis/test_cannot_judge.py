"""Rules whose data shows a case they cannot weigh say so (summary.not_judged) instead of firing
or staying silent: all tasks dynamic with no host timeline (dynamic_shape), unaligned transfers
with no aligned one to compare with (byte_alignment)."""

from __future__ import annotations

from test_diagnosis import compiled

from npumon.daemon.analysis.evidence import CommRead, Evidence, OpTransfers
from npumon.daemon.analysis.rules import diagnose, withheld
from npumon.daemon.model.profile import Thresholds

T = Thresholds()


def _kinds(e: Evidence) -> tuple[set[str], dict[str, str]]:
    return {b.kind for b in diagnose(e, T)}, {n.kind: n.reason for n in withheld(e, T)}


def test_all_dynamic_without_a_host_timeline_is_not_judged() -> None:
    fired, said = _kinds(Evidence(dynamic_shape_ops=512, static_ops=0))
    assert "dynamic_shape" not in fired
    assert "all 512 operator tasks ran with dynamic shapes" in said["dynamic_shape"]
    assert "no host timeline" in said["dynamic_shape"]


def test_a_host_timeline_judges_dynamic_shapes_either_way() -> None:
    fired, said = _kinds(Evidence(dynamic_shape_ops=512, static_ops=0, host=compiled(5, 2.0, 0.02)))
    assert "dynamic_shape" in fired and "dynamic_shape" not in said
    fired, said = _kinds(Evidence(dynamic_shape_ops=512, static_ops=0, host=compiled(0, 0.0, 0.0)))
    assert "dynamic_shape" not in fired and "dynamic_shape" not in said  # judged: no cost


def test_static_tasks_leave_nothing_to_say() -> None:
    assert "dynamic_shape" not in _kinds(Evidence(dynamic_shape_ops=512, static_ops=832))[1]


def _comm(*transfers: tuple[int, float, float]) -> CommRead:
    return CommRead(None, (), (), transfers=(OpTransfers("hcom_allReduce_", transfers),))


def test_unaligned_transfers_with_nothing_to_compare_are_not_judged() -> None:
    base = T.byte_alignment_bytes
    fired, said = _kinds(Evidence(communication=_comm((base * 10 + 416, 2, 0.5))))
    assert "byte_alignment" not in fired
    assert f"not a multiple of {base} B" in said["byte_alignment"]
    assert "no aligned transfer" in said["byte_alignment"]


def test_unaligned_transfers_beside_aligned_ones_are_judged() -> None:
    base = T.byte_alignment_bytes
    slower = _comm((base * 10 + 416, 2, 0.5), (base * 10, 2, 0.1))
    fired, said = _kinds(Evidence(communication=slower))
    assert "byte_alignment" in fired and "byte_alignment" not in said
    faster = _comm((base * 10 + 416, 2, 0.1), (base * 10, 2, 0.5))
    fired, said = _kinds(Evidence(communication=faster))
    assert "byte_alignment" not in fired and "byte_alignment" not in said  # judged: no cost
