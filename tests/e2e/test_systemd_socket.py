"""`npumon run --web.systemd-socket` serves on the socket systemd passes (socket activation:
fd 3, LISTEN_PID and LISTEN_FDS, sd_listen_fds(3)), as exporter-toolkit's flag does; without
such a socket it refuses to start, saying why. systemd is played by a Python process that
moves a listening socket to fd 3, sets the variables and execs npumon."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.http import get
from tests.helpers.processes import NPUMON, reported_port, stop
from tests.helpers.wait import scaled, wait_for
from tests.support import fake_npu_smi

pytestmark = pytest.mark.integration  # a real daemon on a real socket

NODE = "910b4-1_25.2.2"
# argv: FD COMMAND ARGS...: FD becomes fd 3 and COMMAND this very process (LISTEN_PID)
SYSTEMD = """\
import os, sys
os.dup2(int(sys.argv[1]), 3)
os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS="1")
os.execv(sys.argv[2], sys.argv[2:])
"""


def write_config(tmp_path: Path) -> Path:
    config = tmp_path / "npumon.yaml"
    config.write_text(
        yaml.safe_dump(
            {"npu_smi": {"command": fake_npu_smi(NODE)}, "state_directory": str(tmp_path)}
        )
    )
    return config


def test_it_serves_on_the_socket_systemd_passes(tmp_path: Path) -> None:
    config, log = write_config(tmp_path), tmp_path / "npumon.log"
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        fd = listening.fileno()
        argv = [sys.executable, "-c", SYSTEMD, str(fd), NPUMON, "run", "--config", str(config)]
        with log.open("wb") as out:
            process = subprocess.Popen(
                [*argv, "--web.systemd-socket"],
                stdout=out,
                stderr=subprocess.STDOUT,
                pass_fds=(fd,),
                start_new_session=True,
            )
    try:
        assert reported_port(log, process=process) == port
        assert "event=listening address=systemd" in log.read_text()
        wait_for(
            lambda: "npu_chip_info{" in get(f"http://127.0.0.1:{port}/metrics"),
            30,
            "the chips served on systemd's socket",
        )
    finally:
        stop(process)


def test_without_a_socket_from_systemd_it_refuses_to_start(tmp_path: Path) -> None:
    done = subprocess.run(
        [NPUMON, "run", "--config", str(write_config(tmp_path)), "--web.systemd-socket"],
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert done.returncode == 1
    assert "--web.systemd-socket: no socket from systemd" in done.stderr
