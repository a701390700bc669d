"""The connection cap under a low open-file limit: it follows the limit, keeping
OPEN_FILES_RESERVE descriptors for the rest of the daemon, and says so at start."""

from __future__ import annotations

import contextlib
import resource
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from edge_helpers import TIMEOUT, get

from npumon.exporters.web.http import OPEN_FILES_RESERVE, connection_cap
from tests.helpers.wait import scaled

LIMITED = """
import logging, resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), int(sys.argv[1])))
sys.path[:0] = sys.argv[2:]
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s %(message)s")
from edge_helpers import exposition
from npumon.exporters.web.http import serve
server = serve(exposition(), "127.0.0.1:0", None, lambda: True, max_connections=1024)
print(server.port, server.connections.max_connections, flush=True)
sys.stdin.read()
"""


def test_the_cap_follows_the_open_file_limit_less_the_reserve() -> None:
    assert connection_cap(1024, 524_288) == 1024  # systemd's hard limit: the configured cap
    assert connection_cap(1024, 1024) == 1024 - OPEN_FILES_RESERVE
    assert connection_cap(1024, OPEN_FILES_RESERVE) == 1  # never none
    assert connection_cap(1024, resource.RLIM_INFINITY) == 1024


@pytest.mark.integration
def test_under_a_hard_limit_of_256_connections_shed_each_other_not_the_accept(
    tmp_path: Path,
) -> None:
    # 400 held connections against 256 descriptors: without the lowered cap (1,024) accepts
    # fail with EMFILE and scrapes are refused; with it, the oldest waiting are shed
    limit = 256
    here, root = str(Path(__file__).parent), str(Path(__file__).parents[2])
    log = tmp_path / "server.log"
    with log.open("w") as stderr:
        child = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(LIMITED), str(limit), here, root],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    held = []
    try:
        assert child.stdout is not None
        port, cap = map(int, child.stdout.readline().split())
        assert cap == limit - OPEN_FILES_RESERVE
        for _ in range(400):
            sock = socket.create_connection(("127.0.0.1", port), timeout=scaled(TIMEOUT))
            held.append(sock)
        ok = 0
        for _ in range(6):
            with contextlib.suppress(OSError):
                ok += get(port, "/metrics")[0] == 200
        assert ok == 6
    finally:
        for sock in held:
            sock.close()
        child.communicate("", timeout=scaled(30))
    text = log.read_text()
    assert (
        f"event=connection_cap_lowered configured=1024 effective={cap} open_files={limit}" in text
    )
    assert "Too many open files" not in text, text[:2000]
