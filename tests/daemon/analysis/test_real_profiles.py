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
from npumon.daemon.analysis.html import render
from npumon.daemon.model.profile import Thresholds
from npumon.daemon.model.rank_hardware import RankHardware

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
    return sum(
        float(r["Stage"]) for rank in _ranks(tree) for r in _csv(rank / OUT / "step_trace_time.csv")
    )


def test_level1_shares_agree_with_and_without_op_statistic(tmp_path: Path) -> None:
    full = analyze_path(TREES / "text_level1").summary
    stats = [r for rank in _ranks("text_level1") for r in _csv(rank / OUT / "op_statistic.csv")]
    assert full.op_total_seconds == pytest.approx(
        sum(float(r["Total Time(us)"]) for r in stats) / 1e6
    )
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
        sum(float(r["Duration(us)"]) for r in compute) / 1e6
    )


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
        sum(float(r["Duration(us)"]) for r in dsa) / 1e6 / summary.op_total_seconds, rel=1e-3
    )


def test_level0_hcom_kernels_are_communication_not_operators() -> None:
    summary = analyze_path(TREES / "text_level0").summary
    rows = _kernels("text_level0")
    hcom = [r for r in rows if r["Name"].startswith("hcom_")]
    assert len(hcom) == 8 and summary.op_types_inferred
    assert summary.op_total_seconds == pytest.approx(
        sum(float(r["Duration(us)"]) for r in rows if r not in hcom) / 1e6
    )
    assert summary.communication[0].collective == "all_reduce"
    assert summary.communication[0].seconds == pytest.approx(
        sum(float(r["Duration(us)"]) for r in hcom) / 1e6
    )
    # Level0 and Level1 of one job: the same top operator and share within 1 %
    level1 = analyze_path(TREES / "text_level1").summary
    assert summary.op_time_ratio[0].op_type == level1.op_time_ratio[0].op_type
    assert summary.op_time_ratio[0].ratio == pytest.approx(level1.op_time_ratio[0].ratio, abs=0.01)


def test_pp2dp2_gap_between_stages_is_pipeline_imbalance_not_slow_rank() -> None:
    summary = analyze_path(TREES / "pp2dp2_level2").summary
    assert summary.peer_groups == (("rank0", "rank1"), ("rank2", "rank3"))
    kinds = {b.kind: b for b in summary.bottlenecks}
    assert "slow_rank" not in kinds
    computing = [
        float(_csv(r / OUT / "step_trace_time.csv")[0]["Computing"])
        for r in _ranks("pp2dp2_level2")
    ]
    stages = [(computing[0] + computing[1]) / 2, (computing[2] + computing[3]) / 2]
    mean_step = sum(r.step_seconds for r in summary.ranks) / 4
    assert kinds["pipeline_imbalance"].value == pytest.approx(
        (stages[1] - stages[0]) / 1e6 / mean_step
    )
    # the step and its phases are those of one rank (the slowest): they add up
    phases = {p.phase: p.seconds for p in summary.phases}
    assert summary.step is not None
    assert summary.step.mean_seconds == pytest.approx(
        phases["computing"] + phases["communication"] + phases["free"]
    )


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
    assert "NPU" not in slow.detail  # no telemetry given: nothing said of the chip
    # the daemon's telemetry of the capture window: the slow rank's own chip was throttled
    hot = RankHardware(1, 5, 0, 10, 0.31, "power", 1.1e9, 1.8e9, 70.0)
    cool = RankHardware(0, 4, 0, 10, 0.0)
    told = analyze_path(
        tmp_path / "t", Thresholds(rank_spread_ratio=0.01), hardware=(cool, hot)
    ).summary
    slow = next(b for b in told.bottlenecks if b.kind == "slow_rank")
    assert slow.detail.endswith(
        "; rank 1 on NPU 5: throttled by power 31% of the window; AI Core clock 1.1 of 1.8 GHz"
    )
    # the same slowness, its chip and ports quiet: the cause lies elsewhere
    quiet = analyze_path(
        tmp_path / "t",
        Thresholds(rank_spread_ratio=0.01),
        hardware=(cool, RankHardware(1, 5, 0, 10, 0.0)),
    ).summary
    slow = next(b for b in quiet.bottlenecks if b.kind == "slow_rank")
    assert "rank 1 on NPU 5: nothing seen on this node's chip or ports" in slow.detail


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
        links["HCCS"][0] / links["HCCS"][1] * 1e9
    )
    assert {x.link_type for x in summary.links} == {k for k, v in links.items() if v[0] or v[1]}


def test_slow_link_against_the_expected_bandwidth() -> None:
    quiet = analyze_path(TREES / "text_level1").summary
    assert "slow_link" not in {b.kind for b in quiet.bottlenecks}  # 15.6 GB/s of 18
    strict = Thresholds(link_expected_gbps={"HCCS": 40.0})
    found = [
        b
        for b in analyze_path(TREES / "text_level1", strict).summary.bottlenecks
        if b.kind == "slow_link"
    ]
    assert len(found) == 1 and found[0].detail.startswith("HCCS ")
    _, _, links = _comm_totals("text_level1")
    assert found[0].value == pytest.approx(links["HCCS"][0] / links["HCCS"][1] / 40.0)


def _matrix_pairs(rank: Path) -> dict[tuple[str, str, str], list[float]]:
    """{(link, src, dst): [MB, ms]} of a rank's communication_matrix.json: its "-total" ops (the
    top1/middle/bottom ones repeat single ops), LOCAL (a rank to itself) left out."""
    pairs: dict[tuple[str, str, str], list[float]] = {}
    data = json.loads((rank / OUT / "communication_matrix.json").read_text())
    for step in data.values():
        for kind in step.values():
            for op_name, op in (kind or {}).items():
                if not op_name.split("@")[0].endswith("-total"):
                    continue
                for key, entry in op.items():
                    if entry["Transport Type"] == "LOCAL":
                        continue
                    src, dst = key.split("-")
                    acc = pairs.setdefault((entry["Transport Type"], src, dst), [0.0, 0.0])
                    acc[0] += entry["Transit Size(MB)"]
                    acc[1] += entry["Transit Time(ms)"]
    return pairs


def test_slow_link_names_the_slowest_rank_pairs_of_the_matrix() -> None:
    strict = Thresholds(link_expected_gbps={"HCCS": 40.0})
    (slow,) = [
        b
        for b in analyze_path(TREES / "text_level1", strict).summary.bottlenecks
        if b.kind == "slow_link"
    ]
    pairs = {k: v for rank in _ranks("text_level1") for k, v in _matrix_pairs(rank).items()}
    hccs = sorted(
        (mb / ms, src, dst) for (link, src, dst), (mb, ms) in pairs.items() if link == "HCCS"
    )
    named = ", ".join(f"{src}->{dst} {gbps:.1f} GB/s" for gbps, src, dst in hccs[:3])
    assert (
        f"; slowest of its {len(hccs)} rank pair(s) in communication_matrix.json: {named}; "
        in slow.detail
    )
    assert [src for _, src, _ in hccs[:3]] == ["1", "1", "1"]  # rank1's links are the slowest


@pytest.mark.parametrize("removed", [("rank0", "rank1"), ("rank1",)])
def test_matrix_gives_the_link_bandwidth_without_communication_json(
    tmp_path: Path, removed: tuple[str, ...]
) -> None:
    """SYNTHETIC edit of the real text_level1 export: communication.json deleted from some ranks,
    whose communication_matrix.json then gives their link totals."""
    shutil.copytree(TREES / "text_level1", tmp_path / "t")
    for rank in removed:
        (tmp_path / "t" / f"{rank}_ascend_pt" / OUT / "communication.json").unlink()
    summary = analyze_path(tmp_path / "t").summary
    mb = ms = 0.0
    for rank in _ranks("text_level1"):
        if rank.name.split("_")[0] in removed:
            mb += sum(v[0] for (link, _, _), v in _matrix_pairs(rank).items() if link == "HCCS")
            ms += sum(v[1] for (link, _, _), v in _matrix_pairs(rank).items() if link == "HCCS")
        else:
            block = json.loads((rank / OUT / "communication.json").read_text())["step50"][
                "collective"
            ]["Total Op Info"]["Communication Bandwidth Info"]["HCCS"]
            mb += block["Transit Size(MB)"]
            ms += block["Transit Time(ms)"]
    hccs = next(x for x in summary.links if x.link_type == "HCCS")
    assert hccs.transit_bytes == pytest.approx(mb * 1e6)
    assert hccs.bandwidth_bytes_per_second == pytest.approx(mb / ms * 1e9)
    assert "LOCAL" not in {x.link_type for x in summary.links}
    assert (summary.comm_times is None) == (len(removed) == 2)


def test_transfer_share_of_the_step_and_its_checklist_tier() -> None:
    """text_level1: transit over the step time of both ranks; its communication finding (75 %
    not overlapped) says the transfer itself is under the checklist's 5 % tier. pp2dp2_level2
    (CANN 8.3) records almost no Transit Time while its links moved GBs: unknown, no tier."""
    summary = analyze_path(TREES / "text_level1").summary
    _, transit_ms, _ = _comm_totals("text_level1")
    step_us = sum(
        float(r["Computing"]) + float(r["Communication(Not Overlapped)"]) + float(r["Free"])
        for rank in _ranks("text_level1")
        for r in _csv(rank / OUT / "step_trace_time.csv")
    )
    assert summary.comm_transfer_ratio == pytest.approx(transit_ms * 1e3 / step_us)
    assert summary.comm_transfer_ratio < Thresholds().communication_notice_ratio
    (found,) = [b for b in summary.bottlenecks if b.kind == "communication"]
    assert f"is {transit_ms * 1e3 / step_us:.1%} of the step (fine: " in found.detail
    other = analyze_path(TREES / "pp2dp2_level2").summary
    _, transit_ms, links = _comm_totals("pp2dp2_level2")
    assert transit_ms * 384 < links["HCCS"][1]  # 0.036 ms of transit, 368 ms on HCCS
    assert other.comm_transfer_ratio is None
    assert all("data transfer" not in b.detail for b in other.bottlenecks)


def test_db_export_matches_its_own_database() -> None:
    root = TREES / "db_level1" / "rank0_ascend_pt" / OUT
    summary = analyze_path(TREES / "db_level1").summary
    db = sqlite3.connect(f"file:{root / 'ascend_pytorch_profiler_0.db'}?mode=ro", uri=True)
    compute_us = db.execute(
        "SELECT SUM(t.endNs - t.startNs) / 1000.0 FROM TASK t JOIN "
        "COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId"
    ).fetchone()[0]
    comm_us, comm_n = db.execute(
        "SELECT SUM(endNs - startNs) / 1000.0, COUNT(*) FROM COMMUNICATION_OP"
    ).fetchone()
    top = db.execute(
        "SELECT s.value, SUM(t.endNs - t.startNs) FROM TASK t JOIN COMPUTE_TASK_INFO c ON "
        "c.globalTaskId = t.globalTaskId JOIN STRING_IDS s ON s.id = c.opType GROUP BY 1 "
        "ORDER BY 2 DESC LIMIT 1"
    ).fetchone()
    steps = (
        sqlite3.connect(f"file:{root / 'analysis.db'}?mode=ro", uri=True)
        .execute("SELECT computing, communication_not_overlapped, free FROM StepTraceTime")
        .fetchone()
    )
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


# msprof-analyze's environment check, restated from its rule table (the values it flags), as
# npumon judges it: the host caches only when the device is free over free_ratio (20 %) of the
# step, PYTORCH_NPU_ALLOC_CONF never (device-memory fragmentation is not in a profile)
def _advisor_env_flags(env: dict[str, str], free_ratio: float = 1.0) -> set[str]:
    def num(v: str) -> int | None:
        return int(v) if v.strip().lstrip("-").isdigit() else None

    flags = {
        "ASCEND_GLOBAL_LOG_LEVEL": lambda v: v != "" and num(v) != 3,
        "HCCL_RDMA_TC": lambda v: v != "",
        "HCCL_RDMA_SL": lambda v: v != "",
        "ACLNN_CACHE_LIMIT": lambda v: v == "" or (num(v) or 0) < 10000,
        "HOST_CACHE_CAPACITY": lambda v: v == "" or num(v) == 0,
        "PYTORCH_NPU_ALLOC_CONF": lambda v: "expandable_segments:True" not in v,
        "ASCEND_LAUNCH_BLOCKING": lambda v: num(v) == 1,
        "HCCL_ALGO": lambda v: v != "",
    }
    found = {k for k, v in env.items() if k in flags and flags[k](v)}
    if free_ratio <= 0.20:
        found -= {"ACLNN_CACHE_LIMIT", "HOST_CACHE_CAPACITY"}
    return found - {"PYTORCH_NPU_ALLOC_CONF"}


def _free_ratio(tree: Path) -> float:
    (free,) = [p.ratio for p in analyze_path(tree).summary.phases if p.phase == "free"]
    assert free is not None
    return free


def _env(rank: Path) -> dict[str, str]:
    return json.loads((rank / "profiler_metadata.json").read_text())["ENV_VARIABLES"]


def _all_ranks(tree: str) -> list[Path]:
    return sorted((TREES / tree).glob("rank*_ascend_pt"))


@pytest.mark.parametrize("tree", ["text_level0", "text_level1", "pp2dp2_level2"])
def test_env_vars_from_profiler_metadata(tree: str) -> None:
    free = _free_ratio(TREES / tree)
    flagged = set().union(*(_advisor_env_flags(_env(r), free) for r in _all_ranks(tree)))
    found = [b for b in analyze_path(TREES / tree).summary.bottlenecks if b.kind == "env_vars"]
    if not flagged:  # the defaults alone, on a job the host does not hold back: no finding
        assert found == []
        return
    assert len(found) == 1 and found[0].value == len(flagged)
    for name in flagged:
        assert name in found[0].detail
    for name in set(_env(_all_ranks(tree)[0])) - flagged:
        assert name not in found[0].detail


def test_env_vars_launch_blocking_and_log_level(tmp_path: Path) -> None:
    """SYNTHETIC edit of a real export's metadata: debugging settings left on, on one rank."""
    shutil.copytree(TREES / "text_level1", tmp_path / "t")
    meta = tmp_path / "t" / "rank1_ascend_pt" / "profiler_metadata.json"
    data = json.loads(meta.read_text())
    data["ENV_VARIABLES"].update(
        ASCEND_LAUNCH_BLOCKING="1",
        ASCEND_GLOBAL_LOG_LEVEL="1",
        ACLNN_CACHE_LIMIT="100000",
        HOST_CACHE_CAPACITY="20",
        PYTORCH_NPU_ALLOC_CONF="expandable_segments:True",
    )
    meta.write_text(json.dumps(data))
    (tmp_path / "t" / "rank0_ascend_pt" / "profiler_metadata.json").write_text(json.dumps(data))
    found = next(
        b for b in analyze_path(tmp_path / "t").summary.bottlenecks if b.kind == "env_vars"
    )
    assert found.value == 2
    assert "ASCEND_LAUNCH_BLOCKING=1" in found.detail
    assert "ASCEND_GLOBAL_LOG_LEVEL=1" in found.detail
    assert "ACLNN_CACHE_LIMIT" not in found.detail
    assert "export ASCEND_LAUNCH_BLOCKING=0" in found.advice
    data["ENV_VARIABLES"].update(ASCEND_LAUNCH_BLOCKING="", ASCEND_GLOBAL_LOG_LEVEL="3")
    meta.write_text(json.dumps(data))  # rank1 fixed, rank0 still blocking: named by rank
    found = next(
        b for b in analyze_path(tmp_path / "t").summary.bottlenecks if b.kind == "env_vars"
    )
    assert "ASCEND_LAUNCH_BLOCKING=1 on rank0:" in found.detail


def test_no_metadata_no_env_finding(tmp_path: Path) -> None:
    shutil.copytree(TREES / "text_level1", tmp_path / "t")
    for meta in (tmp_path / "t").glob("*/profiler_metadata.json"):
        meta.unlink()
    kinds = {b.kind for b in analyze_path(tmp_path / "t").summary.bottlenecks}
    assert "env_vars" not in kinds


def _packets(rank: Path, link: str, min_mb: float) -> tuple[int, int, int]:
    """One rank's (ops that moved data over `link`, those under min_mb, the same counted as
    msprof-analyze counts them: with the Total Op Info entries)."""
    ops = small = totals = 0
    for step in json.loads((rank / OUT / "communication.json").read_text()).values():
        for group in step.values():
            for name, op in (group or {}).items():
                mb = op["Communication Bandwidth Info"].get(link, {}).get("Transit Size(MB)", 0)
                if mb > 0:
                    totals += name == "Total Op Info"
                    ops += name != "Total Op Info"
                    small += mb < min_mb
    return ops, small, ops + totals


def test_small_packets_per_rank_from_communication_json() -> None:
    counts = {
        r.name.removesuffix("_ascend_pt").replace("_", ""): r for r in _all_ranks("pp2dp2_level2")
    }
    figures = {name: _packets(rank, "SDMA", 16.0) for name, rank in counts.items()}
    found = [
        b
        for b in analyze_path(TREES / "pp2dp2_level2").summary.bottlenecks
        if b.kind == "small_packets"
    ]
    worst = max(small / ops for ops, small, _ in figures.values())
    assert len(found) == 1 and found[0].value == pytest.approx(worst)
    assert found[0].detail.startswith("SDMA transfers under 16 MB in 4 of 4 rank(s), worst: ")
    ops, small, _ = figures["rank3"]
    assert f"rank3: {small} of {ops} ({small / ops:.0%})" in found[0].detail
    # msprof-analyze's advisor on this tree judges rank 0 and prints 30 %, 0.8065 ms: it counts
    # the two Total Op Info entries (collective, p2p) as ops, which npumon leaves out
    ops, small, advisor_ops = figures["rank0"]
    assert (small, ops, advisor_ops) == (3, 8, 10)
    assert "Total Op Info" in found[0].detail
    assert all(_packets(r, "RDMA", 1.0)[0] == 0 for r in counts.values())  # one node: no RDMA


def test_small_packets_quiet_on_large_all_reduces() -> None:
    for rank in _all_ranks("text_level1"):
        ops, small, _ = _packets(rank, "SDMA", 16.0)
        assert ops and small / ops <= 0.2
    kinds = {b.kind for b in analyze_path(TREES / "text_level1").summary.bottlenecks}
    assert "small_packets" not in kinds
    # the same transfers judged against a 64 MB minimum: the smaller all-reduces count
    ratios = [
        small / ops
        for ops, small, _ in (_packets(r, "SDMA", 64.0) for r in _all_ranks("text_level1"))
    ]
    strict = analyze_path(TREES / "text_level1", Thresholds(small_packet_sdma_mb=64.0)).summary
    found = [b for b in strict.bottlenecks if b.kind == "small_packets"]
    assert max(ratios) > 0.2 and found[0].value == pytest.approx(max(ratios))


def test_level0_slow_rank_by_communication() -> None:
    """text_level0: both ranks compute alike, rank0 spends longer in communication: it waits for
    rank1 (msprof-analyze's slow rank "communication" on the same export)."""
    rows = {
        r.name.split("_")[0]: _csv(r / OUT / "step_trace_time.csv")[0]
        for r in _all_ranks("text_level0")
    }
    comm = {k: float(v["Communication(Not Overlapped)"]) for k, v in rows.items()}
    steps = [float(v["Computing"]) + comm[k] + float(v["Free"]) for k, v in rows.items()]
    gap = (comm["rank0"] - comm["rank1"]) / (sum(steps) / len(steps))
    assert gap > 0.05
    found = [
        b for b in analyze_path(TREES / "text_level0").summary.bottlenecks if b.kind == "slow_rank"
    ]
    assert len(found) == 1 and found[0].value == pytest.approx(gap)
    assert found[0].detail.startswith("rank1 reaches the collectives late")
    assert f"{(comm['rank0'] - comm['rank1']) / 1e3:.1f} ms more" in found[0].detail
    # text_level1's ranks differ by less: no finding (msprof-analyze: none either)
    kinds = {b.kind for b in analyze_path(TREES / "text_level1").summary.bottlenecks}
    assert "slow_rank" not in kinds


def _vector_groups(tree: str) -> dict[tuple[str, str, str], tuple[float, float, float, float]]:
    """msprof-analyze's vector operator selection, restated with csv: op types of >= 1 % of all
    operator time; (name, shapes) -> (duration, mean vec, mte2, mte3)."""
    rows = _kernels(tree)
    total = sum(float(r["Duration(us)"]) for r in rows)
    vector = [
        r
        for r in rows
        if r["Accelerator Core"] in ("AI_VECTOR_CORE", "MIX_AIV")
        and r["Input Shapes"]
        and r["Output Shapes"]
    ]
    by_type: dict[str, float] = {}
    for r in vector:
        by_type[r["Type"]] = by_type.get(r["Type"], 0.0) + float(r["Duration(us)"])
    groups: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    for r in vector:
        if by_type[r["Type"]] / total >= 0.01:
            groups.setdefault((r["Name"], r["Input Shapes"], r["Output Shapes"]), []).append(r)

    def mean(rs: list[dict[str, str]], col: str) -> float:
        return sum(float(r[col]) for r in rs) / len(rs)

    return {
        k: (
            sum(float(r["Duration(us)"]) for r in rs),
            mean(rs, "aiv_vec_ratio"),
            mean(rs, "aiv_mte2_ratio"),
            mean(rs, "aiv_mte3_ratio"),
        )
        for k, rs in groups.items()
    }


def test_operator_pmu_vector_operators_level1() -> None:
    groups = _vector_groups("text_level1")
    bound = {
        k for k, (_, v, m2, m3) in groups.items() if v + m2 + m3 >= 0.9 or max(v, m2, m3) >= 0.7
    }
    room = {
        k: max(0.7 - v, 0.7 - m2, 0.7 - m3)
        for k, (_, v, m2, m3) in groups.items()
        if k not in bound
    }
    every = Thresholds(operator_pmu_shape_share=0.0)  # msprof-analyze's way: every shape judged
    found = [
        b
        for b in analyze_path(TREES / "text_level1", every).summary.bottlenecks
        if b.kind == "operator_pmu"
    ]
    assert len(found) == 1 and found[0].value == len(groups)
    assert f"{len(room)} with headroom" in found[0].detail
    assert f"{len(bound)} bound" in found[0].detail
    (name, shapes, _), most = max(room.items(), key=lambda kv: kv[1])
    assert f"up to {most:.0%} below 70%" in found[0].detail
    assert f"most: {name} [{shapes.strip(chr(34))}]" in found[0].detail
    longest = max(bound, key=lambda k: groups[k][0])
    assert f"longest: {longest[0]} [" in found[0].detail


def test_operator_pmu_names_only_shapes_that_matter() -> None:
    """On text_level1 the vector shapes with headroom are 2-107 us each, together 0.8 % of the
    224 ms of operator time: none reaches operator_pmu_shape_share, so no finding (the advisor
    lists them). At 0.02 % each the ones over it are judged and the rest counted."""
    groups = _vector_groups("text_level1")
    total = sum(float(r["Duration(us)"]) for r in _kernels("text_level1"))
    room = {
        k: us for k, (us, v, m2, m3) in groups.items() if v + m2 + m3 < 0.9 and max(v, m2, m3) < 0.7
    }
    assert room and max(room.values()) < Thresholds().operator_pmu_shape_share * total
    kinds = {b.kind for b in analyze_path(TREES / "text_level1").summary.bottlenecks}
    assert "operator_pmu" not in kinds
    share = Thresholds(operator_pmu_shape_share=0.0002)
    (found,) = [
        b
        for b in analyze_path(TREES / "text_level1", share).summary.bottlenecks
        if b.kind == "operator_pmu"
    ]
    named = [us for us in (v[0] for v in groups.values()) if us >= 0.0002 * total]
    assert found.value == len(named)
    assert f"({len(groups) - len(named)} smaller shape(s), " in found.detail
    assert len(found.detail) < 1000


def test_operator_pmu_needs_the_pmu_columns() -> None:
    """Level0 tables have no PMU or shape columns, op_statistic-only exports no per-task rows."""
    assert "aiv_vec_ratio" not in _kernels("text_level0")[0]
    for tree in ("text_level0", "pp2dp2_level2"):
        kinds = {b.kind for b in analyze_path(TREES / tree).summary.bottlenecks}
        assert "operator_pmu" not in kinds


def test_operator_pmu_thresholds_move_the_lists() -> None:
    groups = _vector_groups("text_level1")
    strict = Thresholds(
        pmu_vector_unit_ratio=1.0, pmu_vector_total_ratio=3.1, operator_pmu_shape_share=0.0
    )  # none bound
    found = next(
        b
        for b in analyze_path(TREES / "text_level1", strict).summary.bottlenecks
        if b.kind == "operator_pmu"
    )
    assert "bound" not in found.detail and f"{len(groups)} with headroom" in found.detail
    # every unit "bound": nothing has headroom, and an all-bound profile is no finding
    loose = Thresholds(pmu_vector_unit_ratio=0.0, operator_pmu_shape_share=0.0)
    kinds = {b.kind for b in analyze_path(TREES / "text_level1", loose).summary.bottlenecks}
    assert "operator_pmu" not in kinds


def test_level0_dynamic_shape_unknown_not_all_dynamic() -> None:
    """msprof-analyze reports dynamic shapes on text_level0 because its text reader assumes the
    OP State column and finds no "static" value; the Level0 table has no such column, so npumon
    says unknown. On text_level1, where every row says dynamic, both report it."""
    assert "OP State" not in _kernels("text_level0")[0]
    level0 = analyze_path(TREES / "text_level0").summary
    assert level0.dynamic_shape_op_count is None
    assert "dynamic_shape" not in {b.kind for b in level0.bottlenecks}
    states = {r["OP State"] for r in _kernels("text_level1")}
    assert "static" not in states
    level1 = analyze_path(TREES / "text_level1").summary
    assert "dynamic_shape" in {b.kind for b in level1.bottlenecks}


def test_operator_pmu_reads_a_bounded_head_of_a_big_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from npumon.daemon.analysis.readers import tables as readers

    (path,) = (TREES / "text_level1" / "rank0_ascend_pt").rglob("kernel_details.csv")
    rows = len(_kernels_of(path))
    whole = readers.read_pmu([path])
    assert whole is not None and len(whole.frame) == rows and whole.notes == ()
    head = readers.read_pmu([path], max_bytes=16 << 10)
    assert head is not None and 0 < len(head.frame) < rows
    data = path.read_bytes()
    start = readers.read_head(path).data_start
    # every line that starts inside the first 16 KB after the header, none cut
    assert len(head.frame) == data[start : start + (16 << 10)].count(b"\n") + 1
    assert head.notes == (
        f"{path}: operator PMU ratios judged on its first {len(head.frame):,} tasks (0.015625 MB)",
    )
    from npumon.daemon.analysis import analysis

    # two ranks' kernel tables share the budget: 16 KB each
    monkeypatch.setattr(analysis, "PMU_MAX_BYTES", 32 << 10)
    monkeypatch.setattr(analysis, "PMU_MIN_BYTES", 4 << 10)
    every = Thresholds(operator_pmu_shape_share=0.0)
    found = [
        b
        for b in analyze_path(TREES / "text_level1", every).summary.bottlenecks
        if b.kind == "operator_pmu"
    ]
    assert len(found) == 1 and "judged on its first" in found[0].detail


def _kernels_of(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _step_tables(tree: str) -> dict[str, list[dict[str, float]]]:
    """Per rank (as npumon names it), the step table's rows: csv or analysis.db, read here."""
    found: dict[str, list[dict[str, float]]] = {}
    for unit in _ranks(tree):
        rank = "rank" + unit.name.removesuffix("_ascend_pt").removeprefix("rank").lstrip("_")
        table, db = unit / OUT / "step_trace_time.csv", unit / OUT / "analysis.db"
        if table.exists():
            found[rank] = [{k: float(v) for k, v in r.items() if v} for r in _csv(table)]
        else:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                cells = con.execute(
                    "SELECT communication_not_overlapped, overlapped, communication "
                    "FROM StepTraceTime"
                ).fetchall()
            finally:
                con.close()
            found[rank] = [
                dict(
                    zip(
                        ("Communication(Not Overlapped)", "Overlapped", "Communication"),
                        c,
                        strict=True,
                    )
                )
                for c in cells
            ]
    return found


@pytest.mark.parametrize(
    "tree", ["text_level0", "text_level1", "pp2dp2_level2", "db_level0", "db_level1"]
)
def test_overlap_agrees_with_every_step_table(tree: str) -> None:
    """Every real torch_npu export: per rank, the JSON's communication (not overlapped) and
    communication_overlapped (within computing) and the overlap chart's figures are the step
    table's Communication(Not Overlapped), Overlapped and Communication (one step per rank in
    these captures)."""
    report = analyze_path(TREES / tree)
    html = render(report)
    tables = _step_tables(tree)
    assert sorted(tables) == sorted(r.rank for r in report.summary.ranks)
    for r in report.summary.ranks:
        (row,) = tables[r.rank]
        exposed, hidden = row["Communication(Not Overlapped)"], row["Overlapped"]
        total = row["Communication"]
        assert exposed + hidden == pytest.approx(total)
        by = {p.phase: p for p in r.phases}
        assert by["communication"].seconds == pytest.approx(exposed / 1e6)
        assert by["communication_overlapped"].seconds == pytest.approx(hidden / 1e6)
        assert by["communication_overlapped"].within == "computing"
        assert (
            f"<td>{r.rank}</td><td>{total / 1e3:,.3f}</td><td>{exposed / 1e3:,.3f}</td>"
            f"<td>{hidden / 1e3:,.3f}</td>"
        ) in html
        assert f"{total / 1e3:,.3f} ms per step, {exposed / total:.1%} not overlapped" in html
    assert "overlap unknown" not in html.lower()


@pytest.mark.parametrize("tree", ["mindspore22_cluster", "mindspore22_run1", "synthetic_tf_legacy"])
def test_overlap_unknown_without_a_split(tree: str) -> None:
    """Graph-mode step tables (MindSpore, msprof) do not split communication: no overlapped
    phase, no overlap chart, and where the profile has communication the page says the overlap
    is unknown."""
    report = analyze_path(TREES / tree)
    html = render(report)
    phases = [p.phase for r in report.summary.ranks for p in r.phases]
    assert "communication_overlapped" not in phases
    assert "Communication overlapped with compute or not" not in html
    has_comm = bool(report.summary.communication) or report.summary.comm_times is not None
    assert ("Overlap with compute unknown" in html) == has_comm
