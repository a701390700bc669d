"""Two `npumon run` on one state directory: the second refuses to start, saying why."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.helpers.processes import NPUMON, reported_port, start_npumon, stop
from tests.helpers.wait import scaled
from tests.support import fake_npu_smi

pytestmark = pytest.mark.integration  # real daemons


def test_a_second_daemon_on_the_state_directory_refuses_to_start(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    config = tmp_path / "npumon.yaml"
    config.write_text(
        yaml.safe_dump(
            {"npu_smi": {"command": fake_npu_smi("910b4-1_25.2.2")}, "state_directory": str(state)}
        )
    )
    first = start_npumon(config, tmp_path / "first.log")
    try:
        reported_port(tmp_path / "first.log", process=first)
        second = subprocess.run(
            [NPUMON, "run", "--config", str(config), "--web.listen-address", "127.0.0.1:0"],
            capture_output=True,
            text=True,
            timeout=scaled(60),
        )
        assert second.returncode == 1
        assert f"another npumon (pid {first.pid}) holds {state / 'lock'}" in second.stderr
        assert "give this one its own state_directory" in second.stderr
        assert first.poll() is None  # the first one runs on
        first.kill()  # however it ends, the kernel drops the lock
        first.wait(timeout=scaled(10))
        third = start_npumon(config, tmp_path / "third.log")
        try:
            reported_port(tmp_path / "third.log", process=third)
        finally:
            stop(third)
    finally:
        stop(first)
