"""The state directory's lock: taken once, refused while held, skipped where nothing is kept."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from npumon.daemon.statelock import StateLockError, hold_state_lock


def test_a_held_lock_is_refused_naming_the_holder(tmp_path: Path) -> None:
    fd = hold_state_lock(tmp_path, create=False)
    assert fd is not None
    try:
        with pytest.raises(StateLockError, match=rf"\(pid {os.getpid()}\) holds {tmp_path}/lock"):
            hold_state_lock(tmp_path, create=False)  # flock: another open file, refused
    finally:
        os.close(fd)
    again = hold_state_lock(tmp_path, create=False)
    assert again is not None
    os.close(again)


def test_a_missing_directory_is_locked_only_when_profiling_writes_there(tmp_path: Path) -> None:
    assert hold_state_lock(tmp_path / "absent", create=False) is None
    assert not (tmp_path / "absent").exists()
    fd = hold_state_lock(tmp_path / "made", create=True)
    assert fd is not None and (tmp_path / "made" / "lock").is_file()
    os.close(fd)


def test_a_lock_file_that_is_a_symlink_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    (tmp_path / "lock").symlink_to(target)
    with pytest.raises(StateLockError, match="cannot lock"):
        hold_state_lock(tmp_path, create=False)
    assert not target.exists()
