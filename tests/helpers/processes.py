"""Child processes of a test: stop them (every one reaped), and read the port a server bound.

Servers in tests bind port 0 and report the port they got, so parallel runs never race for a
fixed or "free" port: `npumon run` logs ``event=listening ... port=N``, Prometheus logs
``msg="Listening on" address=HOST:N``; VictoriaMetrics' port is read from the process
(``listening_port``).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil

from tests.helpers.wait import wait_for

NPUMON = str(Path(sys.executable).parent / "npumon")
NPUMON_LISTENING = re.compile(r"event=listening address=\S* port=(\d+)")
PROMETHEUS_LISTENING = re.compile(r'msg="Listening on" address=\S*:(\d+)')


def stop(*processes: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after ``grace`` s; all at once, so the waits overlap."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=grace)


def reported_port(
    log: Path,
    pattern: re.Pattern[str] = NPUMON_LISTENING,
    process: subprocess.Popen[bytes] | None = None,
    timeout: float = 30.0,
) -> int:
    """The port a server wrote to its log (``pattern`` group 1); fails early if it exits."""
    found: list[int] = []

    def logged() -> bool:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"{process.args!r} exited ({process.returncode}); see {log}")
        match = pattern.search(log.read_text(errors="replace")) if log.exists() else None
        if match:
            found.append(int(match[1]))
        return bool(found)

    wait_for(logged, timeout, f"the listening port in {log}")
    return found[0]


def listening_port(pid: int) -> int | None:
    """The TCP port process ``pid`` listens on, if any: for servers that do not log the port
    they bound (victoria-metrics, vmalert)."""
    for connection in psutil.Process(pid).net_connections(kind="tcp"):
        if connection.status == psutil.CONN_LISTEN:
            return int(connection.laddr.port)
    return None


def start_npumon(
    config: Path, log: Path, listen: str = "127.0.0.1:0", **popen: Any
) -> subprocess.Popen[bytes]:
    """A real `npumon run` on ``config``, stdout and stderr to ``log``, in its own session
    (``popen``: more Popen arguments, e.g. ``env`` or ``preexec_fn``); stop it with ``stop``."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [NPUMON, "run", "--config", str(config), "--web.listen-address", listen],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            **popen,
        )
