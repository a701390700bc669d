"""msprof-analyze's byte alignment rule on communication.json's per-op Size Distribution, on the
real Level1 export (unaligned all-reduce transfers) and the CANN 8.3 one (all aligned)."""

from __future__ import annotations

import json
import sqlite3

import pytest
from analysis_helpers import FIXTURES

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.model.profile import Thresholds

TREES = FIXTURES / "trees"


def _transfers(tree: str) -> list[tuple[str, int, int, float, str]]:
    """(op, size B, transfers, ms, file) of every SDMA-link Size Distribution entry of every op
    (an op per step and rank: the same name in two ranks' files is two ops)."""
    found = []
    for path in sorted((TREES / tree).glob("*/ASCEND_PROFILER_OUTPUT/communication.json")):
        for step in json.loads(path.read_text()).values():
            for group in step.values():
                for name, op in group.items() if isinstance(group, dict) else ():
                    if name == "Total Op Info":
                        continue
                    for link in ("HCCS", "PCIE", "SIO"):
                        sizes = op["Communication Bandwidth Info"][link]["Size Distribution"]
                        found += [
                            (name, round(float(mb) * 1e6), n, ms, str(path))
                            for mb, (n, ms) in sizes.items()
                        ]
    return found


def test_unaligned_all_reduce_transfers_are_found() -> None:
    transfers = [t for t in _transfers("text_level1") if t[1] > 512]
    off = [t for t in transfers if t[1] % 512]
    assert (1937312, 2) in {(t[1], t[2]) for t in off}  # 1,937,312 B = 3783 x 512 + 416
    (found,) = [
        b
        for b in analyze_path(TREES / "text_level1").summary.bottlenecks
        if b.kind == "byte_alignment"
    ]
    ops, off_ops = {(t[4], t[0]) for t in transfers}, {(t[4], t[0]) for t in off}
    assert found.value == len(off_ops) == 4 and found.threshold == 1
    assert f"{len(off_ops)} of {len(ops)} communication ops" in found.detail
    assert f"{sum(t[3] for t in off):.3f} ms of transfer" in found.detail
    assert f"{sum(t[1] * t[2] for t in off) / 1e6:.1f} MB" in found.detail
    longest = max(off, key=lambda t: t[3])
    assert f"{longest[0].split('@')[0]} {longest[1]:,} B ({longest[3]:.3f} ms)" in found.detail
    assert "512 bytes" in found.advice


def test_aligned_transfers_fire_nothing() -> None:
    transfers = [t for t in _transfers("pp2dp2_level2") if t[1] > 512]
    assert transfers and all(t[1] % 512 == 0 for t in transfers)
    kinds = {b.kind for b in analyze_path(TREES / "pp2dp2_level2").summary.bottlenecks}
    assert "byte_alignment" not in kinds


@pytest.mark.parametrize(("base", "fires"), [(32, False), (64, True)])
def test_alignment_size_is_configurable(base: int, fires: bool) -> None:
    """text_level1's transfers are all multiples of 32 B; 1,937,312 B is not one of 64 B."""
    sizes = {t[1] for t in _transfers("text_level1") if t[1] > 32}
    assert all(s % 32 == 0 for s in sizes) and any(s % 64 for s in sizes)
    summary = analyze_path(TREES / "text_level1", Thresholds(byte_alignment_bytes=base)).summary
    assert ("byte_alignment" in {b.kind for b in summary.bottlenecks}) is fires


def test_db_export_reads_the_same_sizes_from_analysis_db() -> None:
    """export_type=db: CommAnalyzerBandwidth's package_size rows are the size distribution."""
    db = sqlite3.connect(next((TREES / "db_level1").glob("*/ASCEND_PROFILER_OUTPUT/analysis.db")))
    rows = db.execute(
        "SELECT hccl_op_name, package_size, count, total_duration FROM "
        "CommAnalyzerBandwidth WHERE count > 0 AND transport_type IN "
        "('HCCS', 'PCIE', 'SIO')"
    ).fetchall()
    db.close()
    judged = [(op, round(mb * 1e6), n, ms) for op, mb, n, ms in rows if round(mb * 1e6) > 512]
    off = [t for t in judged if t[1] % 512]
    (found,) = [
        b
        for b in analyze_path(TREES / "db_level1").summary.bottlenecks
        if b.kind == "byte_alignment"
    ]
    assert found.value == len({t[0] for t in off}) == 2
    assert f"of {len({t[0] for t in judged})} communication ops" in found.detail
    assert f"{sum(t[3] for t in off):.3f} ms of transfer" in found.detail


@pytest.mark.parametrize(
    ("aligned_bytes", "aligned_ms", "fires"),
    [
        (8e6, 1.0, True),  # aligned 8 GB/s, unaligned 4 GB/s: bandwidth lost
        (4e6, 1.0, False),  # both 4 GB/s: nothing lost, nothing at stake
        (0.0, 0.0, False),  # no aligned transfer to tell a loss by
    ],
)
def test_only_a_bandwidth_loss_fires(aligned_bytes: float, aligned_ms: float, fires: bool) -> None:
    from npumon.daemon.analysis.rules.byte_alignment import AlignStat, _byte_alignment

    stat = AlignStat(4, 2, 8e6, 2.0, aligned_bytes, aligned_ms, (("allReduce", 1000, 1.0),))
    assert bool(_byte_alignment(stat, Thresholds())) is fires
