"""MindSpore <= 2.2 communication (hccl_raw_N.csv) on MindInsight's real 4-rank pipeline-parallel
test job (trees/mindspore22_cluster): transit, wait, SDMA link size and time, and the packet
sizes msprof-analyze's packet rule judges, each computed here from the CSVs with csv and json."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from analysis_helpers import FIXTURES

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.model.profile import Thresholds

TREE = FIXTURES / "trees" / "mindspore22_cluster"
PROFILER = TREE / "profiler"


def _steps(rank: int) -> list[dict[str, str]]:
    with (PROFILER / f"hccl_raw_{rank}.csv").open(encoding="utf-8", newline="") as handle:
        return [r for r in csv.DictReader(handle) if r["step_num"].isdigit()]


def _sdma(link_info: dict[str, dict[str, list[float]]]) -> tuple[float, float]:
    """(kB, ms) over SDMA, a rank to itself left out."""
    pairs = [v["SDMA"] for k, v in link_info.items() if len(set(k.split("-"))) == 2 and "SDMA" in v]
    return sum(p[1] for p in pairs), sum(p[0] for p in pairs)


def test_transit_wait_and_sdma_links_from_hccl_raw() -> None:
    rows = [r for rank in range(4) for r in _steps(rank)]
    transit_ms = sum(float(r["communication_cost"]) for r in rows)
    wait_ms = sum(float(r["wait_cost"]) for r in rows)
    kb, ms = (sum(x) for x in zip(*(_sdma(json.loads(r["link_info"])) for r in rows), strict=True))
    s = analyze_path(TREE).summary
    assert s.comm_times is not None
    assert s.comm_times.transit_seconds == pytest.approx(transit_ms / 1e3)
    assert s.comm_times.wait_seconds == pytest.approx(wait_ms / 1e3)
    assert s.comm_times.elapse_seconds == pytest.approx((transit_ms + wait_ms) / 1e3)
    (link,) = s.links
    assert link.link_type == "SDMA"
    assert link.transit_bytes == pytest.approx(kb * 1e3)
    assert link.transit_seconds == pytest.approx(ms / 1e3)
    assert link.bandwidth_bytes_per_second == pytest.approx(kb * 1e3 / (ms / 1e3))
    assert 10e9 < link.bandwidth_bytes_per_second < 30e9  # kB and ms: an HCCS-class figure
    assert s.comm_transfer_ratio is not None and s.comm_transfer_ratio > 0


def test_small_packets_fire_on_the_per_op_sizes() -> None:
    ratios = []
    for rank in range(4):
        sizes = [
            _sdma(op[3])[0]
            for r in _steps(rank)
            for op in json.loads(r["communication_operator_cost"]).values()
        ]
        moved = [kb for kb in sizes if kb > 0]
        small = [kb for kb in moved if kb / 1e3 < Thresholds().small_packet_sdma_mb]
        ratios.append((len(small) / len(moved), rank, len(small), len(moved)))
    (found,) = [b for b in analyze_path(TREE).summary.bottlenecks if b.kind == "small_packets"]
    worst = max(ratios, key=lambda r: (r[0], -r[1]))
    assert f"worst: rank{worst[1]}: {worst[2]} of {worst[3]} (" in found.detail
    assert found.value == pytest.approx(worst[0])


def test_a_bad_hccl_raw_cell_is_a_problem_line(tmp_path: Path) -> None:
    """A cell that is not JSON is a clear problem line; the rank's steps are still read."""
    root = tmp_path / "profiler"
    shutil.copytree(PROFILER, root)
    text = (root / "hccl_raw_0.csv").read_text()
    (root / "hccl_raw_0.csv").write_text(text.replace('{""1-0""', '{""1-0', 1))
    report = analyze_path(tmp_path)
    (note,) = [p for p in report.problems if "hccl_raw_0.csv" in p]
    assert "not JSON" in note
    assert {r.rank for r in report.summary.ranks} == {"rank0", "rank1", "rank2", "rank3"}
