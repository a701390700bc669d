"""Write-side floods against npumon's edge and Debian's node_exporter in the same run: clients
that send requests and never read the answers. Scrapes stay answered and the server's peak RSS
grows by no more than docs/privileges.md's per-connection arithmetic allows.

Small floods on loopback: loopback's 64 KB MTU lets the kernel take up to tcp_wmem's largest
send buffer (4 MB here) of each response, which hides a response left unread; so the HTTP/1.0
flood's body is larger than that, and each client's receive buffer is small.
The HTTP/1.0 flood also runs across a veth pair of MTU 1500, the servers in a network namespace
of their own, the clients at the kernel's default receive buffer (root and iproute2; skipped
without them); bench/flood_bench.py runs it at full size."""

from __future__ import annotations

import contextlib
import http.client
import os
import secrets
import select
import shutil
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from edge_helpers import NODE_EXPORTER, TIMEOUT, get, node_exporter

from npumon.exporters.web.http import MAX_HEADER_BYTES
from tests.helpers.wait import scaled, wait_for

pytestmark = pytest.mark.integration  # real loopback servers and node_exporter

CAP = 20
READ_BYTES = 256 * 1024  # asyncio's largest read
HIGH_WATER = 64 * 1024  # asyncio's write buffer high-water mark
SLACK_KIB = 6 * 1024  # the allocator, the scrapes' own connections
SERVER = """
import sys
sys.path[:0] = sys.argv[5:]
from npumon.exporters.web.http import serve
body = b"pad 1\\n" * (int(sys.argv[2]) // 6)
server = serve(lambda openmetrics: body, sys.argv[4] + ":0", None, lambda: True,
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
def _npumon(
    body: int,
    timeout: float,
    cap: int = CAP,
    host: str = "127.0.0.1",
    prefix: tuple[str, ...] = (),
) -> Iterator[tuple[int, int]]:
    """npumon's edge in a child process serving ``body`` bytes on ``host``, its header and
    write deadlines ``timeout``, at most ``cap`` connections (run under ``prefix``): its port
    and pid."""
    here, root = str(Path(__file__).parent), str(Path(__file__).parents[2])
    child = subprocess.Popen(
        [*prefix, sys.executable, "-c", textwrap.dedent(SERVER), str(cap), str(body)]
        + [str(timeout), host, here, root],
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


NETNS_CAP = 100
NETNS_FLOOD = 3 * NETNS_CAP
NETNS_BODY = 3 * 1024 * 1024 // 2  # above the ~0.8 MB a socket the kernel takes across MTU 1500


@pytest.fixture
def namespace() -> Iterator[tuple[tuple[str, ...], str]]:
    """A network namespace of this test's own, joined to this one by a veth pair of MTU 1500:
    the command prefix that runs a program in it, and the address of its end."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("a network namespace needs root and iproute2 (`make tools` installs it)")
    tag = secrets.token_hex(3)
    name, outside, inside = f"npumon-test-{tag}", f"nmt{tag}o", f"nmt{tag}i"
    net = f"10.{200 + secrets.randbelow(50)}.{secrets.randbelow(256)}"
    try:
        first = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
        if first.returncode != 0:
            pytest.skip(f"`ip netns add` failed: {first.stderr.strip()}")
        for step in (
            ["ip", "link", "add", outside, "mtu", "1500", "type", "veth", "peer", "name", inside],
            ["ip", "link", "set", inside, "netns", name],
            ["ip", "addr", "add", f"{net}.1/30", "dev", outside],
            ["ip", "link", "set", outside, "up"],
            ["ip", "-n", name, "addr", "add", f"{net}.2/30", "dev", inside],
            ["ip", "-n", name, "link", "set", inside, "mtu", "1500", "up"],
        ):
            subprocess.run(step, check=True, capture_output=True, timeout=scaled(10))
        yield ("ip", "netns", "exec", name), f"{net}.2"
    finally:  # deleting the namespace deletes its end of the pair, and so the pair
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
        subprocess.run(["ip", "link", "del", outside], capture_output=True)


@contextlib.contextmanager
def _theirs_in(prefix: tuple[str, ...], host: str) -> Iterator[tuple[int, int]]:
    """node_exporter in the namespace (its own small /metrics): its port and pid."""
    port = 9100  # the namespace is new: nothing else listens there
    process = subprocess.Popen(
        [*prefix, str(NODE_EXPORTER), f"--web.listen-address={host}:{port}"]
        + ["--collector.disable-defaults", "--collector.loadavg"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: _answers(host, port), TIMEOUT, "node_exporter listening")
        yield port, process.pid  # `ip netns exec` execs: the same process
    finally:
        process.terminate()
        process.wait(scaled(10))


def _answers(host: str, port: int) -> bool:
    conn = http.client.HTTPConnection(host, port, timeout=scaled(TIMEOUT))
    try:
        conn.request("GET", "/metrics")
        resp = conn.getresponse()
        return resp.status == 200 and len(resp.read()) > 0
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def _unsent(prefix: tuple[str, ...], port: int) -> int:
    """The server's connections on ``port`` with response bytes its kernel has not sent."""
    listed = subprocess.run(
        [*prefix, "ss", "-Htn", "state", "established", f"( sport = :{port} )"],
        capture_output=True,
        text=True,
        check=True,
        timeout=scaled(10),
    )
    return sum(int(line.split()[1]) > 0 for line in listed.stdout.splitlines())


def _http10_across(
    prefix: tuple[str, ...], host: str, port: int, pid: int
) -> tuple[float, int, int]:
    """NETNS_FLOOD connections at the default receive buffer, each sending one HTTP/1.0
    GET /metrics and reading nothing: the scrapes answered while they stay open, the peak RSS's
    growth in KiB, and how many connections the server held with answers unsent meanwhile."""
    assert _answers(host, port)
    before = _peak_kib(pid)
    held = []
    try:
        for _ in range(NETNS_FLOOD):
            sock = socket.create_connection((host, port), timeout=scaled(10))
            held.append(sock)
            sock.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        wait_for(lambda: all(_readable(sock) for sock in held), TIMEOUT, "the flood answered")
        holding = _unsent(prefix, port)
        answered = sum(_answers(host, port) for _ in range(6)) / 6
        return answered, _peak_kib(pid) - before, holding
    finally:
        for sock in held:
            sock.close()


def test_http10_non_readers_across_mtu_1500_cannot_hold_the_slots(
    namespace: tuple[tuple[str, ...], str],
) -> None:
    # without loopback's 64 KB MTU the kernel takes ~0.8 MB of each answer: the flood holds
    # slots with answers unsent, and each scrape sheds the one that has waited longest
    prefix, host = namespace
    bound = NETNS_CAP * (READ_BYTES + HIGH_WATER + NETNS_BODY) // 1024 + SLACK_KIB
    with _npumon(NETNS_BODY, 3600.0, NETNS_CAP, host, prefix) as (port, pid):
        ours, grown, holding = _http10_across(prefix, host, port, pid)
    with _theirs_in(prefix, host) as (port, pid):
        theirs, their_growth, _ = _http10_across(prefix, host, port, pid)
    print(
        f"npumon {ours:.0%} +{grown} KiB ({holding} held), node_exporter {theirs:.0%} "
        f"+{their_growth} KiB",
        end=" ",
    )
    # the flood binds: answers left unsent (on loopback the kernel would take them whole)
    assert 0 < holding <= NETNS_CAP, (holding, NETNS_CAP)
    assert ours == 1.0 and ours >= theirs, (ours, theirs)
    assert grown < bound, (grown, bound)
