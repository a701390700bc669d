"""Profiler input cannot hurt the daemon: ingest never reads through a symlink out of the profile
and never logs a file's content; tables over their cap are not read (skipped_too_large); the
worker's memory is limited; NaN/inf in a table never become samples. Real analysis workers."""

from __future__ import annotations

import logging
import math
import os
import shutil
import time
from pathlib import Path

import pytest
from profiling_helpers import config_for, exposition, profiler_for, value

from tests.helpers.exposition import samples

pytestmark = pytest.mark.integration
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "msprof"
SECRET = "root:$6$secret-hash-line:19000:0:99999:7:::"


def torch_run(root: Path, **tables: str) -> Path:
    """<root>/job/node1_1_2025_ascend_pt/ASCEND_PROFILER_OUTPUT with the given fixtures."""
    out = root / "job" / "node1_1_2025_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    for kind, fixture in tables.items():
        shutil.copyfile(FIXTURES / fixture, out / f"{kind}.csv")
    return out


def age(root: Path) -> None:
    """Older than the settle time (symlinks themselves, not what they point to)."""
    stamp = time.time() - 3600
    for path in [root, *root.rglob("*")]:
        os.utime(path, (stamp, stamp), follow_symlinks=False)


def test_ingest_never_follows_a_table_symlink_out_and_never_logs_its_content(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = tmp_path / "shadow"
    secret.write_text(SECRET + "\nbin:*:19000:0:99999:7:::\n")
    secret.chmod(0o600)
    root = tmp_path / "prof"
    out = torch_run(root, step_trace_time="step_trace_time_torchnpu_2025-01_level1.csv")
    (out / "kernel_details.csv").symlink_to(secret)
    age(root)
    profiler, _ = profiler_for(config_for(tmp_path, ingest={"paths": [str(root)], "settle": "1s"}))
    with caplog.at_level(logging.DEBUG):
        [outcome] = profiler.ingest_once()
    assert outcome.result == "ok" and outcome.report is not None
    assert str(out / "kernel_details.csv") not in outcome.report.sources
    assert any("not read: it leads out of" in p for p in outcome.report.problems)
    assert "secret-hash" not in caplog.text and "secret-hash" not in repr(outcome)


def test_a_table_that_is_not_a_table_is_reported_without_its_content(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "prof"
    out = torch_run(root)
    (out / "kernel_details.csv").write_text(SECRET + "\n1,2,3\n")
    age(root)
    profiler, _ = profiler_for(config_for(tmp_path, ingest={"paths": [str(root)], "settle": "1s"}))
    with caplog.at_level(logging.DEBUG):
        [outcome] = profiler.ingest_once()
    assert outcome.result == "failed" and "no header row" in outcome.message
    assert "secret-hash" not in caplog.text and "secret-hash" not in outcome.message


def test_a_huge_sparse_step_table_is_skipped_not_read(tmp_path: Path) -> None:
    root = tmp_path / "prof"
    out = torch_run(root, step_trace_time="step_trace_time_torchnpu_2025-01_level1.csv")
    with (out / "step_trace_time.csv").open("r+b") as handle:
        handle.truncate(1 << 30)  # 1 GiB apparent, no disk: this took the daemon to 2.1 GB
    age(root)
    profiler, _ = profiler_for(config_for(tmp_path, ingest={"paths": [str(root)], "settle": "1s"}))
    [outcome] = profiler.ingest_once()
    assert outcome.result == "skipped_too_large"
    assert "profiling.limits.step_table" in outcome.message
    assert value(exposition(profiler), "npumon_captures_total", result="skipped_too_large") == 1


def test_the_caps_are_configurable(tmp_path: Path) -> None:
    root = tmp_path / "prof"
    torch_run(root, kernel_details="kernel_details_torchnpu_cann8.3rc1_level2.csv")
    config = config_for(
        tmp_path, ingest={"paths": [str(root)], "settle": "1s"}, limits={"kernel_table": "1KiB"}
    )
    age(root)
    profiler, _ = profiler_for(config)
    [outcome] = profiler.ingest_once()
    assert outcome.result == "skipped_too_large" and "kernel_table" in outcome.message


def test_a_worker_over_its_memory_limit_fails_alone(tmp_path: Path) -> None:
    root = tmp_path / "prof"
    torch_run(root, kernel_details="kernel_details_torchnpu_cann8.3rc1_level2.csv")
    age(root)
    config = config_for(
        tmp_path, ingest={"paths": [str(root)], "settle": "1s"}, limits={"worker_memory": "96MiB"}
    )  # too small even to load pandas
    profiler, _ = profiler_for(config)
    [outcome] = profiler.ingest_once()
    assert outcome.result == "failed" and "analysis exited" in outcome.message
    assert value(exposition(profiler), "npumon_captures_total", result="failed") == 1


def test_nan_and_inf_in_a_step_table_are_never_exported(tmp_path: Path) -> None:
    root = tmp_path / "prof"
    out = torch_run(root, step_trace_time="step_trace_time_torchnpu_2025-01_level1.csv")
    table = out / "step_trace_time.csv"
    lines = table.read_text().splitlines()
    bad = ("inf", "nan", "-inf", "1e999")
    for index in range(1, len(lines)):
        cells = lines[index].split(",")
        cells[1] = cells[6] = bad[index % len(bad)]  # Computing and Stage (the step time)
        lines[index] = ",".join(cells)
    table.write_text("\n".join(lines) + "\n")
    age(root)
    profiler, _ = profiler_for(config_for(tmp_path, ingest={"paths": [str(root)], "settle": "1s"}))
    profiler.ingest_once()
    found = samples(exposition(profiler))
    assert all(math.isfinite(v) for v in found.values())
