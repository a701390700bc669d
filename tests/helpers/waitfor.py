"""`python -m tests.helpers.waitfor PID LOG PORT SECONDS`: is *this* daemon serving? (make demo)

Answering on the port is not enough: another process may hold it. The daemon must be alive, must
have logged that it listens on PORT, and its /-/healthy must answer 200.
"""

from __future__ import annotations

import os
import re
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/healthy", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def wait_for_daemon(pid: int, log: Path, port: int, deadline_seconds: float) -> str | None:
    """None once the daemon serves; else why not."""
    listening = re.compile(rf"event=listening address=\S* port={port}\b")
    deadline = time.monotonic() + deadline_seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return f"the daemon (pid {pid}) exited"
        text = log.read_text(errors="replace") if log.exists() else ""
        if listening.search(text) and _answers(port):
            return None
        time.sleep(0.2)  # polling a process we do not control; there is no clock to advance
    return f"the daemon (pid {pid}) did not serve port {port} within {deadline_seconds:g} s"


def main(argv: list[str]) -> int:
    pid, log, port, seconds = int(argv[0]), Path(argv[1]), int(argv[2]), float(argv[3])
    problem = wait_for_daemon(pid, log, port, seconds)
    if problem is None:
        return 0
    print(f"make demo: {problem}; its log ({log}) ends with:", file=sys.stderr)
    for line in (log.read_text(errors="replace") if log.exists() else "").splitlines()[-5:]:
        print(f"  {line}", file=sys.stderr)
    print(f"If port {port} is taken, pick another: make demo PORT={port + 1}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
