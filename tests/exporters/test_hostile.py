"""The edge under hostile load, over real loopback sockets: the connection cap, the TLS
handshake inside the header deadline, malformed requests, accept errors, bounded memory."""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest
from edge_helpers import TIMEOUT, exposition, get, raw_connection, self_signed
from exp_helpers import key, samples

from npumon.exporters.web.http import Server, _LoopErrors, serve
from npumon.exporters.web.webconfig import parse_web_config
from tests.helpers.wait import scaled, wait_for

pytestmark = pytest.mark.integration  # real loopback servers and subprocesses


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """True when the peer closes ``sock`` within ``seconds`` (EOF or a reset)."""
    sock.settimeout(scaled(seconds))
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except OSError:
        return True
    return True


@pytest.fixture
def capped() -> Iterator[Server]:
    server = serve(exposition(), "127.0.0.1:0", None, lambda: True, max_connections=5)
    yield server
    server.shutdown()


def test_beyond_max_connections_the_oldest_waiting_connection_is_shed(capped: Server) -> None:
    held = []
    try:
        for _ in range(5):
            held.append(raw_connection(capped))
            wait_for(
                lambda: capped.connections.open == len(held), TIMEOUT, "the connection counted"
            )
        extra = raw_connection(capped)
        assert _closed_within(held[0], 2.0)  # the oldest goes, the newcomer stays
        extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _response(extra).startswith(b"HTTP/1.1 200")
        assert capped.connections.open == 5
        extra.close()
        held[1].close()
        # the server learns of the close on its loop thread
        wait_for(lambda: capped.connections.open == 3, TIMEOUT, "the closed slots to be freed")
    finally:
        for sock in held:
            sock.close()


def _tls(tmp_path: Path, header_timeout: float = 10.0) -> tuple[Server, ssl.SSLContext]:
    cert, key_file = self_signed(tmp_path)
    config = parse_web_config(
        {"tls_server_config": {"cert_file": cert.name, "key_file": key_file.name}}, base=tmp_path
    )
    server = serve(exposition(), "127.0.0.1:0", config, lambda: True, header_timeout=header_timeout)
    return server, ssl.create_default_context(cafile=str(cert))


@pytest.mark.parametrize("sent", [b"", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"])
def test_a_tls_handshake_that_never_completes_is_cut_at_the_deadline(
    tmp_path: Path, sent: bytes
) -> None:
    # nothing at all, or the first bytes of a ClientHello: cut at the header deadline (0.5 s here)
    server, _ = _tls(tmp_path, header_timeout=0.5)
    try:
        sock = raw_connection(server, sent)
        assert _closed_within(sock, 5.0)  # never closed at all without the deadline
        sock.close()
        assert server.connections.open in (0, 1)  # released (or being released) with the socket
    finally:
        server.shutdown()


def test_tls_slots_come_back_after_failed_handshakes(tmp_path: Path) -> None:
    server, client = _tls(tmp_path)
    try:
        for garbage in (b"\x16\x03\x01\x00\x05hello", b"nonsense\r\n", b"GET / HTTP/1.1\r\n\r\n"):
            sock = raw_connection(server, garbage)
            assert _closed_within(sock, 5.0)
            sock.close()
        wait_for(
            lambda: server.connections.open == 0, TIMEOUT, "every failed handshake's slot back"
        )
        assert get(server, "/metrics", context=client)[0] == 200
    finally:
        server.shutdown()


MALFORMED = [
    b"GARBAGE\r\n\r\n",  # a bad request line
    b"GET /metrics HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
    b"GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n",
]


@pytest.mark.parametrize("split", [False, True])
def test_malformed_requests_are_counted_and_logged_at_debug_only(
    caplog: pytest.LogCaptureFixture, split: bool
) -> None:
    server = serve(exposition(), "127.0.0.1:0", None, lambda: True)
    caplog.set_level(logging.DEBUG)
    try:
        for request in MALFORMED * 5:
            head, sep, body = request.partition(b"\r\n\r\n")
            sock = raw_connection(server, head + sep if split else request)
            if split:  # the body after the app has started (or answered)
                time.sleep(0.05)
                sock.sendall(body or b"junk\r\n")
            assert _closed_within(sock, 5.0)
            sock.close()
        assert get(server, "/metrics")[0] == 200
    finally:
        server.shutdown()
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert loud == [], [r.getMessage()[:200] for r in loud]
    counted = samples(server.connections.exposition(False))[key("npumon_http_bad_requests_total")]
    assert counted >= 10  # every request whose head is bad; the split bodies may be answered


def test_loop_errors_are_logged_once_a_second_with_a_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    handler = _LoopErrors(clock=lambda: now[0])
    context = {"message": "socket.accept() out of system resource", "exception": OSError(24)}
    with caplog.at_level(logging.ERROR):
        for _ in range(2048):
            handler(None, context)  # type: ignore[arg-type]
        now[0] += 1.0
        handler(None, context)  # type: ignore[arg-type]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert "count=1 " not in lines[1] and lines[1].endswith("count=2048")


SERVER = """
import resource, sys, time
sys.path[:0] = sys.argv[2:]
import logging
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s %(message)s")
from edge_helpers import exposition
from npumon.exporters.web.http import serve
cap = int(sys.argv[1]) * 4
server = serve(exposition(), "127.0.0.1:0", None, lambda: True, max_connections=cap)
# lowered once serving: the cap, set under the limit in force at start, no longer follows it
resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), int(sys.argv[1])))
print(server.port, flush=True)
sys.stdin.read()
"""


Child = subprocess.Popen[str]


def _child(script: str, nofile: int, stderr: IO[str] | int = subprocess.PIPE) -> Child:
    here = str(Path(__file__).parent)
    root = str(Path(__file__).parents[2])
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), str(nofile), here, root],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )


def test_accept_errors_at_the_fd_limit_do_not_flood_the_log(tmp_path: Path) -> None:
    # A server with 64 descriptors and no lower connection cap: 300 connections run it out.
    log = tmp_path / "server.log"
    with log.open("w") as stderr:
        child = _child(SERVER, 64, stderr)
    socks = []
    try:
        assert child.stdout is not None
        port = int(child.stdout.readline())
        socks = [
            socket.create_connection(("127.0.0.1", port), timeout=scaled(TIMEOUT))
            for _ in range(300)
        ]
        wait_for(lambda: "event=loop_error" in log.read_text(), TIMEOUT, "the first accept error")
    finally:
        for sock in socks:
            sock.close()
        child.communicate("", timeout=scaled(30))
    err = log.read_text()
    accept = [line for line in err.splitlines() if "ERROR" in line]
    # every pass of the loop fails to accept: a line a second, not one per failure
    assert 1 <= len(accept) <= 10, err[:2000]
    assert "event=loop_error" in accept[0] and "Too many open files" in accept[0]
    assert len(err) < 4000, f"{len(err)} bytes of log"


MEMORY = """
import resource, sys
sys.path[:0] = sys.argv[2:]
from edge_helpers import exposition
from npumon.exporters.web.http import serve
server = serve(exposition(), "127.0.0.1:0", None, lambda: True, max_connections=int(sys.argv[1]))
print(server.port, flush=True)
sys.stdin.readline()
print(int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize() // 1024, flush=True)
sys.stdin.read()
"""


def _rss_kib_while_stuffed(cap: int, connections: int) -> int:
    child = _child(MEMORY, cap)
    socks = []
    try:
        assert child.stdout is not None and child.stdin is not None
        port = int(child.stdout.readline())
        stuffing = b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * 63_000
        for _ in range(connections):
            sock = socket.create_connection(("127.0.0.1", port), timeout=scaled(TIMEOUT))
            with contextlib.suppress(OSError):  # closed at once: beyond the cap
                sock.sendall(stuffing)
            socks.append(sock)
        with contextlib.suppress(OSError):  # answered once what came before is read
            get(port, "/-/healthy")
        child.stdin.write("\n")
        child.stdin.flush()
        return int(child.stdout.readline())  # the child's resident KiB, the sockets open
    finally:
        for sock in socks:
            sock.close()
        child.communicate("", timeout=scaled(30))


def test_header_stuffing_memory_is_bounded_by_the_connection_cap() -> None:
    # 400 connections of 63 KB unfinished headers: ~25 MB buffered without a cap (shown with
    # a cap of 1000); with a cap of 20, at most 20 x 64 KiB, whatever the number of connections.
    growth = {
        cap: _rss_kib_while_stuffed(cap, 400) - _rss_kib_while_stuffed(cap, 0) for cap in (20, 1000)
    }
    assert growth[20] < 5 * 1024 < 12 * 1024 < growth[1000], growth  # KiB


def _response(sock: socket.socket) -> bytes:
    """Read one whole response whose body has a content-length (headers and body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed after {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(
        next(
            v
            for k, _, v in (h.partition(b":") for h in head.split(b"\r\n"))
            if k.lower() == b"content-length"
        )
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "closed inside the body"
        body += chunk
    return head


def _trickled_until_closed(sock: socket.socket, seconds: float) -> bool:
    """Send one byte every 0.1 s (the recv timeout paces it); True once the peer closes."""
    sock.settimeout(0.1)
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        try:
            sock.sendall(b"a")
            if sock.recv(65536) == b"":
                return True
        except TimeoutError:
            continue
        except OSError:
            return True
    return False


TRICKLED = [
    b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n",
    b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n",
    b"GET /-/healthy HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10000\r\n",
]


@pytest.mark.parametrize("head", TRICKLED)
def test_a_body_trickled_after_the_response_is_cut_at_the_deadline(head: bytes) -> None:
    # The request declares a body, is answered, then sends it a byte at a time: closed at the
    # deadline (0.5 s here) counted from the connection, whatever arrives.
    server = serve(exposition(), "127.0.0.1:0", None, lambda: True, header_timeout=0.5)
    try:
        sock = raw_connection(server, head)
        assert _response(sock).split(b" ")[1] in (b"200", b"405")
        assert _trickled_until_closed(sock, 5.0), "a trickled body kept the connection open"
        sock.close()
        wait_for(lambda: server.connections.open == 0, TIMEOUT, "the trickler's slot back")
    finally:
        server.shutdown()


def test_a_response_the_client_never_reads_is_cut_at_the_deadline() -> None:
    # 16 MB the client never reads stay in the server's write buffer: the deadline after the
    # response aborts the connection instead of waiting for that buffer to drain.
    big = b"# " + b"x" * (16 << 20) + b"\n"
    server = serve(lambda openmetrics: big, "127.0.0.1:0", None, lambda: True, header_timeout=0.5)
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", server.port))
        sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        wait_for(lambda: server.connections.open == 1, TIMEOUT, "the connection counted")
        wait_for(lambda: server.connections.open == 0, TIMEOUT, "the unread response's slot back")
        sock.close()
    finally:
        server.shutdown()


STUFFED = b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * 1000  # headers never finished
HELLO_START = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"  # a ClientHello never finished


def test_a_declared_body_never_holds_a_slot_past_its_answer() -> None:
    # 40 requests that declare a body and trickle it, against a cap of 20: each is answered, its
    # body read on (as net/http does) only until the header deadline, then closed, so the slots
    # come back and a scrape is answered.
    server = serve(
        exposition(), "127.0.0.1:0", None, lambda: True, max_connections=20, header_timeout=2.0
    )
    held = []
    try:
        for _ in range(40):
            held.append(raw_connection(server, TRICKLED[1] + b"a"))
        for sock in held:
            assert _closed_within(sock, 5.0)
        wait_for(lambda: server.connections.open == 0, TIMEOUT, "every trickler's slot back")
        assert get(server, "/metrics")[0] == 200
    finally:
        for sock in held:
            sock.close()
        server.shutdown()


@pytest.mark.parametrize("flood", ["held", "stuffed"])
def test_a_full_cap_of_waiting_connections_leaves_room_for_a_scrape(flood: str) -> None:
    # Every slot taken by connections that never complete a request: a scrape still gets its
    # answer, the oldest waiting connection shed for it (it was refused before).
    server = serve(exposition(), "127.0.0.1:0", None, lambda: True, max_connections=20)
    sent = {"held": b"", "stuffed": STUFFED}[flood]
    held = []
    try:
        for _ in range(20):
            held.append(raw_connection(server, sent))
            wait_for(
                lambda: server.connections.open == len(held), TIMEOUT, "the connection counted"
            )
        for _ in range(5):  # each scrape sheds one held connection, the oldest first
            assert get(server, "/metrics")[0] == 200
        assert _closed_within(held[0], 2.0) and server.connections.open <= 20
    finally:
        for sock in held:
            sock.close()
        server.shutdown()


def test_slow_tls_handshakes_filling_the_cap_leave_room_for_a_scrape(tmp_path: Path) -> None:
    cert, key_file = self_signed(tmp_path)
    config = parse_web_config(
        {"tls_server_config": {"cert_file": cert.name, "key_file": key_file.name}}, base=tmp_path
    )
    server = serve(exposition(), "127.0.0.1:0", config, lambda: True, max_connections=20)
    client = ssl.create_default_context(cafile=str(cert))
    held = []
    try:
        for _ in range(20):
            held.append(raw_connection(server, HELLO_START))
            wait_for(
                lambda: server.connections.open == len(held), TIMEOUT, "the connection counted"
            )
        assert not server.connections.tls  # no TLS transport (~350 KiB) for half a ClientHello
        for _ in range(3):
            assert get(server, "/metrics", context=client)[0] == 200
    finally:
        for sock in held:
            sock.close()
        server.shutdown()


def test_when_every_slot_has_a_request_in_flight_a_new_connection_is_closed_at_once() -> None:
    release = threading.Event()

    def slow(openmetrics: bool) -> bytes:
        release.wait(TIMEOUT)
        return b"# EOF\n"

    server = serve(slow, "127.0.0.1:0", None, lambda: True, max_connections=3)
    busy = [raw_connection(server, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n") for _ in range(3)]
    try:
        wait_for(
            lambda: server.connections.open == 3 and not server.connections.waiting,
            TIMEOUT,
            "three requests in flight",
        )
        extra = raw_connection(server)
        assert _closed_within(extra, 2.0)  # nothing to shed: the newcomer goes
        extra.close()
        release.set()
        assert all(_response(sock).startswith(b"HTTP/1.1 200") for sock in busy)
    finally:
        release.set()
        for sock in busy:
            sock.close()
        server.shutdown()


def _client_hello(cafile: Path) -> bytes:
    """A real ClientHello (the first flight of Python's TLS client), to send and then stall."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl.create_default_context(cafile=str(cafile)).wrap_bio(
        incoming, outgoing, server_hostname="localhost"
    )
    with contextlib.suppress(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def _tls_server(tmp_path: Path, max_connections: int) -> tuple[Server, Path]:
    cert, key_file = self_signed(tmp_path)
    config = parse_web_config(
        {"tls_server_config": {"cert_file": cert.name, "key_file": key_file.name}}, base=tmp_path
    )
    server = serve(
        exposition(), "127.0.0.1:0", config, lambda: True, max_connections=max_connections
    )
    return server, cert


def test_the_tls_transport_waits_for_the_whole_client_hello(tmp_path: Path) -> None:
    server, cert = _tls_server(tmp_path, 20)
    hello = _client_hello(cert)
    try:
        split = raw_connection(server, hello[:11])
        wait_for(lambda: server.connections.open == 1, TIMEOUT, "the connection counted")
        assert not server.connections.tls
        split.sendall(hello[11:])  # the rest of the record: handed to TLS, which answers
        split.settimeout(scaled(TIMEOUT))
        assert split.recv(5)[:1] == b"\x16"  # the ServerHello's handshake record
        assert len(server.connections.tls) == 1
        cut = raw_connection(server, hello[:11])
        cut.shutdown(socket.SHUT_WR)  # half a ClientHello, then EOF: closed, never TLS
        assert _closed_within(cut, 2.0)
        assert len(server.connections.tls) == 1
    finally:
        split.close()
        server.shutdown()


def test_tls_connections_take_at_most_a_quarter_of_the_cap(tmp_path: Path) -> None:
    # each TLS transport holds ~350 KiB (asyncio's 256 KiB read buffer and OpenSSL's): stalled
    # handshakes past max_connections // 4 shed the oldest of them, not plain slots, and a
    # scrape over TLS still gets in
    server, cert = _tls_server(tmp_path, 20)
    client = ssl.create_default_context(cafile=str(cert))
    hello = _client_hello(cert)
    assert server.connections.max_tls == 5
    held = []
    try:
        for _ in range(5):
            held.append(raw_connection(server, hello))
            wait_for(
                lambda: len(server.connections.tls) == len(held), TIMEOUT, "the handshake counted"
            )
        first = held[0]
        held.append(raw_connection(server, hello))
        assert _closed_within(first, 2.0)  # the oldest handshake goes for the newcomer
        wait_for(lambda: len(server.connections.tls) == 5, TIMEOUT, "the newcomer handed to TLS")
        for _ in range(3):
            assert get(server, "/metrics", context=client)[0] == 200
        assert len(server.connections.tls) <= server.connections.max_tls
    finally:
        for sock in held:
            sock.close()
        server.shutdown()


@pytest.mark.parametrize("record", [b"\x16\x03\x01\x00\x00", b"\x16\x03\x01\xff\xff" + b"\x01" * 5])
def test_an_empty_or_oversized_tls_record_is_handed_to_tls_not_waited_on(
    tmp_path: Path, record: bytes
) -> None:
    # a record of length 0 is whole at its header, one over TLS's 2^14 limit is never waited
    # for: both go to the handshake (under the header deadline like any other) and the loop
    # goes on serving; waiting on them spun the loop and no scrape was answered
    server, cert = _tls_server(tmp_path, 20)
    client = ssl.create_default_context(cafile=str(cert))
    sock = raw_connection(server, record)
    try:
        if len(record) == 5:  # empty: in the handshake, waiting like any other
            wait_for(lambda: len(server.connections.tls) == 1, TIMEOUT, "the record in TLS")
        else:  # refused by the handshake at once, not at the header deadline (10 s)
            assert _closed_within(sock, 2.0)
        assert get(server, "/metrics", context=client)[0] == 200
    finally:
        sock.close()
        server.shutdown()
