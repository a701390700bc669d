"""Ingest: find finished PROF_* / *_ascend_pt / MindSpore directories that jobs wrote themselves.

Never writes under the user's paths: a profile that still needs `msprof --export` is copied into
our captures directory first."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from npumon.daemon.profiling.workloads import safe_name

MAX_DEPTH = 4


@dataclass(frozen=True, slots=True)
class IngestGroup:
    """Profile dirs analysed together (the ranks of one run share a parent)."""

    workload: str
    path: Path  # what analyze_path gets: one profile dir, or the parent of all members
    members: tuple[tuple[str, float], ...]  # (profile dir, newest mtime in it)
    root: Path | None = None  # the ingest path it was found under (the admin's, trusted)


MINDSPORE_TABLES = ("step_trace_raw_*_detail_time.csv", "aicore_intermediate_*_type.csv")


def is_profile_dir(path: Path) -> bool:
    """msprof's PROF_*, torch_npu's *_ascend_pt, MindSpore >= 2.3's *_ascend_ms, or MindSpore
    <= 2.2's profiler/ holding its step or operator tables."""
    name = path.name
    if name.startswith("PROF_") or name.endswith(("_ascend_pt", "_ascend_ms")):
        return True
    return name == "profiler" and any(next(path.glob(g), None) for g in MINDSPORE_TABLES)


def _profile_dirs(path: Path, depth: int) -> Iterator[Path]:
    try:
        children = sorted(
            p
            for p in path.iterdir()
            if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")  # .partial
        )
    except OSError:
        return
    for child in children:
        if is_profile_dir(child):
            yield child  # a run's own PROF_* inside *_ascend_pt is part of it, not another run
        elif depth < MAX_DEPTH:
            yield from _profile_dirs(child, depth + 1)


def newest_mtime(path: Path) -> float:
    newest = path.stat().st_mtime
    for item in path.rglob("*"):
        try:
            newest = max(newest, item.lstat().st_mtime)
        except OSError:
            continue
    return newest


def workload_name(root: Path, parent: Path) -> str:
    """The first directory level under the ingest path (a job's folder), else the path's name."""
    relative = parent.relative_to(root).parts
    return relative[0] if relative else root.name


def find_new(
    roots: Sequence[Path],
    ingested: Mapping[str, float],
    now: float,
    settle: float,
    ingested_before: float = 0.0,
) -> list[IngestGroup]:
    """Profile dirs not analysed yet (or changed since), untouched for ``settle`` seconds; a dir
    whose newest mtime is at or before ``ingested_before`` counts as analysed."""
    groups: list[IngestGroup] = []
    for root in roots:
        by_parent: dict[Path, list[tuple[str, float]]] = {}
        every: dict[Path, int] = {}
        for found in _profile_dirs(root, 0):
            every[found.parent] = every.get(found.parent, 0) + 1
            try:
                mtime = newest_mtime(found)
            except OSError:
                continue
            done = ingested.get(str(found)) == mtime or mtime <= ingested_before
            if now - mtime < settle or done:
                continue  # still being written, or already analysed
            by_parent.setdefault(found.parent, []).append((str(found), mtime))
        for parent, members in sorted(by_parent.items()):
            name = safe_name(workload_name(root, parent))
            if len(members) > 1 and len(members) == every[parent]:
                groups.append(IngestGroup(name, parent, tuple(members), root))
            else:
                groups.extend(IngestGroup(name, Path(m[0]), (m,), root) for m in members)
    return groups
