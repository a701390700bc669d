"""`npumon analyze` and ingest give the same findings on the whole exports (real and synthetic)
that the diagnosis and step rules are tested on. Real analysis workers and a real CLI process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from profiling_helpers import config_for, profiler_for

from tests.helpers.wait import scaled

pytestmark = pytest.mark.integration
TREES = Path(__file__).resolve().parents[2] / "fixtures" / "msprof" / "trees"
CASES = {  # tree -> findings each must give
    "text_level1": {"byte_alignment", "affinity_api"},
    "db_level0": {"online_compile", "affinity_api"},
    "db_level1": {"byte_alignment", "affinity_api"},
    "mindspore22_cluster": {"small_packets"},  # from hccl_raw_N.csv
    "mindspore22_run1": set(),  # its operator table covers 0.0091 % of FP->BP: NOT_JUDGED
    "synthetic_partial_last_step": {"host_bound"},
    "synthetic_tf_legacy": {"input_pipeline"},
}
NOT_JUDGED = {"mindspore22_run1": {"compute_bound", "small_ops"}}  # rules each must withhold


def _aged_copy(tree: str, user: Path) -> Path:
    copy = user / tree.replace("_", "-")
    shutil.copytree(TREES / tree, copy)
    stamp = time.time() - 3600
    for path in [user, *user.rglob("*")]:
        os.utime(path, (stamp, stamp), follow_symlinks=False)
    return copy


@pytest.mark.parametrize("tree", sorted(CASES))
def test_analyze_and_ingest_agree(tree: str, tmp_path: Path) -> None:
    user = tmp_path / "profiles"
    copy = _aged_copy(tree, user)
    cli = subprocess.run(
        [sys.executable, "-m", "npumon.daemon", "analyze", "--json", str(copy)],
        capture_output=True,
        text=True,
        timeout=scaled(120),
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert cli.returncode == 0, cli.stderr
    summary = json.loads(cli.stdout)["summary"]
    analysed = [(b["kind"], b["detail"]) for b in summary["bottlenecks"]]
    withheld = [(n["kind"], n["reason"]) for n in summary["not_judged"]]
    profiler, _ = profiler_for(config_for(tmp_path, enabled=False, ingest={"paths": [str(user)]}))
    (outcome,) = profiler.ingest_once()
    assert outcome.result == "ok" and outcome.report is not None
    ingested = [(b.kind, b.detail) for b in outcome.report.summary.bottlenecks]
    assert ingested == analysed
    assert [(n.kind, n.reason) for n in outcome.report.summary.not_judged] == withheld
    assert CASES[tree] <= {kind for kind, _ in analysed}
    assert NOT_JUDGED.get(tree, set()) <= {kind for kind, _ in withheld}
    assert not {kind for kind, _ in withheld} & {kind for kind, _ in analysed}
