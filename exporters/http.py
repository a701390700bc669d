"""HTTP(S) edge on uvicorn: connections capped, TLS and headers read under one deadline."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
from asyncio.sslproto import SSLProtocol
from collections.abc import Callable, Iterator
from typing import Any

import h11
import uvicorn
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, Metric
from uvicorn.protocols.http.h11_impl import H11Protocol

from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.edge import EdgeApp, Exposition
from npumon.exporters.webconfig import WebConfig
from npumon.exporters.weblive import LiveWebConfig

log = logging.getLogger(__name__)

MAX_REQUESTS = 40  # in-flight requests before a fast 503 (node_exporter's --web.max-requests)
MAX_CONNECTIONS = 1024  # open connections; the next sheds the oldest waiting one (privileges.md)
MAX_HEADER_BYTES = 64 * 1024  # request line + headers; above it: 400 and the connection closed
HEADER_TIMEOUT_SECONDS = 10.0  # TLS handshake, headers and body, from connect or last response
BACKLOG = 2048  # the kernel's accept queue (the kernel caps it at net.core.somaxconn)
NOT_TLS = b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
HTTP_STARTS = (b"GET /", b"HEAD ", b"POST ", b"PUT /", b"OPTIO")  # Go's net/http looksLikeHTTP
KEEP_ALIVE_SECONDS = 30  # uvicorn's idle close; the header deadline closes idle ones first
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


class Edge:
    """What a server's connections share: the open count under its cap, the bad requests, and
    the connections waiting for a request (in the order they began to wait)."""

    def __init__(self, max_connections: int, header_timeout: float) -> None:
        self.max_connections, self.header_timeout = max_connections, header_timeout
        self.open = self.bad_requests = 0
        self.waiting: dict[_Protocol, None] = {}  # insertion-ordered: the oldest first

    def collect(self) -> Iterator[Metric]:
        help_text = "Malformed HTTP requests, answered 400 or closed, since npumon started."
        yield CounterMetricFamily("npumon_http_bad_requests", help_text, self.bad_requests)


class _Protocol(H11Protocol):
    """uvicorn's h11 protocol plus what it lacks: the connection cap; a request deadline (the TLS
    handshake, the headers and any body complete ``header_timeout`` s after connect, or after
    the last response, however slowly they come; an idle kept-alive connection, or one whose
    last response is still unread, is closed then); malformed requests counted and logged at
    debug."""

    edge: Edge
    _raw: asyncio.Transport | None = None  # the socket's transport, while counted in edge.open
    _deadline: asyncio.TimerHandle  # from admit() on; cancelled whenever a request is whole
    _header_bytes = 0

    def admit(self, transport: asyncio.Transport) -> bool:
        """Count the connection in and start its deadline. At the cap the connection that has
        waited longest for a request (TLS handshake, headers or body, or idle after a response)
        is shed for it, so whoever connected first cannot keep the slots; when every slot has a
        request in flight, the new connection is closed at once."""
        if self.edge.open >= self.edge.max_connections:
            oldest = next(iter(self.edge.waiting), None)
            if oldest is None:
                transport.abort()
                return False
            oldest.shed()
        self.edge.open += 1
        self._raw = transport
        self._wait()
        return True

    def _wait(self) -> None:
        """Wait for the next request, under the deadline, the newest in line to be shed."""
        self._deadline = self.loop.call_later(self.edge.header_timeout, self._expired)
        self.edge.waiting[self] = None

    def _got_request(self) -> None:
        self._deadline.cancel()
        self.edge.waiting.pop(self, None)

    def shed(self) -> None:
        raw = self._raw
        log.debug("event=connection_shed client=%s", self.client)
        self.release()
        if raw is not None:
            raw.abort()

    def release(self) -> None:
        if self._raw is not None:
            self._raw = None
            self.edge.open -= 1
            self._got_request()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        # (uvicorn's own signature narrows BaseTransport to Transport the same way)
        if self._raw is not None or self.admit(transport):  # the TLS front admitted it before
            super().connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:
            # h11 checks its limit only while a request is incomplete, not on one big read;
            # above it, the 400 that uvicorn sends when h11's limit is hit.
            self._header_bytes += len(data)
            if self._header_bytes > MAX_HEADER_BYTES:
                self.send_400_response("Request header fields too large")
                return
        super().data_received(data)
        if self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):  # the request is whole
            self._got_request()

    def send_400_response(self, msg: str) -> None:
        self.edge.bad_requests += 1
        log.debug("event=bad_request client=%s state=%s", self.client, self.conn.our_state)
        if self.conn.our_state is h11.IDLE:  # no request accepted yet: the 400 is the answer
            super().send_400_response(msg)
        else:  # a bad body, or bytes after the response: the app's answer cannot follow a 400
            self.transport.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._header_bytes = 0  # the next request's, under a deadline of its own
            self._wait()

    def connection_lost(self, exc: Exception | None) -> None:
        self.release()
        if self.transport is not None:  # refused connections never reached uvicorn
            super().connection_lost(exc)

    def _expired(self) -> None:
        raw = self._raw
        if raw is not None and not raw.is_closing():
            log.debug("event=request_timeout client=%s", self.client)
            # Under TLS: the socket, whether or not the handshake is done. A response the
            # client has not read would hold close() until it drains: that one is aborted.
            if raw.get_write_buffer_size():
                raw.abort()
            else:
                raw.close()


class _TLSFront(asyncio.Protocol):
    """A TLS connection until its ClientHello: plain HTTP gets a 400 with a hint (as from Go's
    net/http); the app protocol admits the connection, so its deadline covers the handshake."""

    def __init__(self, app: _Protocol, web: LiveWebConfig) -> None:
        self._app, self._web, self._head = app, web, b""

    def connection_made(self, transport: Any) -> None:  # a selector socket transport
        self._raw = transport
        self._app.admit(transport)

    def data_received(self, data: bytes) -> None:
        self._head += data
        if self._head[:1] != b"\x16":  # not a TLS handshake record
            if len(self._head) >= 5:
                self._raw.write(NOT_TLS if self._head[:5] in HTTP_STARTS else b"")
                self._raw.close()
            return
        context = self._web.tls_context()
        if context is None:  # TLS is off in the config in force, or its files do not load
            self._raw.close()
            return
        waiter = self._app.loop.create_future()
        waiter.add_done_callback(self._handshake_done)
        tls = SSLProtocol(self._app.loop, self._app, context, waiter, True)
        self._raw.set_protocol(tls)
        tls.connection_made(self._raw)
        tls.get_buffer(len(self._head))[: len(self._head)] = self._head
        tls.buffer_updated(len(self._head))

    def _handshake_done(self, waiter: asyncio.Future[None]) -> None:
        if waiter.cancelled() or waiter.exception() or self._app.transport is None:
            self._app.release()  # the handshake failed: the app never saw the connection

    def connection_lost(self, exc: Exception | None) -> None:
        self._app.release()


class _LoopErrors:
    """The event loop's exception handler: one line a second at most, with the count since the
    last (asyncio reports a failed accept, e.g. EMFILE, once per queued connection)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock, self._next, self.count = clock, 0.0, 0

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        self.count += 1
        if self._clock() >= self._next:
            self._next = self._clock() + 1.0
            message, error = context.get("message"), context.get("exception")
            log.error("event=loop_error message=%r error=%r count=%d", message, error, self.count)
            self.count = 0


class Server:
    """A running server: ``port`` (the bound one, useful with port 0) and ``shutdown()``."""

    def __init__(
        self, config: uvicorn.Config, sock: socket.socket, app: EdgeApp, edge: Edge, tls: bool
    ) -> None:
        self._server, self._sock, self._app, self.edge = uvicorn.Server(config), sock, app, edge
        self.port, self.tls = int(sock.getsockname()[1]), tls
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), daemon=True)
        self._thread.start()

    async def _serve(self) -> None:
        asyncio.get_running_loop().set_exception_handler(_LoopErrors())
        await self._server.serve(sockets=[self._sock])

    def shutdown(self) -> None:
        """Stop accepting, close connections and wait briefly for the serving thread."""
        self._server.should_exit = True
        self._thread.join(timeout=SHUTDOWN_SECONDS + 3.0)
        self._sock.close()
        self._app.close()


def _bind(host: str, port: int) -> socket.socket:
    if host == "":  # every address: dual-stack IPv6 covers IPv4 too where the host has it
        host = "::" if socket.has_dualstack_ipv6() else "0.0.0.0"
    family, *_, (address, *_) = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and
    # without it a body that leaves in a second write waits for the client's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if address == "::":
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    sock.bind((address, port))
    sock.listen(BACKLOG)  # connections queue from now on, before the loop thread runs
    return sock


def serve(
    exposition: Exposition,
    address: str,
    web_config: WebConfig | str | os.PathLike[str] | None,
    healthy: Callable[[], bool],
    *,
    version: str = "",
    latest: Callable[[], NodeSnapshot] | None = None,
    registry: CollectorRegistry | None = None,
    max_requests: int = MAX_REQUESTS,
    max_connections: int = MAX_CONNECTIONS,
    header_timeout: float = HEADER_TIMEOUT_SECONDS,
) -> Server:
    """Serve in a background thread; return once the socket listens. ``web_config`` is
    LiveWebConfig's source; ``registry`` (the exposition's) gets the edge's counter; the rest is
    EdgeApp's."""
    web = LiveWebConfig(web_config)
    app = EdgeApp(exposition, web, max_requests, healthy=healthy, latest=latest, version=version)
    edge = Edge(max_connections, header_timeout)
    if registry is not None:
        registry.register(edge)
    plain = type("NpumonProtocol", (_Protocol,), {"edge": edge})
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        # uvicorn warns once per malformed or oversized request: a log flood under attack.
        logging.getLogger(name).setLevel(logging.ERROR)
    config = uvicorn.Config(
        app,
        http=(lambda **kw: _TLSFront(plain(**kw), web)) if web.tls else plain,  # type: ignore[arg-type]
        ws="none",
        lifespan="off",
        log_config=None,
        access_log=False,
        proxy_headers=False,
        server_header=False,
        headers=[("server", "npumon")],
        backlog=BACKLOG,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        timeout_graceful_shutdown=SHUTDOWN_SECONDS,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
    )
    return Server(config, _bind(*parse_listen_address(address)), app, edge, web.tls)
