"""export_type=db exports (tests/fixtures/msprof/trees/db_level*, see SOURCES.md) read to parity
with the text ones: every number asserted is computed here from the database with sqlite3."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from analysis_helpers import FIXTURES

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.model.profile import Thresholds

TREES = FIXTURES / "trees"
OUT = "ASCEND_PROFILER_OUTPUT"
LEVEL0 = TREES / "db_level0" / "rank0_ascend_pt" / OUT
LEVEL1 = TREES / "db_level1" / "rank0_ascend_pt" / OUT


def _db(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)


def _compute(db: sqlite3.Connection, where: str = "1") -> tuple[float, int]:
    us, n = db.execute(
        "SELECT SUM(t.endNs - t.startNs) / 1000.0, COUNT(*) FROM TASK t JOIN COMPUTE_TASK_INFO c "
        "ON c.globalTaskId = t.globalTaskId JOIN STRING_IDS s ON s.id = c.name "
        f"JOIN STRING_IDS k ON k.id = t.taskType WHERE {where}").fetchone()
    return float(us or 0.0), int(n)


def test_level0_db_operators_by_inferred_type_communication_apart() -> None:
    """Level0: COMPUTE_TASK_INFO's opType and taskType are N/A for every task; the collectives of
    COMMUNICATION_OP carry names. Op types come from the kernel names (aclnnX_Y_Type -> Type,
    as text Level0), core types from TASK's task type."""
    db = _db(LEVEL0 / "ascend_pytorch_profiler_0.db")
    assert db.execute("SELECT DISTINCT o.value FROM COMPUTE_TASK_INFO c JOIN STRING_IDS o ON "
                      "o.id = c.opType").fetchall() == [("N/A",)]
    total_us, _ = _compute(db)
    foreach_us, foreach_n = _compute(db, "s.value LIKE 'aclnn%\\_ForeachAddList' ESCAPE '\\'")
    transdata_us, _ = _compute(
        db, "s.value LIKE 'aclnn%\\_TransData' ESCAPE '\\' OR s.value LIKE 'trans\\_TransData\\_%'"
            " ESCAPE '\\'")
    aivec_us, _ = _compute(db, "k.value = 'KERNEL_AIVEC'")
    comm_us, comm_n = db.execute(
        "SELECT SUM(endNs - startNs) / 1000.0, COUNT(*) FROM COMMUNICATION_OP").fetchone()
    summary = analyze_path(TREES / "db_level0").summary
    assert summary.op_types_inferred
    assert summary.op_total_seconds == pytest.approx(total_us / 1e6)
    top = summary.op_time_ratio[0]
    assert (top.op_type, top.core_type, top.count) == ("ForeachAddList", "ai_vector_core",
                                                       foreach_n)
    assert top.ratio == pytest.approx(foreach_us / total_us)
    assert all(o.op_type != "unknown" for o in summary.op_time_ratio)
    by_type = {o.op_type: o.ratio for o in summary.op_time_ratio}
    assert by_type["TransData"] == pytest.approx(transdata_us / total_us)
    cores = {c.core_type: c.ratio for c in summary.core_type_time_ratio}
    assert cores["ai_vector_core"] == pytest.approx(aivec_us / total_us)
    assert "unknown" not in cores and "communication" not in cores
    (share,) = summary.communication
    assert (share.collective, share.count) == ("all_reduce", comm_n)
    assert share.seconds == pytest.approx(comm_us / 1e6)


def test_level0_db_agrees_with_the_text_level0_export_of_the_same_job() -> None:
    """Another run of the same job exported as text: the same op types, shares within 1 %."""
    db = analyze_path(TREES / "db_level0").summary
    text = analyze_path(TREES / "text_level0").summary
    text_types = {o.op_type: o.ratio for o in text.op_time_ratio}
    for share in db.op_time_ratio[:8]:
        assert share.ratio == pytest.approx(text_types[share.op_type], abs=0.01)


def _analysis(path: Path, sql: str) -> list[tuple[object, ...]]:
    return _db(path / "analysis.db").execute(sql).fetchall()


def test_level1_db_communication_from_analysis_db() -> None:
    """CommAnalyzerTime / CommAnalyzerBandwidth give what communication.json gives a text
    export: times, per-link bandwidth, the transfer share of the step (and so its tier)."""
    ((elapse, transit, wait, idle),) = _analysis(LEVEL1, "SELECT SUM(elapse_time), "
                                                 "SUM(transit_time), SUM(wait_time), "
                                                 "SUM(idle_time) FROM CommAnalyzerTime")
    links = dict((str(k), (float(mb), float(ms))) for k, mb, ms in _analysis(
        LEVEL1, "SELECT transport_type, SUM(transit_size), SUM(transit_time) FROM (SELECT "
                "DISTINCT hccl_op_name, group_name, step, transport_type, transit_size, "
                "transit_time FROM CommAnalyzerBandwidth) GROUP BY 1"))
    ((step_us,),) = _analysis(LEVEL1, "SELECT SUM(computing + communication_not_overlapped + "
                                      "free) FROM StepTraceTime")
    summary = analyze_path(TREES / "db_level1").summary
    assert summary.comm_times is not None
    assert (summary.comm_times.elapse_seconds, summary.comm_times.transit_seconds,
            summary.comm_times.wait_seconds, summary.comm_times.idle_seconds) == pytest.approx(
        (elapse / 1e3, transit / 1e3, wait / 1e3, idle / 1e3))
    assert {x.link_type for x in summary.links} == {k for k, (mb, _) in links.items() if mb}
    for link in summary.links:
        mb, ms = links[link.link_type]
        assert link.transit_bytes == pytest.approx(mb * 1e6)
        assert link.bandwidth_bytes_per_second == pytest.approx(mb / ms * 1e9)
    assert summary.comm_transfer_ratio == pytest.approx(transit * 1e3 / step_us)
    (found,) = [b for b in summary.bottlenecks if b.kind == "communication"]
    assert f"is {transit * 1e3 / step_us:.1%} of the step (fine: " in found.detail


def test_level1_db_slow_link_and_small_packets() -> None:
    """The same rules as on text: thresholds set so the db's own figures cross them."""
    hccs_mb, hccs_ms = _analysis(LEVEL1, "SELECT SUM(transit_size), SUM(transit_time) FROM "
                                 "(SELECT DISTINCT hccl_op_name, transport_type, transit_size, "
                                 "transit_time FROM CommAnalyzerBandwidth) WHERE "
                                 "transport_type = 'HCCS'")[0]
    sdma = [float(mb) for (mb,) in _analysis(
        LEVEL1, "SELECT transit_size FROM (SELECT DISTINCT hccl_op_name, transit_size FROM "
                "CommAnalyzerBandwidth WHERE transport_type = 'SDMA' AND transit_size > 0)")]
    t = Thresholds(link_expected_gbps={"HCCS": 56.0}, small_packet_sdma_mb=50.0)
    summary = analyze_path(TREES / "db_level1", t).summary
    slow = next(b for b in summary.bottlenecks if b.kind == "slow_link")
    gbps = hccs_mb / hccs_ms
    assert f"HCCS moved {hccs_mb:.1f} MB at {gbps:.1f} GB/s, {gbps / 56:.0%}" in slow.detail
    assert "rank pair(s) in communication_matrix.json" in slow.detail  # CommAnalyzerMatrix
    small = [mb for mb in sdma if mb < 50.0]
    packets = next(b for b in summary.bottlenecks if b.kind == "small_packets")
    assert f"{len(small)} of {len(sdma)} SDMA transfers" in packets.detail
    assert packets.value == pytest.approx(len(small) / len(sdma))
