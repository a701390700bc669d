"""The HTTP server over real loopback sockets: routes, encodings, basic auth, TLS."""

from __future__ import annotations

import base64
import gzip
import http.client
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest
from exp_helpers import chip_910b, key, node, samples
from prometheus_client import CollectorRegistry

from npumon.exporters.collector import NpuCollector
from npumon.exporters.http import Server, parse_listen_address, serve
from npumon.exporters.webconfig import parse_web_config

pytestmark = pytest.mark.integration  # real loopback servers, TLS and openssl

TIMEOUT = 10.0


def _registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    snap = node(chip_910b())
    registry.register(NpuCollector(lambda: snap, "1.2.3"))
    return registry


def _get(
    server: Server,
    path: str,
    headers: dict[str, str] | None = None,
    context: ssl.SSLContext | None = None,
) -> tuple[int, dict[str, str], bytes]:
    if context is None:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=TIMEOUT)
    else:
        conn = http.client.HTTPSConnection(
            "127.0.0.1", server.port, timeout=TIMEOUT, context=context
        )
    try:
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


@pytest.fixture
def plain() -> Iterator[Server]:
    state = {"healthy": True}
    server = serve(
        _registry(),
        "127.0.0.1:0",
        None,
        lambda: state["healthy"],
        version="1.2.3",
        status=lambda: "npu-smi info ok <3s ago>",
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


def test_healthz_and_landing(plain: Server) -> None:
    assert _get(plain, "/healthz")[::2] == (200, b"ok\n")
    plain.state["healthy"] = False  # type: ignore[attr-defined]
    status, _, body = _get(plain, "/healthz")
    assert status == 503
    assert body == b"unhealthy: npu-smi info ok <3s ago>\n"
    status, headers, page = _get(plain, "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert b'href="metrics"' in page and b'href="healthz"' in page
    assert b"1.2.3" in page and b"npu-smi info ok &lt;3s ago&gt;" in page  # escaped
    assert _get(plain, "/nope")[0] == 404


def test_scrape_is_fast_while_the_source_hangs() -> None:
    # The store keeps serving its last snapshot while npu-smi hangs: latest() returns at once.
    registry = _registry()
    server = serve(registry, "127.0.0.1:0", None, lambda: False)
    try:
        status, _, body = _get(server, "/metrics")
        assert status == 200 and b"npu_chip_info" in body
    finally:
        server.shutdown()


def _auth(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def test_basic_auth(tmp_path: Path) -> None:
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode()
    config = parse_web_config({"basic_auth_users": {"prom": hashed}}, base=tmp_path)
    server = serve(_registry(), "127.0.0.1:0", config, lambda: True)
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


def _self_signed(folder: Path) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    assert openssl is not None, "the openssl CLI is missing: `make tools` installs it"
    cert, key_file = folder / "server.crt", folder / "server.key"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext",
         "subjectAltName=IP:127.0.0.1", "-keyout", str(key_file), "-out", str(cert)],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    return cert, key_file


def test_tls_with_basic_auth(tmp_path: Path) -> None:
    cert, key_file = _self_signed(tmp_path)
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode()
    raw = {
        "tls_server_config": {"cert_file": cert.name, "key_file": key_file.name},
        "basic_auth_users": {"prom": hashed},
        "http_server_config": {"headers": {"X-Frame-Options": "deny"}},
    }
    config = parse_web_config(raw, base=tmp_path)  # file names relative to the config's folder
    server = serve(_registry(), "127.0.0.1:0", config, lambda: True)
    try:
        assert server.tls
        client = ssl.create_default_context(cafile=str(cert))
        status, headers, body = _get(server, "/metrics", _auth("prom", "pw"), client)
        assert status == 200 and b"npu_power_watts" in body
        assert headers["x-frame-options"] == "deny"
        assert _get(server, "/metrics", None, client)[0] == 401
        with pytest.raises((ssl.SSLError, ConnectionError, http.client.HTTPException)):
            _get(server, "/metrics")  # plain HTTP to a TLS port gets no answer
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
    registry = _registry()
    registry.register(_Broken())  # type: ignore[arg-type]
    server = serve(registry, "127.0.0.1:0", None, lambda: True)
    try:
        status, _, body = _get(server, "/metrics")
        assert status == 500 and b"foreign collector bug" in body
        assert _get(server, "/healthz")[0] == 200
    finally:
        server.shutdown()
