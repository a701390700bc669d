"""`npumon analyze`: one argument parser (cli.py's subparser), text and JSON output, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from analysis_helpers import four_rank_tree

from npumon.daemon.cli import main


def test_analyze_exit_codes_and_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(tmp_path)]) == 2
    assert "no profiler tables found" in capsys.readouterr().err
    assert main(["analyze", str(tmp_path / "missing")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    four_rank_tree(tmp_path)
    assert main(["analyze", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["summary"]["ranks"]) == 4
    assert main(["analyze", str(tmp_path / "rank_0_ascend_pt")]) == 0
    assert "Per-rank step breakdown" in capsys.readouterr().out


def test_analyze_dir_top_3_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    four_rank_tree(tmp_path)  # the real 4-rank torch_npu sample: 35 op types on rank 0
    assert main(["analyze", str(tmp_path), "--top", "3", "--json"]) == 0
    ops = json.loads(capsys.readouterr().out)["summary"]["op_time_ratio"]
    assert [o["op_type"] for o in ops] == [
        "FlashAttentionScoreGrad",
        "MatMulV3",
        "FlashAttentionScore",
        "other",
    ]
    assert sum(o["ratio"] for o in ops) == pytest.approx(1.0)
    assert main(["analyze", str(tmp_path), "--top", "3"]) == 0
    text = capsys.readouterr().out
    assert "FlashAttentionScore " in text and "RmsNormGrad" not in text  # 3rd in, 5th out


def test_the_example_profile_in_the_repository_analyses() -> None:
    """README's `npumon analyze examples/profile`: a real export, every table read."""
    from tests.support import ROOT

    example = ROOT / "examples" / "profile"
    for name in ("kernel_details.csv", "op_statistic.csv", "step_trace_time.csv"):
        copy = example / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / name
        assert copy.read_bytes() in {
            p.read_bytes() for p in (ROOT / "tests" / "fixtures" / "msprof").glob("*.csv")
        }
    from npumon.daemon.cli import main

    assert main(["analyze", str(example), "--json"]) == 0
