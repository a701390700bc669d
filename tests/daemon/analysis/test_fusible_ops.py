"""fusible_ops, msprof-analyze's fusible operator rule, on the real Qwen3 export (pp2dp2_level2
with rank 0's kernel_details.csv). msprof-analyze 26.2.0's advisor on this tree (rank 0, its
slow rank by free time) says: 75 sequences, 2,943.36 ms end to end, 1,874.901 ms of NPU time.
The windows are restated here with the csv module."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from analysis_helpers import FIXTURES

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.model.profile import Thresholds

KERNELS = FIXTURES / "kernel_details_torchnpu_cann8.3rc1_qwen3_rank0.csv"
OUT = "ASCEND_PROFILER_OUTPUT"


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "pp2dp2_level2"
    shutil.copytree(FIXTURES / "trees" / "pp2dp2_level2", root)
    shutil.copyfile(KERNELS, root / "rank_0_ascend_pt" / OUT / "kernel_details.csv")
    return root


def _f(cell: str) -> float:
    try:
        return float(cell.strip())
    except ValueError:
        return 0.0


def _windows() -> tuple[float, dict[tuple[str, ...], list[tuple[float, float, bool]]]]:
    """The rank's span and, per operator run (name, shapes), its host- or MTE-bound windows of
    3-10 compute tasks: (start, end, MTE-bound)."""
    with KERNELS.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    tasks = []
    for r in rows:
        mte = max(_f(r["aic_mte2_time(us)"]), _f(r["aiv_mte2_time(us)"])) + max(
            _f(r["aic_fixpipe_time(us)"]), _f(r["aiv_mte3_time(us)"])
        )
        blocked = r["Accelerator Core"] in ("HCCL", "COMMUNICATION", "AI_CPU") or r[
            "Name"
        ].lower().startswith(("hcom", "lccl", "lcoc"))
        key = (r["Name"], r["Input Shapes"], r["Output Shapes"])
        tasks.append(
            (
                key,
                _f(r["Start Time(us)"]),
                _f(r["Duration(us)"]),
                mte,
                _f(r["aicore_time(us)"]),
                blocked,
            )
        )
    span = max(s + d for _, s, d, *_ in tasks) - min(s for _, s, *_ in tasks)
    found: dict[tuple[str, ...], list[tuple[float, float, bool]]] = {}
    for i in range(len(tasks)):
        busy = mte = core = 0.0
        for j in range(i, min(i + 10, len(tasks))):
            key, start, dur, m, c, blocked = tasks[j]
            if blocked:
                break
            busy, mte, core = busy + dur, mte + m, core + c
            if j - i < 2:
                continue
            wall = start + dur - tasks[i][1]
            host = wall > 0 and busy < 0.4 * wall
            mte_bound = core > 0 and mte > 0.8 * core
            if host or mte_bound:
                run = tuple(x for t in tasks[i : j + 1] for x in t[0])
                found.setdefault(run, []).append((tasks[i][1], start + dur, mte_bound))
    return span, found


def test_fusible_sequences_on_qwen3_counted_once(tmp_path: Path) -> None:
    span, windows = _windows()
    reported = {
        k: w
        for k, w in windows.items()
        if len(w) > 5 and (any(m for *_, m in w) or sum(b - a for a, b, _ in w) > 0.01 * span)
    }
    merged, end = 0.0, None
    for a, b in sorted((a, b) for w in reported.values() for a, b, _ in w):
        if end is None or a > end:
            merged, end = merged + b - a, b
        elif b > end:
            merged, end = merged + b - end, b
    (found,) = [
        b for b in analyze_path(_tree(tmp_path)).summary.bottlenecks if b.kind == "fusible_ops"
    ]
    assert found.value == pytest.approx(merged / span)
    assert 0.3 < found.value < 0.5  # the advisor's 2,943 ms is 3.6 spans of this table
    assert f"cover {merged / 1e3:.3f} ms, {merged / span:.0%} of its kernel table's " in (
        found.detail
    )
    assert found.detail.startswith("rank0: 66 operator sequence(s)")  # the advisor: 75
    # the advisor's way, every reported window's wall time added: near its 2,943.36 ms
    assert "adds up the overlapping windows: 2922.787 ms" in found.detail


def test_fusible_threshold_and_tables_without_pmu_times(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    high = Thresholds(fusible_ops_ratio=0.5)
    assert "fusible_ops" not in {b.kind for b in analyze_path(root, high).summary.bottlenecks}
    # Level1 kernel tables without PipeUtilization times are not judged, as the advisor skips them
    for tree in ("text_level0", "pp2dp2_level2"):
        kinds = {b.kind for b in analyze_path(FIXTURES / "trees" / tree).summary.bottlenecks}
        assert "fusible_ops" not in kinds


def test_operator_pmu_names_a_shape_that_matters_on_qwen3(tmp_path: Path) -> None:
    """RmsNormGrad [4096,1,1024;...] is 0.96 % of rank 0's operator time with headroom: named;
    the 2-17 us shapes are counted, not named."""
    (found,) = [
        b for b in analyze_path(_tree(tmp_path)).summary.bottlenecks if b.kind == "operator_pmu"
    ]
    assert "1 with headroom (a PMU unit up to 57% below 70%), most: RmsNormGrad [4096,1,1024;" in (
        found.detail
    )
    assert "smaller shape(s)" in found.detail and len(found.detail) < 1000
