"""The capture disk budget: size of the captures directory, oldest-first cleanup; the reports
directory held to one page pair per workload kept."""

from __future__ import annotations

import logging
import os
import shutil
import stat
from pathlib import Path

from npumon.daemon.profiling.captureerror import CaptureError

log = logging.getLogger(__name__)


def tree_bytes(path: Path) -> int:
    """Bytes of the regular files under ``path`` (symlinks not followed); 0 if it is gone."""
    total = 0
    try:
        for item in path.rglob("*"):
            try:
                if item.is_file() and not item.is_symlink():
                    total += item.stat().st_size
            except OSError:
                continue
    except OSError:
        return 0
    return total


def make_room(captures: Path, need_bytes: int, quota_bytes: int, keep: Path | None = None) -> bool:
    """Delete whole capture dirs, oldest first (by mtime), until ``need_bytes`` fit under the
    quota; True when they fit. ``keep`` (the capture being written) is never deleted.

    Links are never followed: ``captures`` a symlink refuses the capture (CaptureError), a
    link inside it is left alone, so no cleanup deletes anything outside the directory."""
    if captures.is_symlink():
        raise CaptureError(
            "failed",
            f"{captures} is a symlink: npumon deletes old captures there and never "
            "follows a link; make it a directory (or point state_directory at the disk you want)",
        )
    if not captures.is_dir():
        return need_bytes <= quota_bytes
    dirs = []
    for entry in captures.iterdir():
        if entry.is_symlink():
            log.warning("event=capture_cleanup_skipped path=%s reason=symlink", entry)
        elif entry.is_dir() and entry != keep:
            dirs.append(entry)
    sizes = {d: tree_bytes(d) for d in dirs}
    used = sum(sizes.values()) + (tree_bytes(keep) if keep is not None else 0)
    for old in sorted(dirs, key=_mtime):
        if used + need_bytes <= quota_bytes:
            break
        log.info("event=capture_cleanup path=%s bytes=%d reason=disk_quota", old, sizes[old])
        shutil.rmtree(old, ignore_errors=True)
        used -= sizes[old]
    return used + need_bytes <= quota_bytes


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


REPORT_SUFFIXES = (".json", ".html")  # a workload's pages: <workload>.json and .html


def prune_reports(reports: Path, keep: int) -> None:
    """Keep the pages of the ``keep`` workloads written last (profiling.max_workloads, as the
    state keeps), delete the older ones and any temporary file a killed writer left (a name
    starting with '.'). Only regular files are deleted and nothing is followed: a link, a
    folder or a FIFO planted there is left alone."""
    try:
        with os.scandir(reports) as entries:
            files = [
                (e.name, e.stat(follow_symlinks=False))
                for e in entries
                if e.is_file(follow_symlinks=False)
            ]
    except OSError:  # no reports yet, or reports/ is not a folder
        return
    newest: dict[str, float] = {}  # workload -> the mtime of its newest page
    for name, info in files:
        if not name.startswith(".") and name.endswith(REPORT_SUFFIXES):
            # <workload>.json, .html and the capture's <workload>.capture.json (service.py)
            workload = name.rsplit(".", 1)[0].removesuffix(".capture")
            newest[workload] = max(newest.get(workload, 0.0), info.st_mtime)
    kept = set(sorted(newest, key=newest.__getitem__, reverse=True)[:keep])
    for name, info in files:
        if name.startswith("."):  # .<workload>.json.<random>: nobody renamed it
            reason = "partial" if any(f"{s}." in name for s in REPORT_SUFFIXES) else ""
        else:
            page = name.endswith(REPORT_SUFFIXES) and name.rsplit(".", 1)[0] not in kept
            reason = "max_workloads" if page else ""
        if reason and stat.S_ISREG(info.st_mode):
            log.info("event=report_cleanup path=%s reason=%s", reports / name, reason)
            try:
                os.unlink(reports / name)
            except OSError:
                continue
