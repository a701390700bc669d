"""Whole real exports (tests/fixtures/msprof/trees, see SOURCES.md): every number asserted is
computed here from the files themselves, with csv, json and sqlite3."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from analysis_helpers import FIXTURES

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.model.profile import Thresholds

TREES = FIXTURES / "trees"
OUT = "ASCEND_PROFILER_OUTPUT"


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return [{k.strip(): v.strip() for k, v in r.items() if k} for r in csv.DictReader(handle)]


def _ranks(tree: str) -> list[Path]:
    return sorted((TREES / tree).glob("rank*_ascend_pt"))


def _kernels(tree: str) -> list[dict[str, str]]:
    return [r for rank in _ranks(tree) for r in _csv(rank / OUT / "kernel_details.csv")]


def _stage_us(tree: str) -> float:
    return sum(float(r["Stage"]) for rank in _ranks(tree)
               for r in _csv(rank / OUT / "step_trace_time.csv"))


def test_level1_shares_agree_with_and_without_op_statistic(tmp_path: Path) -> None:
    full = analyze_path(TREES / "text_level1").summary
    stats = [r for rank in _ranks("text_level1") for r in _csv(rank / OUT / "op_statistic.csv")]
    assert full.op_total_seconds == pytest.approx(sum(float(r["Total Time(us)"]) for r in stats)
                                                  / 1e6)
    shutil.copytree(TREES / "text_level1", tmp_path / "t")
    for table in (tmp_path / "t").glob(f"*/{OUT}/op_statistic.csv"):
        table.unlink()
    bare = analyze_path(tmp_path / "t").summary
    with_stat = {(o.op_type, o.core_type): o.ratio for o in full.op_time_ratio}
    without = {(o.op_type, o.core_type): o.ratio for o in bare.op_time_ratio}
    assert with_stat.keys() == without.keys()
    for key, ratio in with_stat.items():
        assert without[key] == pytest.approx(ratio, abs=0.01)
    compute = [r for r in _kernels("text_level1") if r["Accelerator Core"] != "HCCL"]
    assert bare.op_total_seconds == pytest.approx(
        sum(float(r["Duration(us)"]) for r in compute) / 1e6)


def test_level1_communication_is_its_own_family() -> None:
    summary = analyze_path(TREES / "text_level1").summary
    hccl = [r for r in _kernels("text_level1") if r["Accelerator Core"] == "HCCL"]
    assert hccl and all(r["Type"].startswith("hcom_allReduce") for r in hccl)
    (share,) = summary.communication
    hccl_us = sum(float(r["Duration(us)"]) for r in hccl)
    assert (share.collective, share.count) == ("all_reduce", len(hccl))
    assert share.seconds == pytest.approx(hccl_us / 1e6)
    assert share.ratio == pytest.approx(hccl_us / _stage_us("text_level1"))
    assert all(o.op_type != "hcom_allReduce_" for o in summary.op_time_ratio)
    cores = {c.core_type: c.ratio for c in summary.core_type_time_ratio}
    assert "communication" not in cores and "dsa_sqe" in cores
    assert sum(cores.values()) == pytest.approx(1.0)
    dsa = [r for r in _kernels("text_level1") if r["Accelerator Core"] == "DSA_SQE"]
    assert cores["dsa_sqe"] == pytest.approx(
        sum(float(r["Duration(us)"]) for r in dsa) / 1e6 / summary.op_total_seconds, rel=1e-3)


def test_level0_hcom_kernels_are_communication_not_operators() -> None:
    summary = analyze_path(TREES / "text_level0").summary
    rows = _kernels("text_level0")
    hcom = [r for r in rows if r["Name"].startswith("hcom_")]
    assert len(hcom) == 8 and summary.op_types_inferred
    assert summary.op_total_seconds == pytest.approx(
        sum(float(r["Duration(us)"]) for r in rows if r not in hcom) / 1e6)
    assert summary.communication[0].collective == "all_reduce"
    assert summary.communication[0].seconds == pytest.approx(
        sum(float(r["Duration(us)"]) for r in hcom) / 1e6)
    # Level0 and Level1 of one job: the same top operator and share within 1 %
    level1 = analyze_path(TREES / "text_level1").summary
    assert summary.op_time_ratio[0].op_type == level1.op_time_ratio[0].op_type
    assert summary.op_time_ratio[0].ratio == pytest.approx(level1.op_time_ratio[0].ratio, abs=0.01)


def test_pp2dp2_gap_between_stages_is_pipeline_imbalance_not_slow_rank() -> None:
    summary = analyze_path(TREES / "pp2dp2_level2").summary
    assert summary.peer_groups == (("rank0", "rank1"), ("rank2", "rank3"))
    kinds = {b.kind: b for b in summary.bottlenecks}
    assert "slow_rank" not in kinds
    computing = [float(_csv(r / OUT / "step_trace_time.csv")[0]["Computing"])
                 for r in _ranks("pp2dp2_level2")]
    stages = [(computing[0] + computing[1]) / 2, (computing[2] + computing[3]) / 2]
    mean_step = sum(r.step_seconds for r in summary.ranks) / 4
    assert kinds["pipeline_imbalance"].value == pytest.approx(
        (stages[1] - stages[0]) / 1e6 / mean_step)
    # the step and its phases are those of one rank (the slowest): they add up
    phases = {p.phase: p.seconds for p in summary.phases}
    assert summary.step is not None
    assert summary.step.mean_seconds == pytest.approx(
        phases["computing"] + phases["communication"] + phases["free"])


def test_without_metadata_every_rank_is_a_peer(tmp_path: Path) -> None:
    shutil.copytree(TREES / "pp2dp2_level2", tmp_path / "t")
    for meta in (tmp_path / "t").glob("*/profiler_metadata.json"):
        meta.unlink()
    kinds = {b.kind: b for b in analyze_path(tmp_path / "t").summary.bottlenecks}
    assert "pipeline_imbalance" not in kinds
    assert kinds["slow_rank"].detail.startswith("rank3 ")


def test_slow_rank_among_peers(tmp_path: Path) -> None:
    """SYNTHETIC edit of a real 2-rank export: rank1 computes 25 % longer."""
    shutil.copytree(TREES / "text_level1", tmp_path / "t")
    table = tmp_path / "t" / "rank1_ascend_pt" / OUT / "step_trace_time.csv"
    row = _csv(table)[0]
    extra = float(row["Computing"]) * 0.25
    row["Computing"] = str(float(row["Computing"]) + extra)
    row["Free"] = str(float(row["Free"]) - extra)
    with table.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(row))
        writer.writeheader()
        writer.writerow(row)
    summary = analyze_path(tmp_path / "t", Thresholds(rank_spread_ratio=0.01)).summary
    slow = next(b for b in summary.bottlenecks if b.kind == "slow_rank")
    assert slow.detail.startswith("rank1 ") and "rank0" in slow.detail


def _comm_totals(tree: str) -> tuple[float, float, dict[str, list[float]]]:
    wait = transit = 0.0
    links: dict[str, list[float]] = {}
    for rank in _ranks(tree):
        data = json.loads((rank / OUT / "communication.json").read_text())
        for step in data.values():
            for kind in step.values():
                if not kind:  # "p2p": [] when a step had no point-to-point transfers
                    continue
                total = kind["Total Op Info"]
                wait += total["Communication Time Info"]["Wait Time(ms)"]
                transit += total["Communication Time Info"]["Transit Time(ms)"]
                for link, bw in total["Communication Bandwidth Info"].items():
                    acc = links.setdefault(link, [0.0, 0.0])
                    acc[0] += bw["Transit Size(MB)"]
                    acc[1] += bw["Transit Time(ms)"]
    return wait, transit, links


@pytest.mark.parametrize("tree", ["text_level1", "pp2dp2_level2"])
def test_communication_json_wait_transfer_and_bandwidth(tree: str) -> None:
    summary = analyze_path(TREES / tree).summary
    wait, transit, links = _comm_totals(tree)
    assert summary.comm_times is not None
    assert summary.comm_times.wait_seconds == pytest.approx(wait / 1e3)
    assert summary.comm_times.transit_seconds == pytest.approx(transit / 1e3)
    hccs = next(x for x in summary.links if x.link_type == "HCCS")
    assert hccs.bandwidth_bytes_per_second == pytest.approx(
        links["HCCS"][0] / links["HCCS"][1] * 1e9)
    assert {x.link_type for x in summary.links} == {k for k, v in links.items() if v[0] or v[1]}


def test_slow_link_against_the_expected_bandwidth() -> None:
    quiet = analyze_path(TREES / "text_level1").summary
    assert "slow_link" not in {b.kind for b in quiet.bottlenecks}  # 15.6 GB/s of 18
    strict = Thresholds(link_expected_gbps={"HCCS": 40.0})
    found = [b for b in analyze_path(TREES / "text_level1", strict).summary.bottlenecks
             if b.kind == "slow_link"]
    assert len(found) == 1 and found[0].detail.startswith("HCCS ")
    _, _, links = _comm_totals("text_level1")
    assert found[0].value == pytest.approx(links["HCCS"][0] / links["HCCS"][1] / 40.0)


def test_db_export_matches_its_own_database() -> None:
    root = TREES / "db_level1" / "rank0_ascend_pt" / OUT
    summary = analyze_path(TREES / "db_level1").summary
    db = sqlite3.connect(f"file:{root / 'ascend_pytorch_profiler_0.db'}?mode=ro", uri=True)
    compute_us = db.execute("SELECT SUM(t.endNs - t.startNs) / 1000.0 FROM TASK t JOIN "
                            "COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId").fetchone()[0]
    comm_us, comm_n = db.execute(
        "SELECT SUM(endNs - startNs) / 1000.0, COUNT(*) FROM COMMUNICATION_OP").fetchone()
    top = db.execute(
        "SELECT s.value, SUM(t.endNs - t.startNs) FROM TASK t JOIN COMPUTE_TASK_INFO c ON "
        "c.globalTaskId = t.globalTaskId JOIN STRING_IDS s ON s.id = c.opType GROUP BY 1 "
        "ORDER BY 2 DESC LIMIT 1").fetchone()
    steps = sqlite3.connect(f"file:{root / 'analysis.db'}?mode=ro", uri=True).execute(
        "SELECT computing, communication_not_overlapped, free FROM StepTraceTime").fetchone()
    assert sorted(p.name for p in root.iterdir()) == ["analysis.db", "ascend_pytorch_profiler_0.db"]
    assert summary.op_total_seconds == pytest.approx(compute_us / 1e6)
    assert summary.communication[0].seconds == pytest.approx(comm_us / 1e6)
    assert summary.communication[0].count == comm_n
    assert summary.op_time_ratio[0].op_type == top[0]
    assert summary.step is not None
    assert summary.step.mean_seconds == pytest.approx(sum(steps) / 1e6)
    # the text export of the same job is another run: it agrees only roughly
    text = analyze_path(TREES / "text_level1").summary
    by_type = {o.op_type: o.ratio for o in text.op_time_ratio}
    for share in summary.op_time_ratio[:5]:
        assert share.ratio == pytest.approx(by_type[share.op_type], abs=0.02)
