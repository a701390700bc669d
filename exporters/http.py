"""HTTP(S) edge on uvicorn: bounded headers read under a deadline, then the EdgeApp."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
import threading
from collections.abc import Callable
from typing import Any, ClassVar

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.edge import EdgeApp, Exposition
from npumon.exporters.webconfig import WebConfig
from npumon.exporters.weblive import LiveWebConfig

__all__ = ["Server", "parse_listen_address", "serve"]

log = logging.getLogger(__name__)

MAX_REQUESTS = 40  # in-flight requests before a fast 503 (node_exporter's --web.max-requests)
MAX_HEADER_BYTES = 64 * 1024  # request line + headers; above it: 431 and the connection closed
HEADER_TIMEOUT_SECONDS = 10.0  # from connect (or the last response) to the end of the headers
BACKLOG = 2048  # the kernel's accept queue (the kernel caps it at net.core.somaxconn)
TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n"
    b"connection: close\r\n\r\n"
)
KEEP_ALIVE_SECONDS = 30  # an idle keep-alive connection is closed after this
SHUTDOWN_SECONDS = 2  # grace for requests in flight at shutdown


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


class _Protocol(H11Protocol):
    """uvicorn's h11 protocol plus a header deadline, which uvicorn lacks: a client that has
    not finished its request headers ``header_timeout`` s after connecting (or after the last
    response) is disconnected, however slowly it keeps sending."""

    header_timeout: ClassVar[float] = HEADER_TIMEOUT_SECONDS
    _deadline: asyncio.TimerHandle | None = None
    _header_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        # (uvicorn's own signature narrows BaseTransport to Transport the same way)
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:
            # h11 checks its limit only while a request is incomplete, not on one big read.
            self._header_bytes += len(data)
            if self._header_bytes > MAX_HEADER_BYTES:
                self._disarm()
                self.transport.write(TOO_LARGE)
                self.transport.close()
                return
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the headers are complete
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._header_bytes = 0
        self._deadline = self.loop.call_later(self.header_timeout, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            log.debug("event=header_timeout client=%s", self.client)
            self.transport.close()


class Server:
    """A running server: ``port`` (the bound one, useful with port 0) and ``shutdown()``."""

    def __init__(
        self, server: uvicorn.Server, sock: socket.socket, app: EdgeApp, tls: bool
    ) -> None:
        self._server, self._sock, self._app = server, sock, app
        self.port = int(sock.getsockname()[1])
        self.tls = tls
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="npumon-http", daemon=True
        )
        self._thread.start()

    def shutdown(self) -> None:
        """Stop accepting, close connections and wait briefly for the serving thread."""
        self._server.should_exit = True
        self._thread.join(timeout=SHUTDOWN_SECONDS + 3.0)
        self._sock.close()
        self._app.close()


def _bind(host: str, port: int) -> socket.socket:
    if host == "":
        # ':9732' means every address; dual-stack IPv6 covers IPv4 too where the host has it.
        family, target = (
            (socket.AF_INET6, ("::", port))
            if socket.has_dualstack_ipv6()
            else (socket.AF_INET, ("0.0.0.0", port))
        )
    else:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        family, target = info[0], (str(info[4][0]), port)
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP. Without
    # it a response's headers and body leave in two writes and the body waits for the client's
    # delayed ACK (~40 ms) on every request after the first on a kept-alive connection.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6 and target[0] == "::":
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    sock.bind(target)
    sock.listen(BACKLOG)  # connections queue from now on, before the loop thread runs
    sock.setblocking(False)
    return sock


def _uvicorn_config(
    app: EdgeApp, tls: ssl.SSLContext | None, protocol: type[H11Protocol]
) -> uvicorn.Config:
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        # uvicorn warns once per malformed or oversized request: a log flood under attack.
        logging.getLogger(name).setLevel(logging.ERROR)
    factory: Any = None if tls is None else (lambda config, default: tls)
    return uvicorn.Config(
        app,
        loop="asyncio",
        http=protocol,
        ws="none",
        lifespan="off",
        interface="asgi3",
        log_config=None,
        access_log=False,
        proxy_headers=False,
        server_header=False,
        headers=[("server", "npumon")],
        backlog=BACKLOG,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        timeout_graceful_shutdown=SHUTDOWN_SECONDS,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        ssl_context_factory=factory,
    )


def serve(
    exposition: Exposition,
    address: str,
    web_config: WebConfig | str | os.PathLike[str] | None,
    healthy: Callable[[], bool],
    *,
    version: str = "",
    latest: Callable[[], NodeSnapshot] | None = None,
    max_requests: int = MAX_REQUESTS,
    header_timeout: float = HEADER_TIMEOUT_SECONDS,
) -> Server:
    """Start serving in a background thread and return once the socket listens.

    ``exposition(openmetrics)`` is the /metrics body (rendercache.Exposition keeps it per
    snapshot); it runs on a render thread, never on the event loop. ``web_config`` is a
    web-config.yml path (re-read when it changes), a loaded WebConfig (fixed) or None (plain
    HTTP, no auth). ``healthy`` decides /healthz (200 or 503); ``latest`` (the store's) gives
    the sources named on the landing page and in that 503, and the node's npu-smi and driver
    versions. Neither may block: they read in-memory state only. Raises WebConfigError when
    the web config file is broken.
    """
    web = LiveWebConfig(web_config)
    tls = web.server_context()
    app = EdgeApp(
        exposition, web, max_requests=max_requests, healthy=healthy, latest=latest, version=version
    )
    protocol = type("NpumonProtocol", (_Protocol,), {"header_timeout": header_timeout})
    sock = _bind(*parse_listen_address(address))
    return Server(uvicorn.Server(_uvicorn_config(app, tls, protocol)), sock, app, tls is not None)
