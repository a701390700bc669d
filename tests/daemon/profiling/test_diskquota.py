"""The capture disk budget: whole capture dirs deleted oldest first."""

from __future__ import annotations

import os
from pathlib import Path

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
