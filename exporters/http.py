"""HTTP(S) server: /metrics, /healthz, landing page; exporter-toolkit TLS and basic auth."""

from __future__ import annotations

import gzip
import html
import logging
import socket
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import TCPServer
from typing import Any
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, gzip_accepted

from npumon.exporters.auth import BasicAuth
from npumon.exporters.webconfig import WebConfig, ssl_context

log = logging.getLogger(__name__)

CONNECTION_TIMEOUT_SECONDS = 30.0  # a stalled client (or TLS handshake) frees its thread
SHUTDOWN_POLL_SECONDS = 0.1  # how soon shutdown() is noticed; idle cost is negligible


def parse_listen_address(address: str) -> tuple[str, int]:
    """Split ':9732', '0.0.0.0:9732', '[::]:9732', 'localhost:0' into (host, port)."""
    host, sep, port_text = address.rpartition(":")
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        raise ValueError(f"listen address {address!r}: expected [host]:port, e.g. ':9732'")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"listen address {address!r}: put an IPv6 host in brackets, '[::]:9732'")
    return host, int(port_text)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        family: socket.AddressFamily,
        handler: type[BaseHTTPRequestHandler],
        tls: ssl.SSLContext | None,
    ) -> None:
        self.address_family = family
        super().__init__(address, handler)
        if tls is not None:
            # The handshake is done in the request's thread (finish_request), so one slow
            # client cannot stall accept() for everyone.
            self.socket = tls.wrap_socket(
                self.socket, server_side=True, do_handshake_on_connect=False
            )

    def server_bind(self) -> None:
        if self.address_family == socket.AF_INET6 and self.server_address[0] in ("", "::"):
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        # HTTPServer.server_bind would call socket.getfqdn(), a DNS lookup; skip it.
        TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        # The default prints a traceback to stderr for every client that hangs up early.
        log.debug("event=http_connection_error client=%s", client_address, exc_info=True)

    def finish_request(self, request: Any, client_address: Any) -> None:
        if isinstance(request, ssl.SSLSocket):
            request.settimeout(CONNECTION_TIMEOUT_SECONDS)
            try:
                request.do_handshake()
            except (ssl.SSLError, OSError) as exc:
                log.debug("event=tls_handshake_failed client=%s error=%r", client_address, exc)
                return
        super().finish_request(request, client_address)


class Server:
    """A running server: ``port`` (the bound one, useful with port 0) and ``shutdown()``."""

    def __init__(self, httpd: _Server) -> None:
        self._httpd = httpd
        self.host = str(httpd.server_address[0])
        self.port = int(httpd.server_address[1])
        self.tls = isinstance(httpd.socket, ssl.SSLSocket)
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS},
            name="npumon-http",
            daemon=True,
        )
        self._thread.start()

    def shutdown(self) -> None:
        """Stop accepting, close the socket and wait briefly for the serving thread."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5.0)


def _bind_target(host: str, port: int) -> tuple[socket.AddressFamily, tuple[str, int]]:
    if host == "":
        # ':9732' means every address; dual-stack IPv6 covers IPv4 too where the host has it.
        if socket.has_dualstack_ipv6():
            return socket.AF_INET6, ("::", port)
        return socket.AF_INET, ("0.0.0.0", port)
    info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    return info[0], (str(info[4][0]), port)


def serve(
    registry: CollectorRegistry,
    address: str,
    web_config: WebConfig | None,
    healthy: Callable[[], bool],
    *,
    version: str = "",
    status: Callable[[], str] | None = None,
    render_version: Callable[[], object] | None = None,
) -> Server:
    """Start serving in a background thread and return at once.

    ``healthy`` decides /healthz (200 or 503); ``status`` is an optional one-line text on the
    state of the data sources (npu-smi), shown on the landing page and as the 503 reason.
    Neither, nor a scrape, may block: they read in-memory state only. ``render_version``
    (the store's ``latest``) lets scrapes of an unchanged snapshot reuse the last exposition.
    """
    config = web_config or WebConfig()
    host, port = parse_listen_address(address)
    family, target = _bind_target(host, port)
    tls = ssl_context(config.tls_server_config) if config.tls_server_config else None
    handler = _handler_class(
        registry=registry,
        auth=BasicAuth(config.basic_auth_users) if config.basic_auth_users else None,
        headers=dict(config.http_server_config.headers),
        healthy=healthy,
        status=status,
        version=version,
        cache=RenderCache(render_version) if render_version is not None else None,
    )
    return Server(_Server(target, family, handler, tls))


class RenderCache:
    """The last exposition per (content type, gzip), reused while ``version()`` is unchanged.

    ``version`` returns the immutable snapshot the collector renders (compared with ``is``), so
    repeated scrapes of an unchanged snapshot (a hung npu-smi, several Prometheus replicas) cost
    a dictionary lookup instead of formatting every sample again.
    """

    def __init__(self, version: Callable[[], object]) -> None:
        self._version = version
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, bool], tuple[object, bytes]] = {}

    def get(self, key: tuple[str, bool], render: Callable[[], bytes]) -> bytes:
        version = self._version()
        with self._lock:
            hit = self._entries.get(key)
        if hit is not None and hit[0] is version:
            return hit[1]
        body = render()
        with self._lock:
            self._entries[key] = (version, body)
        return body


def _handler_class(**app: Any) -> type[BaseHTTPRequestHandler]:
    """A handler class bound to this server's registry, auth and callbacks."""
    return type("NpumonHandler", (_Handler,), {"app": app})


class _Handler(BaseHTTPRequestHandler):
    app: dict[str, Any]
    timeout = CONNECTION_TIMEOUT_SECONDS
    server_version = "npumon"

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        auth: BasicAuth | None = self.app["auth"]
        if auth is not None and not auth.check(self.headers.get("Authorization")):
            self._send(401, b"Unauthorized\n", "text/plain; charset=utf-8", auth.challenge())
            return
        path = urlsplit(self.path).path
        if path == "/metrics":
            self._metrics()
        elif path == "/healthz":
            self._healthz()
        elif path == "/":
            self._send(200, self._landing().encode(), "text/html; charset=utf-8")
        else:
            self._send(404, b"Not Found: try /metrics\n", "text/plain; charset=utf-8")

    def _metrics(self) -> None:
        encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
        zipped = gzip_accepted(self.headers.get("Accept-Encoding", ""))

        def render() -> bytes:
            body: bytes = encoder(self.app["registry"])
            return gzip.compress(body, compresslevel=6) if zipped else body

        cache: RenderCache | None = self.app["cache"]
        try:
            body = cache.get((content_type, zipped), render) if cache else render()
        except Exception as exc:  # a collector outside NpuCollector's boundaries: visible 500
            log.error("event=scrape_failed error=%r", exc, exc_info=exc)
            self._send(500, f"scrape failed: {exc!r}\n".encode(), "text/plain; charset=utf-8")
            return
        self._send(200, body, content_type, {"Content-Encoding": "gzip"} if zipped else {})

    def _healthz(self) -> None:
        ok, reason = self._health()
        text = "ok\n" if ok else f"unhealthy: {reason}\n"
        self._send(200 if ok else 503, text.encode(), "text/plain; charset=utf-8")

    def _health(self) -> tuple[bool, str]:
        try:
            ok = bool(self.app["healthy"]())
        except Exception as exc:  # a broken health callback is an unhealthy answer, not a 500
            return False, f"health check failed: {exc!r}"
        return ok, "" if ok else self._status() or "not healthy"

    def _status(self) -> str:
        status: Callable[[], str] | None = self.app["status"]
        if status is None:
            return ""
        try:
            return status()
        except Exception as exc:  # the landing page must render even then
            return f"status unavailable: {exc!r}"

    def _landing(self) -> str:
        ok, _ = self._health()
        version = html.escape(self.app["version"] or "unknown")
        status = html.escape(self._status() or ("healthy" if ok else "not healthy"))
        return (
            '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>npumon</title></head>'
            "<body><h1>npumon</h1><p>Ascend NPU exporter, version "
            f"{version}</p><p>npu-smi: {status}</p><ul>"
            '<li><a href="metrics">/metrics</a></li><li><a href="healthz">/healthz</a></li>'
            "</ul></body></html>\n"
        )

    def _send(
        self, code: int, body: bytes, content_type: str, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in {**self.app["headers"], **(extra or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (base signature)
        log.debug("event=http_request client=%s " + format, self.client_address[0], *args)
