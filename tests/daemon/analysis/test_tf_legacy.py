"""The seed's workflow: TensorFlow profiling_options -> msprof --export=on -> PROF_*/device_N/
summary/ with step_trace, op_summary and op_statistic tables per {device}_{model}_{iteration}.
The model with the most iterations is analysed, iterations <= warmup_steps are left out, steps
split into FP/BP, Grad Refresh and Data Aug Bound. Figures computed here with csv."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from analysis_helpers import FIXTURES

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.model.profile import Thresholds

TREE = FIXTURES / "trees" / "synthetic_tf_legacy"
SUMMARY = next(TREE.glob("PROF_*/device_0/summary"))


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return [{k: v.strip() for k, v in r.items()} for r in csv.DictReader(handle)]


def _iterations() -> dict[int, list[dict[str, str]]]:
    by_model: dict[int, list[dict[str, str]]] = {}
    for path in SUMMARY.glob("step_trace_*.csv"):
        for row in _rows(path):
            by_model.setdefault(int(row["Model ID"]), []).append(row)
    return by_model


def _op_us(model: int, after: int) -> float:
    total = 0.0
    for path in SUMMARY.glob("op_summary_*.csv"):
        ids = re.fullmatch(r"op_summary_(\d+)_(\d+)_(\d+)\.csv", path.name)
        assert ids is not None
        if int(ids[2]) == model and int(ids[3]) > after:
            total += sum(float(r["Task Duration(us)"]) for r in _rows(path))
    return total


def test_model_with_most_iterations_past_warmup() -> None:
    by_model = _iterations()
    assert len(by_model) == 2  # the training graph and an init graph
    model = max(by_model, key=lambda m: len(by_model[m]))
    kept = [r for r in by_model[model] if int(r["Iteration ID"]) > 2]
    summary = analyze_path(TREE).summary
    assert summary.layout == "legacy" and summary.mode == "graph"
    assert summary.step is not None and summary.step.count == len(kept) == 6
    mean = sum(float(r["Iteration Time(us)"]) for r in kept) / len(kept)
    assert summary.step.mean_seconds == pytest.approx(mean / 1e6)
    phases = {p.phase: p for p in summary.phases}
    for phase, column in (
        ("fp_bp", "FP to BP Time(us)"),
        ("iteration_refresh", "Grad Refresh Bound(us)"),
        ("data_aug", "Data Aug Bound(us)"),
    ):
        value = sum(float(r[column]) for r in kept) / len(kept)
        assert phases[phase].seconds == pytest.approx(value / 1e6)
        assert phases[phase].ratio == pytest.approx(value / mean)
    # the operators of the same model and iterations: the init graph's AI CPU ops and the first
    # iteration's GetNext init are not the steady state
    assert summary.op_total_seconds == pytest.approx(_op_us(model, 2) / 1e6)
    assert summary.ai_cpu_count == 0
    kinds = {b.kind: b for b in summary.bottlenecks}
    assert "ai_cpu_fallback" not in kinds
    aug = phases["data_aug"]
    assert kinds["input_pipeline"].value == pytest.approx(aug.ratio)
    assert f"{aug.seconds * 1e3:.3f} ms per iteration" in kinds["input_pipeline"].detail


def test_warmup_zero_keeps_every_iteration_of_the_model() -> None:
    summary = analyze_path(TREE, Thresholds(warmup_steps=0)).summary
    assert summary.step is not None and summary.step.count == 8
    assert summary.op_total_seconds == pytest.approx(_op_us(6, 0) / 1e6)
    assert {b.kind for b in summary.bottlenecks} >= {"ai_cpu_fallback"}  # GetNext init, iter 1
