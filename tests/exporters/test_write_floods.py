"""Write-side floods against npumon's edge and Debian's node_exporter in the same run: clients
that send requests and never read the answers. Scrapes stay answered and the server's peak RSS
grows by no more than docs/privileges.md's per-connection arithmetic allows.

Small floods on loopback: loopback's 64 KB MTU lets the kernel take up to tcp_wmem's largest
send buffer (4 MB here) of each response, which hides a response left unread; so the HTTP/1.0
flood's body is larger than that, and each client's receive buffer is small.
bench/flood_bench.py runs the full-size floods in an MTU-1500 network namespace."""

from __future__ import annotations

import contextlib
import select
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from edge_helpers import TIMEOUT, get, node_exporter

from npumon.exporters.web.http import MAX_HEADER_BYTES
from tests.helpers.wait import scaled, wait_for

pytestmark = pytest.mark.integration  # real loopback servers and node_exporter

CAP = 20
READ_BYTES = 256 * 1024  # asyncio's largest read
HIGH_WATER = 64 * 1024  # asyncio's write buffer high-water mark
SLACK_KIB = 6 * 1024  # the allocator, the scrapes' own connections
SERVER = """
import sys
sys.path[:0] = sys.argv[4:]
from npumon.exporters.web.http import serve
body = b"pad 1\\n" * (int(sys.argv[2]) // 6)
server = serve(lambda openmetrics: body, "127.0.0.1:0", None, lambda: True,
               max_connections=int(sys.argv[1]), header_timeout=float(sys.argv[3]),
               write_timeout=float(sys.argv[3]))
print(server.port, flush=True)
sys.stdin.read()
"""


def _send_buffer_max() -> int:
    return int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])


def _peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


@contextlib.contextmanager
def _npumon(body: int, timeout: float) -> Iterator[tuple[int, int]]:
    """npumon's edge in a child process serving ``body`` bytes, its header and write
    deadlines ``timeout``: its port and pid."""
    here, root = str(Path(__file__).parent), str(Path(__file__).parents[2])
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(SERVER), str(CAP), str(body), str(timeout)]
        + [here, root],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        yield int(child.stdout.readline()), child.pid
    finally:
        child.kill()
        child.wait(scaled(10))


@contextlib.contextmanager
def _theirs() -> Iterator[tuple[int, int]]:
    """node_exporter (its own small /metrics): its port and pid."""
    with node_exporter() as port:
        found = subprocess.run(["pgrep", "-f", f"127.0.0.1:{port}"], capture_output=True, text=True)
        yield port, int(found.stdout.split()[0])


def _non_reader(port: int, data: bytes) -> socket.socket:
    """A client with a 4 KB receive buffer that sends ``data`` and never reads."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(scaled(10))
    sock.connect(("127.0.0.1", port))
    with contextlib.suppress(OSError):
        sock.sendall(data)
    return sock


def _readable(sock: socket.socket) -> bool:
    return bool(select.select([sock], [], [], 0)[0])


def _scrapes(port: int, count: int = 6) -> float:
    ok = 0
    for _ in range(count):
        with contextlib.suppress(OSError):
            ok += get(port, "/metrics")[0] == 200
    return ok / count


def _reset(sock: socket.socket) -> bool:
    poll = select.poll()
    poll.register(sock, select.POLLERR | select.POLLHUP)
    return bool(poll.poll(0))


def _pipelining(port: int, pid: int, deadline: float) -> tuple[float, int]:
    """One connection pipelining 1,000 GET /metrics (34 KB: one read) and reading nothing:
    the scrapes answered meanwhile, and the peak RSS's growth in KiB once the server has
    reset it (at its write deadline: all it was going to hold, it held)."""
    assert _scrapes(port, 1) == 1.0  # warm: the first render is not the flood's
    before = _peak_kib(pid)
    with _non_reader(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 1000) as flood:
        answered = _scrapes(port)
        if deadline:
            wait_for(lambda: _reset(flood), TIMEOUT + deadline, "the flood reset")
        return answered, _peak_kib(pid) - before


def test_a_pipelining_non_reader_holds_one_response_not_every_answer() -> None:
    # 1,000 answers of 100 KB are 100 MB; net/http holds one, so does npumon: what one
    # connection may hold is a read, its unparsed requests, the high-water mark and one
    # response (docs/privileges.md)
    body = 100_000
    bound = (READ_BYTES + MAX_HEADER_BYTES + HIGH_WATER + body) // 1024 + SLACK_KIB
    with _npumon(body, 1.0) as (port, pid):
        ours, grown = _pipelining(port, pid, 1.0)
    with _theirs() as (port, pid):  # no write deadline: measured while the flood is open
        theirs, their_growth = _pipelining(port, pid, 0.0)
    print(
        f"npumon {ours:.0%} +{grown} KiB, node_exporter {theirs:.0%} +{their_growth} KiB", end=" "
    )
    assert ours == 1.0 and ours >= theirs, (ours, theirs)
    assert grown < bound, (grown, bound)


def _http10(port: int, pid: int) -> tuple[float, int]:
    """3 x CAP connections each sending one HTTP/1.0 GET /metrics and reading nothing: the
    scrapes answered while they stay open, and the peak RSS's growth in KiB."""
    assert _scrapes(port, 1) == 1.0
    before = _peak_kib(pid)
    held = [_non_reader(port, b"GET /metrics HTTP/1.0\r\n\r\n") for _ in range(3 * CAP)]
    try:
        # each answered or shed (a scrape accepted before a flood connection is the oldest
        # waiting when that one comes, and is shed for it)
        wait_for(lambda: all(_readable(sock) for sock in held), TIMEOUT, "the flood answered")
        answered = _scrapes(port)
        return answered, _peak_kib(pid) - before
    finally:
        for sock in held:
            sock.close()


def test_http10_non_readers_cannot_hold_the_slots() -> None:
    # each response waits to drain before its close: sheddable by the cap meanwhile, so a
    # scrape takes the slot of the one that has waited longest; each holds at most one response
    body = _send_buffer_max() + 2 * 1024 * 1024
    bound = CAP * (READ_BYTES + HIGH_WATER + body) // 1024 + SLACK_KIB
    with _npumon(body, 3600.0) as (port, pid):
        ours, grown = _http10(port, pid)
    with _theirs() as (port, pid):
        theirs, their_growth = _http10(port, pid)
    print(
        f"npumon {ours:.0%} +{grown} KiB, node_exporter {theirs:.0%} +{their_growth} KiB", end=" "
    )
    assert ours == 1.0 and ours >= theirs, (ours, theirs)
    assert grown < bound, (grown, bound)
