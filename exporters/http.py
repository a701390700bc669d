"""HTTP(S) edge on uvicorn: bounded headers read under a deadline, then the EdgeApp."""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import logging
import os
import socket
import ssl
import threading
from collections.abc import Callable
from http import HTTPStatus
from typing import Any, ClassVar, cast
from urllib.parse import unquote

import h11
import uvicorn
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from uvicorn.protocols.http.h11_impl import H11Protocol

from npumon.exporters.edge import BUSY, TEXT_BYTES, EdgeApp, Exposition, Scope
from npumon.exporters.memtrim import Trimmer
from npumon.exporters.rendercache import Prerenderer, RenderCache
from npumon.exporters.webconfig import WebConfig
from npumon.exporters.weblive import LiveWebConfig

__all__ = ["RenderCache", "Server", "parse_listen_address", "serve"]

log = logging.getLogger(__name__)

MAX_REQUESTS = 40  # in-flight requests before a fast 503 (node_exporter's --web.max-requests)
MAX_HEADER_BYTES = 64 * 1024  # request line + headers; above it: 400 and the connection closed
HEADER_TIMEOUT_SECONDS = 10.0  # from connect (or the last response) to the end of the headers
HEADS_KEPT, HEAD_KEPT_BYTES = 64, 4096  # parsed request texts kept for shedding 503s (at most)
BACKLOG = 2048  # the kernel's accept queue (the kernel caps it at net.core.somaxconn)
TOO_LARGE = (b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n"
             b"connection: close\r\n\r\n")
TLS_READ_BUFFER = 4 * 1024  # per TLS connection (asyncio default 256 KB)
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
    trimmer: ClassVar[Trimmer | None] = None
    edge: ClassVar[EdgeApp | None] = None
    _busy: ClassVar[tuple[tuple[object, ...], bytes] | None] = None  # the last 503 and its key
    _heads: ClassVar[dict[bytes, tuple[str, str, bytes | None]]]  # _head's parses, per server
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
            if self.edge is not None and self.edge.full() and self._shed(self.edge, data):
                return
        cycle = self.cycle
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the headers are complete
            self._disarm()
        if self.edge is not None and self.cycle is not cycle:  # parsed; its task not yet run
            self.edge.admit(cast(Scope, self.cycle.scope))  # uvicorn's TypedDict: a dict

    def _shed(self, edge: EdgeApp, data: bytes) -> bool:
        """Every slot taken: answer a whole GET/HEAD /metrics with known-good credentials with
        its 503 here, as it is read, without an ASGI task. A burst's surplus then gets its 503s
        within a few ms rather than after every request parsed before it (~0.15 ms each
        through a task). Anything else (a partial or pipelined request, an uncached credential,
        "Connection: close") goes on to uvicorn untouched, which refuses it alike, later."""
        if self.conn.our_state is not h11.IDLE or self.conn.trailing_data[0]:
            return False  # a response under way, or the start of a request already read
        head = self._head(data)
        if head is None:
            return False
        method, path, authorization = head
        extra = edge.refusal(method, path, authorization)
        if extra is None:
            return False
        key = (method, self.server_state.default_headers, extra)  # the date header: per second
        busy = self._busy
        if busy is None or busy[0] != key:
            busy = type(self)._busy = (key, _busy_reply(*key))
        self.transport.write(busy[1])
        self.on_response_complete()  # keep-alive timer and header deadline, as uvicorn's
        return True

    def _head(self, data: bytes) -> tuple[str, str, bytes | None] | None:
        """Method, path and Authorization of ``data`` when it is exactly one whole keep-alive
        request without a body, parsed by an h11 connection of its own. Scrapers repeat their
        request byte for byte, so a parse is kept per request text (HEADS_KEPT of them, each up to
        HEAD_KEPT_BYTES)."""
        head = self._heads.get(data)
        if head is not None:
            return head
        probe = h11.Connection(h11.SERVER)
        probe.receive_data(data)
        try:
            request, end = probe.next_event(), probe.next_event()
        except h11.RemoteProtocolError:
            return None
        if (not isinstance(request, h11.Request) or not isinstance(end, h11.EndOfMessage)
                or probe.trailing_data[0] or not _keeps_alive(request)):
            return None
        head = (request.method.decode("ascii"),
                unquote(request.target.partition(b"?")[0].decode("ascii")),
                next((v for k, v in request.headers if k == b"authorization"), None))
        if len(data) <= HEAD_KEPT_BYTES:
            if len(self._heads) >= HEADS_KEPT:
                self._heads.clear()
            self._heads[data] = head
        return head

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)
        if self.trimmer is not None:
            self.trimmer.closed()

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


def _busy_reply(method: str, default_headers: list[tuple[bytes, bytes]],
                extra: tuple[tuple[bytes, bytes], ...]) -> bytes:
    """The bytes of the 503 for a keep-alive GET or HEAD, serialised by h11."""
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(f"{method} /metrics HTTP/1.1\r\nhost: npumon\r\n\r\n".encode())
    conn.next_event()
    headers = [*default_headers, (b"content-type", TEXT_BYTES),
               (b"content-length", str(len(BUSY)).encode()), *extra]
    reply = [conn.send(h11.Response(status_code=503, headers=headers,
                                    reason=HTTPStatus(503).phrase.encode()))]
    if method == "GET":
        reply.append(conn.send(h11.Data(data=BUSY)))
    reply.append(conn.send(h11.EndOfMessage()))
    return b"".join(filter(None, reply))


def _keeps_alive(request: h11.Request) -> bool:
    """h11's rule: HTTP/1.1 without "Connection: close"."""
    return request.http_version == b"1.1" and not any(
        name == b"connection" and b"close" in value.lower() for name, value in request.headers)


class Server:
    """A running server: ``port`` (the bound one, useful with port 0) and ``shutdown()``."""

    def __init__(self, server: uvicorn.Server, sock: socket.socket, app: EdgeApp,
                 tls: bool, prerenderer: Prerenderer | None, trimmer: Trimmer) -> None:
        self._server, self._sock, self._app = server, sock, app
        self._prerenderer, self._trimmer = prerenderer, trimmer
        self.host, self.port = str(sock.getsockname()[0]), int(sock.getsockname()[1])
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
        if self._prerenderer is not None:
            self._prerenderer.close()
        self._trimmer.close()


def _bind(host: str, port: int) -> socket.socket:
    if host == "":
        # ':9732' means every address; dual-stack IPv6 covers IPv4 too where the host has it.
        family, target = (
            (socket.AF_INET6, ("::", port)) if socket.has_dualstack_ipv6()
            else (socket.AF_INET, ("0.0.0.0", port))
        )
    else:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        family, target = info[0], (str(info[4][0]), port)
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6 and target[0] == "::":
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    sock.bind(target)
    sock.listen(BACKLOG)  # connections queue from now on, before the loop thread runs
    sock.setblocking(False)
    return sock


def _uvicorn_config(app: EdgeApp, tls: ssl.SSLContext | None,
                    protocol: type[H11Protocol]) -> uvicorn.Config:
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        # uvicorn warns once per malformed or oversized request: a log flood under attack.
        logging.getLogger(name).setLevel(logging.ERROR)
    factory: Any = None if tls is None else (lambda config, default: tls)
    return uvicorn.Config(
        app, loop="asyncio", http=protocol, ws="none", lifespan="off", interface="asgi3",
        log_config=None, access_log=False, proxy_headers=False, server_header=False,
        headers=[("server", "npumon")], backlog=BACKLOG, timeout_keep_alive=KEEP_ALIVE_SECONDS,
        timeout_graceful_shutdown=SHUTDOWN_SECONDS, h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        ssl_context_factory=factory,
    )


def serve(
    registry: CollectorRegistry,
    address: str,
    web_config: WebConfig | str | os.PathLike[str] | None,
    healthy: Callable[[], bool],
    *,
    version: str = "",
    status: Callable[[], str] | None = None,
    render_version: Callable[[], object] | None = None,
    exposition: Exposition | None = None,
    subscribe: Callable[[Callable[[], None]], None] | None = None,
    max_requests: int = MAX_REQUESTS,
    header_timeout: float = HEADER_TIMEOUT_SECONDS,
) -> Server:
    """Start serving in a background thread and return once the socket listens.

    ``web_config`` is a web-config.yml path (re-read when it changes), a loaded WebConfig
    (fixed) or None (plain HTTP, no auth). ``healthy`` decides /healthz (200 or 503);
    ``status`` is an optional one-line text on the data sources, shown on the landing page and
    as the 503 reason. Neither, nor a scrape, may block: they read in-memory state only.
    ``render_version`` (the store's ``latest``) lets scrapes of an unchanged snapshot reuse
    the last exposition; with ``subscribe`` too (it registers a callback run after each
    publish), a thread renders each new snapshot before it is scraped. ``exposition`` renders
    the body (OpenMetrics or not); by default prometheus_client's encoders over ``registry``.
    Raises WebConfigError when the web config file is broken.
    """
    if isinstance(web_config, WebConfig | None):
        web = LiveWebConfig(None, web_config)
    else:
        web = LiveWebConfig(web_config)
    tls = web.server_context()
    if tls is not None:
        # asyncio gives every TLS connection a zero-filled 256 KB read buffer: 500 idle TLS
        # connections were +150 MB of RSS (+16 MB at 32 KB). Requests are headers only, so
        # 4 KB reads take a request in one or two. (A class attribute of the stdlib; npumon runs no
        # other asyncio TLS.)
        asyncio.sslproto.SSLProtocol.max_size = TLS_READ_BUFFER
    if exposition is None:
        def exposition(openmetrics: bool) -> bytes:
            return (generate_openmetrics if openmetrics else generate_latest)(registry)
    cache = RenderCache(render_version) if render_version else None
    prerenderer = None
    if cache is not None and subscribe is not None:
        prerenderer = Prerenderer(cache)
        subscribe(prerenderer.changed)
    app = EdgeApp(
        exposition, web, max_requests=max_requests, healthy=healthy, status=status,
        version=version, cache=cache,
    )
    trimmer = Trimmer()
    protocol = type("NpumonProtocol", (_Protocol,),
                    {"header_timeout": header_timeout, "trimmer": trimmer, "edge": app,
                     "_heads": {}})
    sock = _bind(*parse_listen_address(address))
    server = Server(uvicorn.Server(_uvicorn_config(app, tls, protocol)), sock, app,
                    tls is not None, prerenderer, trimmer)
    trimmer.start()
    return server
