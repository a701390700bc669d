"""export_type=db exports (tests/fixtures/msprof/trees/db_level*, see SOURCES.md) read to parity
with the text ones: every number asserted is computed here from the database with sqlite3."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from analysis_helpers import FIXTURES

from npumon.daemon.analysis.analysis import analyze_path

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
