"""The capture disk budget: whole capture dirs deleted oldest first."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from npumon.daemon.profiling.captureerror import CaptureError
from npumon.daemon.profiling.diskquota import make_room


def test_make_room_deletes_oldest_first(tmp_path: Path) -> None:
    for index, name in enumerate(("c", "a", "b")):  # mtime order: c, a, b
        (tmp_path / name).mkdir()
        (tmp_path / name / "f").write_bytes(b"x" * 100)
        os.utime(tmp_path / name, (1000 + index, 1000 + index))
    assert make_room(tmp_path, 150, 300)
    # 300 used + 150 needed: c (oldest) then a go, b (newest) stays
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]
    assert not make_room(tmp_path, 400, 300)
    assert list(tmp_path.iterdir()) == []


def test_captures_a_symlink_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    (target / "precious").mkdir(parents=True)
    (target / "precious" / "f").write_bytes(b"x" * 100)
    captures = tmp_path / "captures"
    captures.symlink_to(target)
    with pytest.raises(CaptureError, match="captures is a symlink") as refused:
        make_room(captures, 1000, 10)
    assert refused.value.result == "failed"
    assert (target / "precious" / "f").exists()


def test_a_symlink_inside_captures_is_neither_counted_nor_deleted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "f").write_bytes(b"x" * 100)
    captures = tmp_path / "captures"
    captures.mkdir()
    (captures / "old").symlink_to(target)
    assert make_room(captures, 50, 60)  # the link's 100 bytes are not ours to count
    assert (captures / "old").is_symlink() and (target / "f").exists()
    assert f"event=capture_cleanup_skipped path={captures / 'old'} reason=symlink" in caplog.text
