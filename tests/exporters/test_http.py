"""The HTTP server over real loopback sockets: routes, encodings, basic auth, TLS."""

from __future__ import annotations

import gzip
import http.client
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import bcrypt
import pytest
from edge_helpers import auth as _auth
from edge_helpers import exposition as _exposition
from edge_helpers import get as _get
from edge_helpers import raw_connection
from edge_helpers import self_signed as _self_signed
from exp_helpers import key, samples
from prometheus_client import CollectorRegistry

from npumon.daemon.model.snapshot import NodeIdentity, NodeSnapshot, SourceStatus
from npumon.exporters.web.http import Server, parse_listen_address, serve
from npumon.exporters.web.webconfig import WebConfig, parse_web_config
from tests.helpers.wait import scaled

pytestmark = pytest.mark.integration  # real loopback servers, TLS and openssl


@pytest.fixture
def plain() -> Iterator[Server]:
    state = {"healthy": True}
    server = serve(
        _exposition(), "127.0.0.1:0", None, lambda: state["healthy"], version="1.2.3", latest=_node
    )
    server.state = state  # type: ignore[attr-defined]
    yield server
    server.shutdown()


def test_metrics_text_format(plain: Server) -> None:
    status, headers, body = _get(plain, "/metrics")
    assert status == 200
    assert headers["content-type"].startswith("text/plain; version=0.0.4")
    assert samples(body)[key("npu_power_watts", npu="0", chip="0")] == pytest.approx(78.2)


def test_metrics_openmetrics_and_gzip(plain: Server) -> None:
    status, headers, body = _get(
        plain,
        "/metrics",
        {"Accept": "application/openmetrics-text; version=1.0.0", "Accept-Encoding": "gzip"},
    )
    assert status == 200
    assert headers["content-type"].startswith("application/openmetrics-text")
    assert headers["content-encoding"] == "gzip"
    text = gzip.decompress(body)
    assert text.endswith(b"# EOF\n")
    assert b'npu_power_watts{chip="0",npu="0"} 78.2' in text


def _node() -> NodeSnapshot:
    """A node whose table source fails with a message to escape, and an hccn_tool source."""
    return NodeSnapshot(
        taken_at=1.0,
        node=NodeIdentity(npu_smi_version="25.2.2", driver_version="25.2.rc1"),
        chips=(),
        sources=(
            SourceStatus("npu_smi_table", False, 0.1, None, 251, last_error="dcmi <init> failed"),
            SourceStatus("hccn_tool_stat", True, 0.2, 1.0, 0),
        ),
    )


def test_healthz_and_landing(plain: Server) -> None:
    assert _get(plain, "/healthz")[::2] == (200, b"ok\n")
    plain.state["healthy"] = False  # type: ignore[attr-defined]
    status, _, body = _get(plain, "/healthz")
    assert status == 503
    assert body == b"unhealthy: npu_smi_table down: dcmi <init> failed\n"
    status, headers, page = _get(plain, "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    text = page.decode()
    for link in ('href="metrics"', 'href="healthz"', 'href="-/healthy"'):
        assert link in text
    assert "version 1.2.3" in text and "npu-smi 25.2.2, driver 25.2.rc1" in text
    # each source as itself, never every one prefixed "npu-smi:"
    assert "<td>npu_smi_table</td><td>down</td><td>dcmi &lt;init&gt; failed</td>" in text
    assert "<td>hccn_tool_stat</td><td>up</td>" in text and "npu-smi:" not in text
    assert '<a href="https://github.com/npumon/npumon/blob/main/docs/runbooks.md">' in text
    assert _get(plain, "/nope")[0] == 404


def test_landing_says_what_is_not_known_yet() -> None:
    server = serve(_exposition(), "127.0.0.1:0", None, lambda: True)
    try:
        page = _get(server, "/")[2].decode()
    finally:
        server.shutdown()
    assert "npu-smi unknown, driver unknown" in page and "no source has run yet" in page
    assert "version unknown; healthy" in page


def test_scrape_is_fast_while_the_source_hangs() -> None:
    # The store keeps serving its last snapshot while npu-smi hangs: latest() returns at once.
    server = serve(_exposition(), "127.0.0.1:0", None, lambda: False)
    try:
        status, _, body = _get(server, "/metrics")
        assert status == 200 and b"npu_chip_info" in body
    finally:
        server.shutdown()


def test_basic_auth(tmp_path: Path) -> None:
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode()
    config = parse_web_config({"basic_auth_users": {"prom": hashed}}, base=tmp_path)
    server = serve(_exposition(), "127.0.0.1:0", config, lambda: True)
    try:
        status, headers, _ = _get(server, "/metrics")
        assert status == 401 and headers["www-authenticate"].startswith("Basic realm=")
        assert _get(server, "/metrics", _auth("prom", "wrong"))[0] == 401
        assert _get(server, "/metrics", _auth("nobody", "s3cret"))[0] == 401
        assert _get(server, "/metrics", {"Authorization": "Basic !!"})[0] == 401
        for _ in range(2):  # the second one is served from the cache
            assert _get(server, "/metrics", _auth("prom", "s3cret"))[0] == 200
        assert _get(server, "/healthz", _auth("prom", "s3cret"))[0] == 200
    finally:
        server.shutdown()


def test_tls_with_basic_auth(tmp_path: Path) -> None:
    cert, key_file = _self_signed(tmp_path)
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode()
    raw = {
        "tls_server_config": {"cert_file": cert.name, "key_file": key_file.name},
        "basic_auth_users": {"prom": hashed},
        "http_server_config": {"headers": {"X-Frame-Options": "deny"}},
    }
    config = parse_web_config(raw, base=tmp_path)  # file names relative to the config's folder
    server = serve(_exposition(), "127.0.0.1:0", config, lambda: True)
    try:
        assert server.tls
        client = ssl.create_default_context(cafile=str(cert))
        status, headers, body = _get(server, "/metrics", _auth("prom", "pw"), client)
        assert status == 200 and b"npu_power_watts" in body
        assert headers["x-frame-options"] == "deny"
        assert _get(server, "/metrics", None, client)[0] == 401
        status, _, body = _get(server, "/metrics")  # plain HTTP to the TLS port: a hint
        assert (status, body) == (400, b"Client sent an HTTP request to an HTTPS server.\n")
        # ... and the server survives the failed handshake.
        assert _get(server, "/healthz", _auth("prom", "pw"), client)[0] == 200
    finally:
        server.shutdown()


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        (":9732", ("", 9732)),
        ("0.0.0.0:9732", ("0.0.0.0", 9732)),
        ("[::]:9732", ("::", 9732)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("localhost:9100", ("localhost", 9100)),
    ],
)
def test_parse_listen_address(address: str, expected: tuple[str, int]) -> None:
    assert parse_listen_address(address) == expected


@pytest.mark.parametrize("address", ["9732", ":port", "::1:9732", "host:70000", ""])
def test_parse_listen_address_rejects(address: str) -> None:
    with pytest.raises(ValueError, match="listen address"):
        parse_listen_address(address)


class _Broken:
    def collect(self) -> list[object]:
        raise RuntimeError("foreign collector bug")


def test_foreign_collector_failure_is_a_500_and_server_survives() -> None:
    registry = CollectorRegistry()
    registry.register(_Broken())  # type: ignore[arg-type]
    server = serve(_exposition(registry), "127.0.0.1:0", None, lambda: True)
    try:
        status, _, body = _get(server, "/metrics")
        assert status == 500 and b"foreign collector bug" in body
        assert _get(server, "/healthz")[0] == 200
    finally:
        server.shutdown()


# --- the hardening findings: each test fails on the hand-written ThreadingHTTPServer edge ---


def test_oversized_request_headers_are_refused(plain: Server) -> None:
    # 10 headers of 10 KB were read whole before (up to 100 lines of 64 KB); the cap is 64 KB.
    headers = {f"X-Pad-{i}": "a" * 10_000 for i in range(10)}
    status, _, _ = _get(plain, "/metrics", headers)
    assert status in (400, 413, 431)
    assert _get(plain, "/metrics")[0] == 200  # and the server is fine


def test_slow_headers_are_cut_at_the_deadline() -> None:
    server = serve(_exposition(), "127.0.0.1:0", None, lambda: True, header_timeout=0.5)
    try:
        sock = raw_connection(server, b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        sock.settimeout(0.1)
        deadline, closed = time.monotonic() + scaled(5.0), False
        while not closed and time.monotonic() < deadline:
            try:
                sock.sendall(b"X-Slow: 1\r\n")  # one more header line every 0.1 s
                closed = sock.recv(1024) == b""
            except TimeoutError:
                continue
            except OSError:
                closed = True
        sock.close()
        assert closed, "a client that never finishes its headers is still connected"
    finally:
        server.shutdown()


def _answer(sock: socket.socket) -> bytes:
    """Read one /healthz response (headers and its "ok" body) from a raw connection."""
    sock.settimeout(scaled(10.0))
    data = b""
    while not data.endswith(b"\r\n\r\nok\n"):
        chunk = sock.recv(4096)
        assert chunk, f"closed after {data!r}"
        data += chunk
    return data


def test_the_header_deadline_restarts_after_each_response() -> None:
    deadline = scaled(0.5)  # the test thread may stall: 0.4 of it is the room it has
    server = serve(_exposition(), "127.0.0.1:0", None, lambda: True, header_timeout=deadline)
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    sock = raw_connection(server)
    try:
        sock.settimeout(0.6 * deadline)
        with pytest.raises(TimeoutError):  # no request yet, still open 0.6 deadlines in
            sock.recv(1)
        sock.sendall(request)
        assert _answer(sock).startswith(b"HTTP/1.1 200")
        sock.settimeout(0.7 * deadline)
        with pytest.raises(TimeoutError):  # 1.3 deadlines after connect, 0.7 after the response
            sock.recv(1)
        sock.sendall(request)
        assert _answer(sock).startswith(b"HTTP/1.1 200")
        sock.settimeout(scaled(5.0))
        assert sock.recv(1) == b""  # idle: closed at the deadline from this response
    finally:
        sock.close()
        server.shutdown()


def test_connections_cost_no_thread_each_and_scrapes_still_answer(plain: Server) -> None:
    threads_before = threading.active_count()
    parked = [raw_connection(plain, b"GET /metrics HTTP/1.1\r\n") for _ in range(200)]
    try:
        assert _get(plain, "/metrics")[0] == 200
        assert threading.active_count() - threads_before < 10
    finally:
        for sock in parked:
            sock.close()


def test_listen_backlog_is_at_least_1024(plain: Server) -> None:
    ss = shutil.which("ss")
    assert ss is not None, "ss (iproute2) is missing: `make tools` installs it"
    out = subprocess.run(
        [ss, "-ltnH", f"sport = :{plain.port}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=scaled(10),
    ).stdout.split()
    assert int(out[2]) >= 1024, out  # Send-Q of a listening socket is its backlog


class _Blocking:
    """An exposition that waits until released, so scrapes stay in flight."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Semaphore(0)

    def __call__(self, openmetrics: bool) -> bytes:
        self.entered.release()
        self.release.wait(scaled(10))
        return b""


@contextmanager
def _blocked(
    config: WebConfig | None, max_requests: int
) -> Iterator[tuple[Server, _Blocking, ThreadPoolExecutor]]:
    """A server whose renders wait until ``blocking.release`` is set, and a pool to hold them."""
    blocking = _Blocking()
    server = serve(blocking, "127.0.0.1:0", config, lambda: True, max_requests=max_requests)
    pool = ThreadPoolExecutor(max_requests)
    try:
        yield server, blocking, pool
    finally:
        blocking.release.set()
        pool.shutdown()
        server.shutdown()


def test_requests_beyond_max_requests_get_a_fast_503() -> None:
    with _blocked(None, 2) as (server, blocking, pool):
        held = [pool.submit(_get, server, "/metrics") for _ in range(2)]
        for _ in range(2):  # both rendering; render threads are 2, so both can enter
            assert blocking.entered.acquire(timeout=scaled(5))
        status, _, _ = _get(server, "/metrics")  # answered while both renders are held
        assert status == 503
        # only /metrics counts (node_exporter's limit wraps its metrics handler)
        assert _get(server, "/healthz")[0] == 200 and _get(server, "/")[0] == 200
        blocking.release.set()
        assert [f.result(scaled(10))[0] for f in held] == [200, 200]


def test_the_limit_is_inside_auth(tmp_path: Path) -> None:
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode()
    config = parse_web_config({"basic_auth_users": {"prom": hashed}}, base=tmp_path)
    with _blocked(config, 1) as (server, blocking, pool):
        held = pool.submit(_get, server, "/metrics", _auth("prom", "pw"))
        assert blocking.entered.acquire(timeout=scaled(5))
        # a bad credential is refused as such, whether or not the slots are taken
        assert _get(server, "/metrics", _auth("prom", "guess"))[0] == 401
        assert _get(server, "/metrics")[0] == 401
        assert _get(server, "/metrics", _auth("prom", "pw"))[0] == 503
        blocking.release.set()
        assert held.result(scaled(10))[0] == 200


def test_head_is_answered_without_a_body(plain: Server) -> None:
    status, headers, body = _get(plain, "/metrics", method="HEAD")
    assert status == 200 and body == b""
    assert int(headers["content-length"]) > 0


@pytest.mark.parametrize(
    ("accept", "zipped"),
    [
        ("gzip;q=0", False),
        ("gzip; q=0.0, identity", False),
        ("*;q=0", False),
        ("gzip;q=0.5", True),
        ("deflate, *", True),
        ("br, GZIP", True),
        ("", False),
    ],
)
def test_gzip_honours_q_values(plain: Server, accept: str, zipped: bool) -> None:
    status, headers, body = _get(plain, "/metrics", {"Accept-Encoding": accept})
    assert status == 200
    assert (headers.get("content-encoding") == "gzip") is zipped
    assert b"npu_power_watts" in (gzip.decompress(body) if zipped else body)


def test_ten_requests_on_one_kept_alive_connection(
    plain: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", plain.port, timeout=scaled(10))
    timings, bodies = [], []
    try:
        for _ in range(10):
            started = time.perf_counter()
            conn.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
            resp = conn.getresponse()
            assert resp.status == 200 and resp.getheader("connection") is None  # kept alive
            bodies.append(gzip.decompress(resp.read()))
            timings.append(1000 * (time.perf_counter() - started))
    finally:
        conn.close()
    assert len(set(bodies)) == 1  # one snapshot, one body
    assert samples(bodies[-1])[key("npu_power_watts", npu="0", chip="0")] == pytest.approx(78.2)
    with capsys.disabled():  # the figures are the bench's; shown with -s
        print("kept-alive ms:", " ".join(f"{t:.2f}" for t in timings), end=" ")


def test_the_listening_socket_is_tcp_so_asyncio_disables_nagle() -> None:
    from npumon.exporters.web.http import _bind

    sock = _bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP  # accepted sockets inherit it
    finally:
        sock.close()
