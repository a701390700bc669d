"""Two `npumon run` on one state directory: the second refuses to start, saying why."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.helpers.http import get
from tests.helpers.processes import NPUMON, reported_port, start_npumon, stop
from tests.helpers.wait import scaled, wait_for
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


RO_BIND = 'mount --bind -o ro "$0" "$0" && exec "$@"'  # in its own mount namespace


def _read_only(state: Path, argv: list[str]) -> list[str]:
    """``argv`` run with ``state`` a read-only bind mount of itself, in a user and mount
    namespace of its own (``unshare -rm``: no privilege needed, nothing outside changes)."""
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", RO_BIND + " true", str(state)], capture_output=True
    )
    if probe.returncode != 0:
        pytest.skip(f"no user namespaces here for a read-only mount: {probe.stderr!r}")
    return ["unshare", "-rm", "sh", "-c", RO_BIND, str(state), *argv]


@pytest.mark.parametrize(("profiling", "exists"), [(True, True), (False, True), (True, False)])
def test_a_read_only_state_directory_degrades_and_never_stops_the_daemon(
    tmp_path: Path, profiling: bool, exists: bool
) -> None:
    # the state directory read-only, or missing in a read-only parent
    read_only = tmp_path / "ro"
    state = read_only / "state" if not exists else read_only
    read_only.mkdir()
    config = tmp_path / "npumon.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "npu_smi": {"command": fake_npu_smi("910b4-1_25.2.2")},
                "state_directory": str(state),
                "profiling": {"enabled": profiling},
            }
        )
    )
    log = tmp_path / "npumon.log"
    argv = [NPUMON, "run", "--config", str(config), "--web.listen-address", "127.0.0.1:0"]
    with log.open("wb") as out:
        daemon = subprocess.Popen(
            _read_only(read_only, argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        port = reported_port(log, process=daemon)
        scraped: list[str] = []

        def served() -> bool:  # the chips, once the first table poll is in
            scraped[:] = [get(f"http://127.0.0.1:{port}/metrics")]
            return 'npu_power_watts{chip="0",npu="0"}' in scraped[0]

        wait_for(served, 30.0, "the chips served")
        body = scraped[0]
        up = 'npumon_source_up{source="profiling"} 0.0'
        reason = 'npumon_source_failures_total{reason="state_directory",source="profiling"} 1.0'
        assert (up in body and reason in body) is profiling, body[:3000]
        said = log.read_text().count("event=state_directory_unusable")
        assert said == 1 and "Read-only file system" in log.read_text(), log.read_text()
        assert daemon.poll() is None
    finally:
        stop(daemon)
    assert list(read_only.iterdir()) == []
