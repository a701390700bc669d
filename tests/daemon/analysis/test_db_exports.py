"""export_type=db exports (tests/fixtures/msprof/trees/db_level*, see SOURCES.md) read to parity
with the text ones: every number asserted is computed here from the database with sqlite3."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from analysis_helpers import FIXTURES, rows

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.analysis.readers import sqlite_host
from npumon.daemon.analysis.readers.tables import read_pmu
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
        f"JOIN STRING_IDS k ON k.id = t.taskType WHERE {where}"
    ).fetchone()
    return float(us or 0.0), int(n)


def test_level0_db_operators_by_inferred_type_communication_apart() -> None:
    """Level0: COMPUTE_TASK_INFO's opType and taskType are N/A for every task; the collectives of
    COMMUNICATION_OP carry names. Op types come from the kernel names (aclnnX_Y_Type -> Type,
    as text Level0), core types from TASK's task type."""
    db = _db(LEVEL0 / "ascend_pytorch_profiler_0.db")
    assert db.execute(
        "SELECT DISTINCT o.value FROM COMPUTE_TASK_INFO c JOIN STRING_IDS o ON o.id = c.opType"
    ).fetchall() == [("N/A",)]
    total_us, _ = _compute(db)
    foreach_us, foreach_n = _compute(db, "s.value LIKE 'aclnn%\\_ForeachAddList' ESCAPE '\\'")
    transdata_us, _ = _compute(
        db,
        "s.value LIKE 'aclnn%\\_TransData' ESCAPE '\\' OR s.value LIKE 'trans\\_TransData\\_%'"
        " ESCAPE '\\'",
    )
    aivec_us, _ = _compute(db, "k.value = 'KERNEL_AIVEC'")
    comm_us, comm_n = db.execute(
        "SELECT SUM(endNs - startNs) / 1000.0, COUNT(*) FROM COMMUNICATION_OP"
    ).fetchone()
    summary = analyze_path(TREES / "db_level0").summary
    assert summary.op_types_inferred
    assert summary.op_total_seconds == pytest.approx(total_us / 1e6)
    top = summary.op_time_ratio[0]
    assert (top.op_type, top.core_type, top.count) == (
        "ForeachAddList",
        "ai_vector_core",
        foreach_n,
    )
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
    ((elapse, transit, wait, idle),) = _analysis(
        LEVEL1,
        "SELECT SUM(elapse_time), "
        "SUM(transit_time), SUM(wait_time), "
        "SUM(idle_time) FROM CommAnalyzerTime",
    )
    links = dict(
        (str(k), (float(mb), float(ms)))
        for k, mb, ms in _analysis(
            LEVEL1,
            "SELECT transport_type, SUM(transit_size), SUM(transit_time) FROM (SELECT "
            "DISTINCT hccl_op_name, group_name, step, transport_type, transit_size, "
            "transit_time FROM CommAnalyzerBandwidth) GROUP BY 1",
        )
    )
    ((step_us,),) = _analysis(
        LEVEL1, "SELECT SUM(computing + communication_not_overlapped + free) FROM StepTraceTime"
    )
    summary = analyze_path(TREES / "db_level1").summary
    assert summary.comm_times is not None
    assert (
        summary.comm_times.elapse_seconds,
        summary.comm_times.transit_seconds,
        summary.comm_times.wait_seconds,
        summary.comm_times.idle_seconds,
    ) == pytest.approx((elapse / 1e3, transit / 1e3, wait / 1e3, idle / 1e3))
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
    hccs_mb, hccs_ms = _analysis(
        LEVEL1,
        "SELECT SUM(transit_size), SUM(transit_time) FROM "
        "(SELECT DISTINCT hccl_op_name, transport_type, transit_size, "
        "transit_time FROM CommAnalyzerBandwidth) WHERE "
        "transport_type = 'HCCS'",
    )[0]
    sdma = [
        float(mb)
        for (mb,) in _analysis(
            LEVEL1,
            "SELECT transit_size FROM (SELECT DISTINCT hccl_op_name, transit_size FROM "
            "CommAnalyzerBandwidth WHERE transport_type = 'SDMA' AND transit_size > 0)",
        )
    ]
    t = Thresholds(link_expected_gbps={"HCCS": 56.0}, small_packet_sdma_mb=50.0)
    summary = analyze_path(TREES / "db_level1", t).summary
    slow = next(b for b in summary.bottlenecks if b.kind == "slow_link")
    gbps = hccs_mb / hccs_ms
    assert f"HCCS moved {hccs_mb:.1f} MB at {gbps:.1f} GB/s, {gbps / 56:.0%}" in slow.detail
    assert "rank pair(s) in communication_matrix.json" in slow.detail  # CommAnalyzerMatrix
    small = [mb for mb in sdma if mb < 50.0]
    packets = next(b for b in summary.bottlenecks if b.kind == "small_packets")
    assert f"in 1 of 1 rank(s), worst: rank0: {len(small)} of {len(sdma)} (" in packets.detail
    assert packets.value == pytest.approx(len(small) / len(sdma))


def _pmu_groups(db: sqlite3.Connection) -> dict[tuple[str, str, str], tuple[float, ...]]:
    """(name, input shapes, output shapes) of the vector tasks whose op type has at least 1 % of
    all task time (compute and collectives) -> mean vec, mte2, mte3 ratios."""
    ratio = (
        "(SELECT p.value FROM TASK_PMU_INFO p JOIN STRING_IDS m ON m.id = p.name WHERE "
        "p.globalTaskId = c.globalTaskId AND m.value = '{}')"
    )
    rows = db.execute(
        "SELECT n.value, i.value, o.value, y.value, t.endNs - t.startNs, "
        + ", ".join(ratio.format(r) for r in ("aiv_vec_ratio", "aiv_mte2_ratio", "aiv_mte3_ratio"))
        + " FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId "
        "JOIN STRING_IDS n ON n.id = c.name JOIN STRING_IDS i ON i.id = c.inputShapes "
        "JOIN STRING_IDS o ON o.id = c.outputShapes JOIN STRING_IDS y ON y.id = c.opType "
        "JOIN STRING_IDS k ON k.id = c.taskType "
        "WHERE k.value IN ('AI_VECTOR_CORE', 'MIX_AIV')"
    ).fetchall()
    total = db.execute(
        "SELECT (SELECT SUM(t.endNs - t.startNs) FROM TASK t JOIN "
        "COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId) + (SELECT "
        "SUM(endNs - startNs) FROM COMMUNICATION_OP)"
    ).fetchone()[0]
    by_type: dict[str, int] = {}
    for row in rows:
        by_type[row[3]] = by_type.get(row[3], 0) + row[4]
    groups: dict[tuple[str, str, str], list[tuple[float, float, float]]] = {}
    for name, ins, outs, op_type, _, *ratios in rows:
        if by_type[op_type] / total >= 0.01:
            groups.setdefault((name, ins, outs), []).append((ratios[0], ratios[1], ratios[2]))
    return {k: tuple(sum(r[i] for r in rs) / len(rs) for i in range(3)) for k, rs in groups.items()}


def test_level1_db_operator_pmu_from_task_pmu_info() -> None:
    groups = _pmu_groups(_db(LEVEL1 / "ascend_pytorch_profiler_0.db"))
    bound = {k for k, (v, m2, m3) in groups.items() if v + m2 + m3 >= 0.9 or max(v, m2, m3) >= 0.7}
    room = {
        k: max(0.7 - v, 0.7 - m2, 0.7 - m3) for k, (v, m2, m3) in groups.items() if k not in bound
    }
    every = Thresholds(operator_pmu_shape_share=0.0)  # msprof-analyze's way: every shape judged
    (found,) = [
        b
        for b in analyze_path(TREES / "db_level1", every).summary.bottlenecks
        if b.kind == "operator_pmu"
    ]
    assert found.value == len(groups)
    assert f"{len(room)} with headroom" in found.detail
    assert f"{len(bound)} bound" in found.detail
    (name, shapes, _), most = max(room.items(), key=lambda kv: kv[1])
    assert f"up to {most:.0%} below 70%" in found.detail
    assert f"most: {name} [{shapes.strip(chr(34))}]" in found.detail


def test_level0_db_has_no_pmu_finding() -> None:
    db = _db(LEVEL0 / "ascend_pytorch_profiler_0.db")
    assert not db.execute("SELECT name FROM sqlite_master WHERE name = 'TASK_PMU_INFO'").fetchall()
    kinds = {b.kind for b in analyze_path(TREES / "db_level0").summary.bottlenecks}
    assert "operator_pmu" not in kinds


@pytest.mark.parametrize("tree", ["db_level0", "db_level1"])
def test_db_env_vars_from_meta_data(tree: str) -> None:
    """META_DATA's ENV_VARIABLES is profiler_metadata.json's, judged by the same rules."""
    root = TREES / tree / "rank0_ascend_pt" / OUT
    (value,) = (
        _db(root / "ascend_pytorch_profiler_0.db")
        .execute("SELECT value FROM META_DATA WHERE name = 'ENV_VARIABLES'")
        .fetchone()
    )
    env = json.loads(value)
    summary = analyze_path(TREES / tree).summary
    (free,) = [p.ratio for p in summary.phases if p.phase == "free"]
    assert free is not None
    # unset host caches: a finding when the device is free over 20 % of the step
    # (test_real_profiles restates all)
    flagged = {
        k for k in ("ACLNN_CACHE_LIMIT", "HOST_CACHE_CAPACITY") if env.get(k) == "" and free > 0.2
    }
    assert not any(env.get(k) for k in ("HCCL_RDMA_TC", "ASCEND_LAUNCH_BLOCKING"))
    found_all = [b for b in summary.bottlenecks if b.kind == "env_vars"]
    if not flagged:
        assert found_all == []
        return
    (found,) = found_all
    assert found.value == len(flagged)
    for name in flagged:
        assert f"{name} unset" in found.detail
    assert "META_DATA" in found.detail


def test_910a_pmu_column_names_are_read() -> None:
    """A real op_summary with 910A's un-prefixed PMU columns (vec_ratio, mte2_ratio, mac_ratio)."""
    name = "op_summary_old_style_mskpp_test_line.csv"
    table = read_pmu([FIXTURES / name])
    assert table is not None
    header, body = rows(name)
    (row,) = body
    frame = table.frame
    for ours, theirs in (
        ("aiv_vec_ratio", "vec_ratio"),
        ("aiv_mte2_ratio", "mte2_ratio"),
        ("aiv_mte3_ratio", "mte3_ratio"),
        ("mac_ratio", "mac_ratio"),
    ):
        assert frame[ours].iloc[0] == pytest.approx(float(row[header.index(theirs)]))


def test_910a_operator_pmu_fires_on_ai_core_vector_tasks(tmp_path: Path) -> None:
    """SYNTHETIC 910A table from text_level1's real kernel_details: the PMU columns renamed as
    910A names them, every task on AI_CORE (910A has no vector cores), the vector tasks with
    mac_ratio 0 and the cube ones with their aic_mac_ratio. The finding is the 910B one."""
    shutil.copytree(TREES / "text_level1", tmp_path / "t")
    for table in (tmp_path / "t").glob(f"*/{OUT}/kernel_details.csv"):
        with table.open(encoding="utf-8", newline="") as handle:
            header, *body = list(csv.reader(handle))
        core, mac = header.index("Accelerator Core"), header.index("aic_mac_ratio")
        for row in body:
            if row[core] in ("AI_VECTOR_CORE", "MIX_AIV"):
                row[core], row[mac] = "AI_CORE", "0"
        renamed = [
            h.removeprefix("aiv_")
            if h.endswith(("vec_ratio", "mte2_ratio", "mte3_ratio")) and h.startswith("aiv_")
            else h
            for h in header
        ]
        renamed = [h if h != "aic_mac_ratio" else "mac_ratio" for h in renamed]
        with table.open("w", encoding="utf-8", newline="") as handle:
            csv.writer(handle).writerows([renamed, *body])
    every = Thresholds(operator_pmu_shape_share=0.0)
    real = [
        b
        for b in analyze_path(TREES / "text_level1", every).summary.bottlenecks
        if b.kind == "operator_pmu"
    ]
    found = [
        b
        for b in analyze_path(tmp_path / "t", every).summary.bottlenecks
        if b.kind == "operator_pmu"
    ]
    assert len(found) == 1 and found[0].value == real[0].value
    assert found[0].detail == real[0].detail


@pytest.mark.parametrize("root", [LEVEL0, LEVEL1])
def test_host_side_figures_for_the_diagnosis(root: Path) -> None:
    """Data loader and on-line compilation time, collective sizes, as the db holds them."""
    path = root / "ascend_pytorch_profiler_0.db"
    db = _db(path)
    names = dict(db.execute("SELECT id, value FROM STRING_IDS").fetchall())

    def total(table: str, wanted: Callable[[str], bool]) -> tuple[int, float]:
        spans = [
            (int(e) - int(s))
            for s, e, n in db.execute(f"SELECT startNs, endNs, name FROM {table}")
            if wanted(names[n])
        ]
        return len(spans), sum(spans) / 1e9

    loader = sqlite_host.dataloader_time(path)
    assert loader is not None and loader.count == 1  # one step captured
    assert (loader.count, loader.seconds) == pytest.approx(
        total("PYTORCH_API", lambda n: n.startswith("enumerate(DataLoader)#"))
    )
    compiled = sqlite_host.compile_calls(path)
    assert compiled is not None and compiled.count > 0
    assert (compiled.count, compiled.seconds) == pytest.approx(
        total("CANN_API", lambda n: n == "aclopCompileAndExecute")
    )


def test_host_side_figures_absent_without_the_tables(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "x.db")
    db.execute("CREATE TABLE TASK (startNs INTEGER)")
    db.commit()
    db.close()
    assert sqlite_host.dataloader_time(tmp_path / "x.db") is None
    assert sqlite_host.compile_calls(tmp_path / "x.db") is None
