"""`npumon run` raises its soft open-file limit to the hard one; the unit sets the hard one."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest
import yaml

from tests.helpers.processes import reported_port, start_npumon, stop
from tests.support import ROOT, fake_npu_smi

pytestmark = pytest.mark.integration  # a real daemon


def open_files(pid: int) -> tuple[int, int]:
    """(soft, hard) "Max open files" of a live process, from /proc/PID/limits."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError(f"no open-files line in /proc/{pid}/limits")


def test_the_daemon_raises_its_soft_limit_to_the_hard_one(tmp_path: Path) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert hard > 256, "the test needs a hard limit above the soft one it starts with"
    config, log = tmp_path / "npumon.yaml", tmp_path / "npumon.log"
    config.write_text(
        yaml.safe_dump(
            {
                "npu_smi": {"command": fake_npu_smi("910b4-1_25.2.2")},
                "state_directory": str(tmp_path),
            }
        )
    )
    process = start_npumon(
        config, log, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
    )
    try:
        reported_port(log, process=process)
        assert open_files(process.pid) == (hard, hard)
    finally:
        stop(process)


def test_the_unit_sets_a_documented_open_files_limit() -> None:
    unit = (ROOT / "deploy" / "systemd" / "npumon.service").read_text().splitlines()
    [limit] = [line.split("=", 1)[1] for line in unit if line.startswith("LimitNOFILE=")]
    assert int(limit) >= 65536
    assert f"LimitNOFILE={limit}" in (ROOT / "docs" / "privileges.md").read_text()
