"""Clients for the HTTP edge tests: GET/HEAD over loopback, basic auth, openssl certificates."""

from __future__ import annotations

import base64
import contextlib
import http.client
import shutil
import socket
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

from exp_helpers import chip_910b, node
from prometheus_client import CollectorRegistry

from npumon.daemon.rendercache import RenderCache
from npumon.exporters.collector import NpuCollector
from npumon.exporters.web.http import Server
from tests.helpers.wait import scaled, wait_for

TIMEOUT = 10.0


def exposition(registry: CollectorRegistry | None = None) -> RenderCache:
    """The /metrics body as `npumon run` wires it (Supervisor.exposition): an NpuCollector on a
    910B node, then ``registry``'s families."""
    snap = node(chip_910b())
    collector = NpuCollector(lambda: snap, "1.2.3")
    return RenderCache(collector.exposition, registry or CollectorRegistry(), lambda: snap)


def get(
    server: Server | int,
    path: str,
    headers: dict[str, str] | None = None,
    context: ssl.SSLContext | None = None,
    method: str = "GET",
) -> tuple[int, dict[str, str], bytes]:
    """One request on a new connection to the server (or a port) on 127.0.0.1."""
    port = server if isinstance(server, int) else server.port
    if context is None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=scaled(TIMEOUT))
    else:
        conn = http.client.HTTPSConnection(
            "127.0.0.1", port, timeout=scaled(TIMEOUT), context=context
        )
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def auth(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def self_signed(folder: Path, name: str = "server") -> tuple[Path, Path]:
    """A fresh EC key and a self-signed certificate for 127.0.0.1 (each call a new key)."""
    openssl = shutil.which("openssl")
    assert openssl is not None, "the openssl CLI is missing: `make tools` installs it"
    cert, key_file = folder / f"{name}.crt", folder / f"{name}.key"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key_file),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=scaled(30),
    )
    return cert, key_file


def peer_certificate(server: Server) -> bytes:
    """The DER certificate the server presents on a new connection (not verified)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=scaled(TIMEOUT)) as raw,
        context.wrap_socket(raw) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return der


def raw_connection(server: Server, data: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=scaled(TIMEOUT))
    if data:
        sock.sendall(data)
    return sock


NODE_EXPORTER = Path("/usr/bin/prometheus-node-exporter")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def node_exporter(web_config: Path | None = None, *flags: str) -> Iterator[int]:
    """Debian's node_exporter on a free loopback port, two cheap collectors (and ``flags``)."""
    assert NODE_EXPORTER.exists(), "prometheus-node-exporter is missing: `make tools` installs it"
    port = free_port()
    process = subprocess.Popen(
        [
            str(NODE_EXPORTER),
            f"--web.listen-address=127.0.0.1:{port}",
            *([f"--web.config.file={web_config}"] if web_config else []),
            "--collector.disable-defaults",
            "--collector.loadavg",
            *flags,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: connects(port), TIMEOUT, "node_exporter listening")
        yield port
    finally:
        process.terminate()
        process.wait(scaled(10))


def connects(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True
