"""The profiling files stay confined: kept captures within the disk quota counted after the
export (and the export stopped while it runs once over), reports/ pruned with the captures, and
every report written by descriptor, never through a link planted in reports/."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from profiling_helpers import config_for, msprof_children, profiler_for, train_job

from npumon.daemon import nofollow
from npumon.daemon.profiling import capture
from npumon.daemon.profiling.diskquota import prune_reports, tree_bytes
from npumon.daemon.profiling.workloads import Workload

pytestmark = pytest.mark.integration  # real msprof, training job and analysis simulators

MIB = 1024 * 1024
CHIPS = frozenset({(3, 0)})


def _trainer(pid: int) -> Workload:
    return Workload("trainer", (pid,), "msprof_attach", CHIPS, attachable=True)


def _kept(captures: Path) -> list[Path]:
    return [p for p in captures.iterdir() if p.name.startswith("trainer-")]


def test_a_capture_its_export_took_over_the_quota_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the quota was checked on the raw data only, before msprof --export wrote its tables:
    # kept captures reached 2.9x the quota
    monkeypatch.setenv("NPUMON_SIM_MSPROF_EXPORT_MB", "4")
    monkeypatch.setattr(capture, "EXPORT_WATCH_SECONDS", 3600.0)  # the check after the export
    profiler, _ = profiler_for(config_for(tmp_path, disk_quota="3MiB", keep_raw="all"))
    captures = tmp_path / "state" / "captures"
    with train_job(tmp_path, "balanced") as job:
        outcome = profiler.capture(_trainer(job.pid))
    assert outcome.result == "disk_quota", outcome.message
    assert "over the quota of 3145728" in outcome.message
    assert _kept(captures) == [] and tree_bytes(captures) <= 3 * MIB


def test_an_export_over_the_quota_is_stopped_while_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NPUMON_SIM_MSPROF_EXPORT_MB", "256")  # 12.8 s at this pace, if let be
    monkeypatch.setenv("NPUMON_SIM_MSPROF_EXPORT_PACE", "0.05")
    monkeypatch.setattr(capture, "EXPORT_WATCH_SECONDS", 0.05)
    profiler, _ = profiler_for(config_for(tmp_path, disk_quota="2MiB", keep_raw="all"))
    captures = tmp_path / "state" / "captures"
    with train_job(tmp_path, "balanced") as job:
        outcome = profiler.capture(_trainer(job.pid))
    assert outcome.result == "disk_quota", outcome.message
    assert "stopped while it ran" in outcome.message
    assert msprof_children(captures) == []  # the export's process group is gone
    assert _kept(captures) == []
    assert profiler.children.running() == ()


def test_reports_are_written_by_descriptor_past_planted_links_and_pruned(
    tmp_path: Path,
) -> None:
    profiler, _ = profiler_for(config_for(tmp_path, max_workloads=1))
    reports = tmp_path / "state" / "reports"
    reports.mkdir(parents=True)
    precious = tmp_path / "precious"
    precious.write_text("root's file\n")
    # the old writer wrote reports/.trainer.json.partial (a fixed name), then renamed it
    (reports / ".trainer.json.partial").symlink_to(precious)
    (reports / "trainer.html").symlink_to(precious)
    for name in ("older.json", "older.html"):  # another workload's pages, written before
        (reports / name).write_text("{}\n")
        os.utime(reports / name, (1, 1))
    with train_job(tmp_path, "balanced") as job:
        outcome = profiler.capture(_trainer(job.pid))
    assert outcome.result == "ok", outcome.message
    assert precious.read_text() == "root's file\n"
    for name in ("trainer.json", "trainer.html"):
        assert (reports / name).is_file() and not (reports / name).is_symlink(), name
    assert b"trainer" in (reports / "trainer.json").read_bytes()
    # profiling.max_workloads 1: the older workload's pages went; the planted link stays
    names = sorted(p.name for p in reports.iterdir())
    assert names == [".trainer.json.partial", "trainer.html", "trainer.json"]


def test_a_reports_folder_that_is_a_link_is_not_written_through(tmp_path: Path) -> None:
    profiler, _ = profiler_for(config_for(tmp_path))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "reports").symlink_to(elsewhere)
    with train_job(tmp_path, "balanced") as job:
        outcome = profiler.capture(_trainer(job.pid))
    assert outcome.result == "ok", outcome.message  # the pages are lost, not the analysis
    assert list(elsewhere.iterdir()) == []


def test_prune_reports_keeps_the_newest_workloads_and_deletes_regular_files_only(
    tmp_path: Path,
) -> None:
    for age, workload in enumerate(("e", "d", "c", "b", "a")):  # "a" the oldest
        for suffix in (".json", ".html"):
            (tmp_path / f"{workload}{suffix}").write_text("x")
            os.utime(tmp_path / f"{workload}{suffix}", (1000 - age, 1000 - age))
    (tmp_path / ".a.json.0123abcd").write_text("half")  # a killed writer's temporary file
    (tmp_path / "notes.txt").write_text("not a page")
    (tmp_path / "old.json").symlink_to(tmp_path / "notes.txt")
    (tmp_path / "f.html").mkdir()
    prune_reports(tmp_path, keep=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "c.html", "c.json", "d.html", "d.json", "e.html", "e.json",
        "f.html", "notes.txt", "old.json",
    ]  # fmt: skip
    prune_reports(tmp_path / "absent", keep=3)  # no reports yet: nothing to do


def test_write_in_replaces_a_link_and_refuses_a_linked_folder(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("kept")
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "page.html").symlink_to(target)
    nofollow.write_in(folder, "page.html", b"new")
    assert target.read_text() == "kept" and not (folder / "page.html").is_symlink()
    assert (folder / "page.html").read_bytes() == b"new"
    (tmp_path / "linked").symlink_to(folder)
    with pytest.raises(OSError, match="symlink"):
        nofollow.write_in(tmp_path / "linked", "page.html", b"through")
    assert (folder / "page.html").read_bytes() == b"new"
    assert sorted(p.name for p in folder.iterdir()) == ["page.html"]  # no temporary left
