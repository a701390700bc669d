"""Preparing split into what the profile measured: the data loader (trace_view.json) and on-line
compilation (api_statistic.csv), on the real Level1 export; figures computed here with json/csv."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from analysis_helpers import FIXTURES

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.analysis.readers import host
from npumon.daemon.model.profile import Thresholds

TREE = FIXTURES / "trees" / "text_level1"
OUT = "ASCEND_PROFILER_OUTPUT"


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _step_us(rank: str) -> float:
    (row,) = _csv(TREE / rank / OUT / "step_trace_time.csv")
    return (
        float(row["Computing"]) + float(row["Communication(Not Overlapped)"]) + float(row["Free"])
    )


def _loader_us() -> float:
    events = json.loads((TREE / "rank0_ascend_pt" / OUT / "trace_view.json").read_text())
    spans = [
        float(e["dur"])
        for e in events
        if str(e.get("name", "")).startswith("enumerate(DataLoader)#") and e.get("ph") == "X"
    ]
    assert len(spans) == 1  # one step captured, one batch fetched
    return sum(spans)


def _compile(rank: str) -> tuple[float, int]:
    (row,) = [
        r
        for r in _csv(TREE / rank / OUT / "api_statistic.csv")
        if r["API Name"] == "aclopCompileAndExecute"
    ]
    return float(row["Time(us)"]), int(row["Count"])


def _preparing(rank: str) -> float:
    (row,) = _csv(TREE / rank / OUT / "step_trace_time.csv")
    return float(row["Preparing"])


def test_preparing_is_not_taken_for_the_data_loader() -> None:
    """Preparing is 13 % of rank0's step; with the threshold at 10 % the old rule said
    input_pipeline (DataLoader advice), while the data loader measured 3.3 ms = 2.4 %."""
    summary = analyze_path(TREE, Thresholds(input_pipeline_ratio=0.10)).summary
    kinds = {b.kind: b for b in summary.bottlenecks}
    assert "input_pipeline" not in kinds
    found = kinds["slow_preparing"]
    assert found.value == pytest.approx(_preparing("rank0_ascend_pt") / _step_us("rank0_ascend_pt"))
    assert "cause unknown" in found.detail
    assert f"the data loader {_loader_us() / 1e3:.3f} ms" in found.detail
    assert f"({_loader_us() / _step_us('rank0_ascend_pt'):.1%} of the step)" in found.detail
    assert f"{_preparing('rank0_ascend_pt') / 1e3:.3f} ms per step" in found.detail


def test_a_slow_data_loader_is_input_pipeline() -> None:
    summary = analyze_path(TREE, Thresholds(data_loader_ratio=0.02)).summary
    (found,) = [b for b in summary.bottlenecks if b.kind == "input_pipeline"]
    assert found.value == pytest.approx(_loader_us() / _step_us("rank0_ascend_pt"))
    assert "trace_view.json or PYTORCH_API" in found.detail and "DataLoader" in found.advice


def test_online_compilation_on_the_real_export() -> None:
    """19 aclopCompileAndExecute calls per rank: under msprof-analyze's 20, but 14 ms of host
    time in a 134 ms step (10.7 %), over the 5 % share."""
    ranks = ("rank0_ascend_pt", "rank1_ascend_pt")
    times = [_compile(r) for r in ranks]
    share = sum(us for us, _ in times) / sum(_step_us(r) for r in ranks)
    (found,) = [b for b in analyze_path(TREE).summary.bottlenecks if b.kind == "online_compile"]
    assert found.value == pytest.approx(share) and found.threshold == 0.05
    assert f"up to {max(n for _, n in times)} in one rank's capture" in found.detail
    assert f"{sum(us for us, _ in times) / 2 / 1e3:.3f} ms of host time per step" in found.detail
    assert "jit_compile=False" in found.advice
    quiet = analyze_path(TREE, Thresholds(online_compile_ratio=0.2)).summary
    assert "online_compile" not in {b.kind for b in quiet.bottlenecks}


def test_online_compilation_from_the_trace_without_api_statistic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A torch_npu export without api_statistic.csv: rank0's trace_view.json holds the same 19
    AscendCL@aclopCompileAndExecute events (14,049.23 us, api_statistic's row to the digit),
    whatever the chunk edges; a trace without them (Level0) gives no figure, not zero."""
    shutil.copytree(TREE / "rank0_ascend_pt", tmp_path / "rank0_ascend_pt")
    (tmp_path / "rank0_ascend_pt" / OUT / "api_statistic.csv").unlink()
    trace = tmp_path / "rank0_ascend_pt" / OUT / "trace_view.json"
    us, calls = _compile("rank0_ascend_pt")
    text = trace.read_text()
    at = text.index('"name": "AscendCL@aclopCompileAndExecute"')
    for chunk in (at + 3, at + 30, at + 100, 1 << 12, 8 << 20):
        monkeypatch.setattr(host, "_CHUNK", chunk)
        times = host.read(tmp_path / "rank0_ascend_pt", [])
        assert times is not None
        assert (times.compile_calls, times.data_loader_calls) == (calls, 1)
        assert times.compile_us == pytest.approx(us)
        assert times.data_loader_us == pytest.approx(_loader_us())
    (found,) = [b for b in analyze_path(tmp_path).summary.bottlenecks if b.kind == "online_compile"]
    assert found.value == pytest.approx(us / _step_us("rank0_ascend_pt"))
    events = [e for e in json.loads(text) if "aclopCompileAndExecute" not in e.get("name", "")]
    trace.write_text(json.dumps(events))
    times = host.read(tmp_path / "rank0_ascend_pt", [])
    assert times is not None and times.compile_calls is None and times.data_loader_calls == 1


def test_unprefixed_compile_events_count_too(tmp_path: Path) -> None:
    """msprof's timeline names the API without the AscendCL@ prefix: these two events are
    msprof's own unit test's (test_framework_connect_acl.py, TestFrameworkToAcl.JSON_DATA;
    found in the public code index, its repository not identified), ``dur`` in us."""
    out = tmp_path / "rank0_ascend_pt" / OUT
    out.mkdir(parents=True)
    events = [
        {
            "name": "aclopCompileAndExecute",
            "pid": "2_998314",
            "tid": 998314,
            "ts": 0.009,
            "dur": 939355.02,
            "ph": "X",
        },
        {
            "name": "aclopCompileAndExecute",
            "pid": "2_998314",
            "tid": 998314,
            "ts": 0.016,
            "dur": 64558.81,
            "ph": "X",
        },
    ]
    (out / "trace_view.json").write_text(json.dumps(events, indent=4))
    times = host.read(out.parent, [])
    assert times is not None and times.compile_calls == 2
    assert times.compile_us == pytest.approx(939355.02 + 64558.81)


def test_without_host_files_preparing_has_no_cause(tmp_path: Path) -> None:
    shutil.copytree(TREE, tmp_path / "t")
    for name in ("trace_view.json", "api_statistic.csv"):
        for path in (tmp_path / "t").glob(f"*/{OUT}/{name}"):
            path.unlink()
    summary = analyze_path(tmp_path / "t", Thresholds(input_pipeline_ratio=0.10)).summary
    (found,) = [b for b in summary.bottlenecks if b.kind == "slow_preparing"]
    assert "the data loader's time is not in the profile" in found.detail
    assert "online_compile" not in {b.kind for b in summary.bottlenecks}


def test_trace_scan_across_chunk_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    """The event's name or fields cut by a chunk edge are read whole from the next chunk."""
    trace = TREE / "rank0_ascend_pt" / OUT / "trace_view.json"
    text = trace.read_text()
    at = text.index('"enumerate(DataLoader)#')
    for chunk in (at + 5, at + 60, 1 << 12):
        monkeypatch.setattr(host, "_CHUNK", chunk)
        times = host.read(trace.parents[1], [])
        assert times is not None and times.data_loader_calls == 1
        assert times.data_loader_us == pytest.approx(_loader_us())


def test_a_job_without_a_data_loader(tmp_path: Path) -> None:
    """A trace with no data loader span (a benchmark feeding tensors it made itself)."""
    shutil.copytree(TREE, tmp_path / "t")
    trace = tmp_path / "t" / "rank0_ascend_pt" / OUT / "trace_view.json"
    events = [
        e
        for e in json.loads(trace.read_text())
        if not str(e.get("name", "")).startswith("enumerate(DataLoader)#")
    ]
    trace.write_text(json.dumps(events))
    summary = analyze_path(tmp_path / "t", Thresholds(input_pipeline_ratio=0.10)).summary
    (found,) = [b for b in summary.bottlenecks if b.kind == "slow_preparing"]
    assert "no data loader range in the profile" in found.detail
    assert "input_pipeline" not in {b.kind for b in summary.bottlenecks}


@pytest.mark.parametrize("tree", ["db_level0", "db_level1"])
def test_db_exports_measure_compilation_and_the_data_loader(tree: str) -> None:
    """export_type=db: PYTORCH_API's data loader ranges and CANN_API's aclopCompileAndExecute
    calls, against the step time of STEP_TIME's step (analysis.db's StepTraceTime)."""
    out = FIXTURES / "trees" / tree / "rank0_ascend_pt" / OUT
    db = sqlite3.connect(next(out.glob("ascend_pytorch_profiler_*.db")))
    names = dict(db.execute("SELECT id, value FROM STRING_IDS").fetchall())
    spans = {
        table: [
            (int(e) - int(s), names[n])
            for s, e, n in db.execute(f"SELECT startNs, endNs, name FROM {table}")
        ]
        for table in ("PYTORCH_API", "CANN_API")
    }
    db.close()
    loader_ns = sum(d for d, n in spans["PYTORCH_API"] if n.startswith("enumerate(DataLoader)#"))
    compile_ns = sum(d for d, n in spans["CANN_API"] if n == "aclopCompileAndExecute")
    calls = sum(1 for _, n in spans["CANN_API"] if n == "aclopCompileAndExecute")
    summary = analyze_path(out.parent, Thresholds(input_pipeline_ratio=0.10)).summary
    assert summary.step is not None and summary.step.count == 1
    step_ns = summary.step.mean_seconds * 1e9
    kinds = {b.kind: b for b in summary.bottlenecks}
    assert kinds["online_compile"].value == pytest.approx(compile_ns / step_ns)
    assert f"up to {calls} in one rank's capture" in kinds["online_compile"].detail
    assert "input_pipeline" not in kinds  # the data loader: 3-4 ms of a 120-130 ms step
    assert f"the data loader {loader_ns / 1e6:.3f} ms" in kinds["slow_preparing"].detail
