"""affinity_api, msprof-analyze's affinity API rule, on real host timelines: trace_view.json of the
text_level1 export and of msprof-analyze's own advisor test, and PYTORCH_API of the db exports.
The expected sequences are computed here from the files with json / sqlite3."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from analysis_helpers import FIXTURES

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.analysis.evidence import Evidence
from npumon.daemon.analysis.readers import affinity
from npumon.daemon.analysis.rules import affinity_api
from npumon.daemon.model.profile import Thresholds

TREES = FIXTURES / "trees"
OUT = "ASCEND_PROFILER_OUTPUT"


def _finding(tree: Path, t: Thresholds | None = None) -> list[tuple[str, str, float]]:
    return [
        (b.detail, b.advice, b.value)
        for b in analyze_path(tree, t or Thresholds()).summary.bottlenecks
        if b.kind == "affinity_api"
    ]


def _optimizer_steps(events: list[dict[str, object]]) -> list[float]:
    return [
        float(str(e["dur"]))
        for e in events
        if str(e.get("name", "")).startswith("Optimizer.step#SGD.step") and e.get("ph") == "X"
    ]


def test_text_level1_names_npu_fused_sgd_and_no_aten_replacement() -> None:
    """The advisor names one API on this export, torch_npu.optim.NpuFusedSGD (its SGD step), and no
    aten sequence, although the trace holds transpose, view, mul and add ranges."""
    events = json.loads(
        (TREES / "text_level1" / "rank0_ascend_pt" / OUT / "trace_view.json").read_text()
    )
    (step_us,) = _optimizer_steps(events)
    names = {str(e.get("name")) for e in events}
    assert {"aten::transpose", "aten::view", "aten::mul"} <= names
    ((detail, advice, value),) = _finding(TREES / "text_level1")
    assert "Optimizer.step#SGD.step ran 1 time(s) in 1 of 1 rank(s)" in detail
    assert f"{step_us / 1e3:.3f} ms of host time: torch_npu.optim.NpuFusedSGD" in detail
    assert detail.startswith("1 torch API(s)")
    assert advice.endswith("Here: use torch_npu.optim.NpuFusedSGD.")
    assert value == 1.0


def test_code_location_from_the_call_stack() -> None:
    """text_level1 was captured with_stack=True: the SGD step's "Call stack" names torch's
    frames first, then the script's; the finding names the script's line, as the advisor's
    "Code stacks" column holds it (whole there)."""
    events = json.loads(
        (TREES / "text_level1" / "rank0_ascend_pt" / OUT / "trace_view.json").read_text()
    )
    (step,) = [e for e in events if e.get("name") == "Optimizer.step#SGD.step"]
    frames = [f.strip() for f in step["args"]["Call stack"].split(";")]
    own = next(f for f in frames if "site-packages" not in f and "/lib/python" not in f)
    assert own == "/home/z30057886/imagenet_script/main.py(366): train"
    ((detail, _, _),) = _finding(TREES / "text_level1")
    assert detail.endswith(
        "torch_npu.optim.NpuFusedSGD, called from "
        "/home/z30057886/imagenet_script/main.py:366 (train) 1 time(s)"
    )


def test_no_call_stack_says_how_to_get_one(tmp_path: Path) -> None:
    """msprof-analyze's advisor test timeline has no "Call stack" args (no with_stack)."""
    path = FIXTURES / "trace_view_mstt_advisor_2024-01_adam.json"
    assert "Call stack" not in path.read_text()
    (tmp_path / "rank0_ascend_pt" / OUT).mkdir(parents=True)
    shutil.copyfile(path, tmp_path / "rank0_ascend_pt" / OUT / "trace_view.json")
    timeline = affinity.read_trace("rank0", tmp_path / "rank0_ascend_pt", [])
    assert timeline is not None
    (found,) = affinity_api.judge(Evidence(timelines=(timeline,)), Thresholds())
    assert found.detail.endswith(
        "torch_npu.optim.NpuFusedAdam (no call stack in the capture: profile with "
        "with_stack=True to get its code line)"
    )


@pytest.mark.parametrize("tree", ["db_level0", "db_level1"])
def test_db_exports_read_pytorch_api(tree: str) -> None:
    db = TREES / tree / "rank0_ascend_pt" / OUT / "ascend_pytorch_profiler_0.db"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        ((start, end),) = con.execute(
            "SELECT p.startNs, p.endNs FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name "
            "WHERE s.value = 'Optimizer.step#SGD.step'"
        ).fetchall()
    ((detail, _, _),) = _finding(TREES / tree)
    ms = (int(end) - int(start)) / 1e6
    assert f"Optimizer.step#SGD.step ran 1 time(s) in 1 of 1 rank(s), {ms:.3f} ms" in detail


def test_msprof_analyze_advisor_trace_names_npu_fused_adam(tmp_path: Path) -> None:
    """msprof-analyze's own advisor test timeline (an Adam job); msprof-analyze names
    torch_npu.optim.NpuFusedAdam only (checked with msprof-analyze 26.2.0 by hand)."""
    root = tmp_path / "rank0_ascend_pt"
    (root / OUT).mkdir(parents=True)
    shutil.copyfile(
        FIXTURES / "trace_view_mstt_advisor_2024-01_adam.json", root / OUT / "trace_view.json"
    )
    events = json.loads((root / OUT / "trace_view.json").read_text())
    (adam,) = [e for e in events if e.get("name") == "Optimizer.step#Adam.step"]
    timeline = affinity.read_trace("rank0", root, [])
    assert timeline is not None
    (match,) = affinity_api.find([timeline])
    assert (match.replacement, match.calls) == ("torch_npu.optim.NpuFusedAdam", 1)
    assert match.host_ns == round(float(str(adam["dur"])) * 1e3)


def test_first_level_aten_ranges_only() -> None:
    """The aten sequence is the dispatcher's first level, as the advisor reads it: every aten range
    of the trace that lies inside an earlier one is left out, and none that does not."""
    root = TREES / "text_level1" / "rank0_ascend_pt"
    timeline = affinity.read_trace("rank0", root, [])
    assert timeline is not None
    events = json.loads((root / OUT / "trace_view.json").read_text())
    aten = sorted(
        (round(float(e["ts"]) * 1e3), round(float(e["dur"]) * 1e3))
        for e in events
        if str(e.get("name", "")).startswith("aten::") and e.get("ph") == "X"
    )
    assert len(timeline.aten) < len(aten)
    kept = [(r.start_ns, r.dur_ns) for r in timeline.aten]
    for (start, dur), (next_start, next_dur) in zip(kept, kept[1:], strict=False):
        assert not (start <= next_start and next_start + next_dur <= start + dur)


def test_no_timeline_no_finding_and_the_threshold_counts() -> None:
    """text_level0 and pp2dp2_level2 keep no trace_view.json and no db: no host timeline, no
    finding; on text_level1 one SGD step is under affinity_api_min_calls 2."""
    assert _finding(TREES / "text_level0") == []
    assert _finding(TREES / "pp2dp2_level2") == []
    assert _finding(TREES / "text_level1", Thresholds(affinity_api_min_calls=2)) == []


def _event(name: str, ts_us: float, dur_us: float) -> dict[str, object]:
    return {
        "ph": "X",
        "name": name,
        "pid": 1,
        "tid": 1,
        "ts": f"{ts_us:.3f}",
        "dur": dur_us,
        "cat": "cpu_op",
        "args": {"Sequence number": -1},
    }


def test_aten_patterns_synthetic(tmp_path: Path) -> None:
    """SYNTHETIC (no public timeline holds an aten sequence the advisor's patterns match): a rotary
    embedding written out (chunk, neg, cat, mul, mul, add) twice, a permute-contiguous-view with
    a nested aten::view inside the permute, a chunk-silu-mul and a gelu; an AdamW step."""
    rotary = ["chunk", "neg", "cat", "mul", "mul", "add"]
    ops = [*rotary, *rotary, "permute", "contiguous", "view", "chunk", "silu", "mul", "gelu"]
    events, ts = [], 1736408883688177.0
    for op in ops:
        events.append(_event(f"aten::{op}", ts, 10.0))
        if op == "permute":
            events.append(_event("aten::view", ts + 1, 2.0))  # nested: not in the sequence
        ts += 20.0
    events.append(_event("Optimizer.step#AdamW.step", ts, 500.0))
    root = tmp_path / "rank0_ascend_pt"
    (root / OUT).mkdir(parents=True)
    (root / OUT / "trace_view.json").write_text(json.dumps(events))
    timeline = affinity.read_trace("rank0", root, [])
    assert timeline is not None
    found = {m.replacement: (m.calls, m.host_ns) for m in affinity_api.find([timeline])}
    assert found == {
        "torch_npu.npu_rotary_mul": (2, 2 * 6 * 10_000),
        "torch_npu.npu_confusion_transpose": (1, 3 * 10_000),
        "torch_npu.npu_swiglu": (1, 3 * 10_000),
        "torch_npu.fast_gelu": (1, 10_000),
        "torch.addmm": (2, 2 * 3 * 10_000),  # mul-mul-add inside each rotary: each pattern is
        # matched on its own, as msprof-analyze does
        "torch_npu.optim.NpuFusedAdamW": (1, 500_000),
    }


def test_events_cut_by_the_chunk_boundary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader scans in chunks: with chunks of 97 characters every event crosses one, and the
    sequence read is the same as with one chunk."""
    root = TREES / "text_level1" / "rank0_ascend_pt"
    whole = affinity.read_trace("rank0", root, [])
    monkeypatch.setattr(affinity, "_CHUNK", 97)
    small = tmp_path / "rank0_ascend_pt"
    (small / OUT).mkdir(parents=True)
    events = json.loads((root / OUT / "trace_view.json").read_text())
    kept = [e for e in events if str(e.get("name", "")).startswith(("aten::", "Optimizer."))][:400]
    (small / OUT / "trace_view.json").write_text(json.dumps(kept))
    cut = affinity.read_trace("rank0", small, [])
    monkeypatch.setattr(affinity, "_CHUNK", 8 << 20)
    one = affinity.read_trace("rank0", small, [])
    assert whole is not None and cut is not None and one is not None
    assert cut == one and len(one.aten) > 100
    assert any(r.where for r in one.aten)  # call stacks read across the cuts too
