"""communication_matrix.json on SYNTHETIC files written here (the real ones are tested in
test_real_profiles.py): which entries count, LOCAL left out, pairs named in slow_link."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.analysis.readers import comm


def _entry(link: str, mb: float, ms: float) -> dict[str, object]:
    return {
        "Transport Type": link,
        "Transit Size(MB)": mb,
        "Transit Time(ms)": ms,
        "Bandwidth(GB/s)": mb / ms,
        "Op Name": "hcom_allReduce__1_0_1",
    }


# SYNTHETIC: two steps; step 1 has samples and a -total op, step 2 only plain op names
SYNTHETIC_MATRIX = {
    "step1": {
        "p2p": [],
        "collective": {
            "allreduce-top1@g": {"0-1": _entry("HCCS", 50.0, 10.0)},
            "allreduce-total@g": {
                "0-0": _entry("LOCAL", 80.0, 0.1),
                "0-1": _entry("HCCS", 80.0, 20.0),
                "0-2": _entry("HCCS", 80.0, 10.0),
                "0-3": _entry("HCCS", 80.0, 40.0),
                "0-4": _entry("HCCS", 80.0, 8.0),
                "0-5": _entry("HCCS", 0.5, 5.0),  # under slow_link_min_mb
                "0-8": _entry("RDMA", 10.0, 1.0),
            },
            "allreduce-bottom1@g": {"0-1": _entry("HCCS", 1.0, 1.0)},
        },
    },
    "step2": {"collective": {"hcom_broadcast_7@g": {"0-1": _entry("HCCS", 20.0, 5.0)}}},
}


def _write(tmp_path: Path, with_steps: bool = True) -> Path:
    out = tmp_path / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "communication_matrix.json").write_text(json.dumps(SYNTHETIC_MATRIX))
    if with_steps:
        (out / "step_trace_time.csv").write_text(
            "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,"
            "Stage,Bubble,Communication(Not Overlapped and Exclude Receive),Preparing\n"
            "1,800,100,0,100,100,1000,0,100,0\n"
        )
    return out / "communication_matrix.json"


def test_matrix_counts_the_total_ops_and_plain_ops_once(tmp_path: Path) -> None:
    path = _write(tmp_path)
    notes: list[str] = []
    read = comm.combine([comm.read_rank((), (), (path,))], notes)
    assert read.times is None and not notes
    pairs = {(p.link_type, p.src, p.dst): (p.transit_bytes, p.transit_seconds) for p in read.pairs}
    assert pairs[("HCCS", "0", "1")] == pytest.approx((100e6, 25e-3))  # total + step2, no samples
    assert ("LOCAL", "0", "0") not in pairs
    links = {x.link_type: x for x in read.links}
    assert set(links) == {"HCCS", "RDMA"}
    assert links["HCCS"].transit_bytes == pytest.approx((100 + 80 * 3 + 0.5) * 1e6)
    assert links["HCCS"].transit_seconds == pytest.approx((25 + 10 + 40 + 8 + 5) / 1e3)


def test_matrix_of_a_rank_with_communication_json_gives_pairs_but_no_links(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path)
    empty = tmp_path / "communication.json"
    empty.write_text("{}")
    read = comm.combine([comm.read_rank((empty,), ("r",), (path,))], [])
    assert read.links == () and len(read.pairs) == 6


def test_matrix_only_profile_judges_and_names_the_slowest_pairs(tmp_path: Path) -> None:
    _write(tmp_path)
    summary = analyze_path(tmp_path).summary
    (slow,) = [b for b in summary.bottlenecks if b.kind == "slow_link"]
    # HCCS: 340.5 MB in 88 ms = 3.9 GB/s of 18; pairs: 0->3 2 GB/s, 0->1 4 GB/s, 0->2 8 GB/s,
    # 0->4 10 GB/s; 0->5 moved too little to be named
    assert slow.detail.startswith("HCCS moved 340.5 MB at 3.9 GB/s")
    assert slow.detail.endswith(
        "slowest of its 5 rank pair(s) in communication_matrix.json: "
        "0->3 2.0 GB/s, 0->1 4.0 GB/s, 0->2 8.0 GB/s"
    )
    assert summary.comm_times is None
