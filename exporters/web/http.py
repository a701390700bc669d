"""HTTP(S) edge on asyncio and h11: connections capped, every phase of one under a deadline.

One event loop thread accepts, reads and answers; it sleeps while nothing happens (no timer
runs at rest). A connection is counted from accept to close. From accept, or from the last
response, its first bytes, its TLS handshake and its request head must arrive within
``header_timeout`` seconds, however slowly they come; otherwise it is closed (an idle
kept-alive connection too). A request body is never needed: it is read and dropped while the
answer is made, and after it (as net/http does) under the header deadline; the next request
is read once the body is whole.

Writes follow net/http: one response at a time, and the next request is neither read nor parsed
while the transport's buffer is above its high-water mark (``pause_writing``). A client that
reads nothing holds at most one response and that buffer, for ``WRITE_TIMEOUT_SECONDS``; a
response sent before a close (``Connection: close``, HTTP/1.0, a 400) gets the same deadline to
drain. A client that shuts down its write side after its request still gets the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import errno
import logging
import os
import resource
import socket
import struct
import threading
import time
import urllib.parse
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any

import h11

from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.builtin import EDGE
from npumon.exporters.spec import write
from npumon.exporters.web.edge import EdgeApp, Exposition
from npumon.exporters.web.webconfig import WebConfig
from npumon.exporters.web.weblive import LiveWebConfig

log = logging.getLogger(__name__)

MAX_REQUESTS = 40  # in-flight requests before a fast 503 (node_exporter's --web.max-requests)
MAX_CONNECTIONS = 1024  # open connections; the next sheds the oldest waiting one (privileges.md)
# at most 1/TLS_SHARE of them TLS: asyncio's TLS transport holds a 256 KiB read buffer each,
# with OpenSSL's ~320 KiB a connection (a plain one ~4 KiB idle, under 86 KiB reading a head)
TLS_SHARE = 4
# descriptors the connection cap leaves under the open-file limit: npu-smi's and hccn_tool's
# pipes, the kubelet's socket, state and log files, the loop's own (privileges.md)
OPEN_FILES_RESERVE = 128
MAX_HEADER_BYTES = 64 * 1024  # request line + headers; above it: 400 and the connection closed
HEADER_TIMEOUT_SECONDS = 10.0  # first bytes, TLS handshake and head, from accept or last response
WRITE_HIGH_WATER = 64 * 1024  # response bytes buffered above the kernel's before pause_writing
WRITE_TIMEOUT_SECONDS = 10.0  # a response not read (or not drained before a close) is cut then
BACKLOG = 2048  # the kernel's accept queue (the kernel caps it at net.core.somaxconn)
ACCEPT_BATCH = 64  # connections accepted per wake-up before the loop serves the others
ACCEPT_RETRY_SECONDS = 1.0  # out of descriptors or memory: accepting pauses this long
NOT_TLS = b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
HTTP_STARTS = (b"GET /", b"HEAD ", b"POST ", b"PUT /", b"OPTIO")  # Go's net/http looksLikeHTTP
TLS_RECORD = b"\x16"  # the first byte of a TLS handshake record
TLS_RECORD_HEADER = 5  # type, version (2), length (2): RFC 8446 5.1, TLSPlaintext
TLS_RECORD_MAX = 1 << 14  # a TLSPlaintext's length "MUST NOT exceed 2^14" (RFC 8446 5.1)
BAD_BODY = b"Invalid HTTP request received.\n"
BAD_REQUEST = (
    b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(BAD_BODY), BAD_BODY)
)
RESET_ON_CLOSE = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s
SHUTDOWN_SECONDS = 2  # grace for requests in flight at shutdown
OUT_OF_RESOURCES = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


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


class Connections:
    """What a server's connections share: those open under the cap, the bad requests, and the
    connections waiting (for their first bytes, TLS handshake or request head, idle after a
    response, or for the client to read a response, before a close too), the one that has
    waited longest first."""

    def __init__(
        self,
        max_connections: int,
        header_timeout: float,
        write_timeout: float = WRITE_TIMEOUT_SECONDS,
    ) -> None:
        self.max_connections, self.header_timeout = max_connections, header_timeout
        self.max_tls = max(1, max_connections // TLS_SHARE)
        self.write_timeout = write_timeout
        self.bad_requests = 0
        self.live: dict[_Connection, None] = {}
        self.tls: dict[_Connection, None] = {}  # those handed to TLS (handshake or after)
        self.waiting: dict[_Connection, None] = {}  # insertion-ordered: the oldest first

    @property
    def open(self) -> int:
        return len(self.live)

    def admit(self) -> bool:
        """Room for one more? At the cap the connection that has waited longest is shed for
        it, so whoever connected first cannot keep the slots; when every slot has a request in
        flight there is no room."""
        if len(self.live) >= self.max_connections:
            oldest = next(iter(self.waiting), None)
            if oldest is None:
                return False
            log.debug("event=connection_shed client=%s", oldest.client)
            oldest.end()
        return True

    def admit_tls(self) -> bool:
        """Room for one more TLS connection? At max_tls the TLS connection that has waited
        longest is shed for it (a handshake never finished first); none waiting: no room."""
        if len(self.tls) >= self.max_tls:
            oldest = next((c for c in self.waiting if c in self.tls), None)
            if oldest is None:
                return False
            log.debug("event=connection_shed client=%s tls=true", oldest.client)
            oldest.end()
        return True

    def exposition(self, openmetrics: bool) -> bytes:
        """The edge's own families (npumon_http_bad_requests_total)."""
        return write(((f, self.bad_requests) for f in EDGE), openmetrics)


class _Connection(asyncio.Protocol):
    """One accepted socket: TLS or not (from its first byte, on a TLS server), then requests
    read with h11 and answered by the app, one at a time."""

    def __init__(self, server: _Serving, sock: socket.socket, client: Any) -> None:
        self._server, self._sock, self.client = server, sock, client
        self._loop = server.loop
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEADER_BYTES)
        self._transport: asyncio.Transport | None = None
        self._answering: asyncio.Task[None] | None = None
        self._gone: asyncio.Future[None] = self._loop.create_future()
        self._started = self._loop.time()
        self._deadline: asyncio.TimerHandle | None = None
        self._handed = False  # the socket is the transport's (asyncio closes it) from then on
        self._paused = False  # the transport's write buffer is above its high-water mark
        self._next_waits = False  # a response is written; the next request waits for the drain
        self._draining = False  # answered before its body came whole: read on and drop it
        self._eof = False  # the client shut down its write side
        self._tls = False
        server.connections.live[self] = None
        self._wait()
        self._opening = self._loop.create_task(self._open())

    async def _open(self) -> None:
        """Give the socket a transport: plain, or TLS after the handshake."""
        try:
            if self._server.web.tls:
                if not await self._starts_tls():
                    self._drop()
                    return
                context = self._server.web.tls_context()
                if context is None:  # TLS is off in the config in force, or its files do not load
                    self._drop()
                    return
                if not self._server.connections.admit_tls():
                    self._drop()
                    return
                self._server.connections.tls[self] = None
                left = self._server.connections.header_timeout - (self._loop.time() - self._started)
                self._handed = True
                await self._loop.connect_accepted_socket(
                    lambda: self,
                    self._sock,
                    ssl=context,
                    ssl_handshake_timeout=max(left, 0.001),
                    ssl_shutdown_timeout=SHUTDOWN_SECONDS,
                )
            else:
                self._handed = True
                await self._loop.connect_accepted_socket(lambda: self, self._sock)
        except (Exception, asyncio.CancelledError) as exc:  # a failed or cut handshake
            log.debug("event=connection_failed client=%s error=%r", self.client, exc)
            if self._transport is None:
                self._drop()

    async def _readable(self) -> None:
        fd = self._sock.fileno()
        readable: asyncio.Future[None] = self._loop.create_future()
        self._loop.add_reader(fd, _set_once, readable)
        try:
            await readable
        finally:
            if self._sock.fileno() == fd:  # not closed (and its number reused) meanwhile
                self._loop.remove_reader(fd)

    async def _starts_tls(self) -> bool:
        """Wait for the first byte without reading it: a TLS record goes on to the handshake
        once it has arrived whole; plain HTTP gets Go's 400 with its hint (net/http's answer),
        anything else is closed."""
        head = b""
        while True:
            await self._readable()
            try:
                if not head and self._sock.recv(1, socket.MSG_PEEK) == TLS_RECORD:
                    return await self._record_arrived()
                chunk = self._sock.recv(65536)  # not TLS: read, so that closing sends no reset
            except BlockingIOError:
                continue
            except OSError:
                return False
            head += chunk
            if not chunk or len(head) >= 5:
                if head[:5] in HTTP_STARTS:
                    with contextlib.suppress(OSError):
                        self._sock.send(NOT_TLS)
                return False

    async def _record_arrived(self) -> bool:
        """Wait, reading nothing, until the first TLS record (the ClientHello) is whole in the
        socket's buffer: the TLS transport, ~320 KiB with its read buffer, is made only for a
        client that sent one (a real client sends it at once). The socket's SO_RCVLOWAT wakes
        the loop only when the bytes awaited are in, or at EOF (then False). A record longer
        than TLS allows is not waited for: the handshake refuses it."""
        need, mark = TLS_RECORD_HEADER, 0
        while True:
            try:
                peeked = self._sock.recv(need, socket.MSG_PEEK)
                if len(peeked) >= TLS_RECORD_HEADER and need == TLS_RECORD_HEADER:
                    length = int.from_bytes(peeked[3:5], "big")
                    if length > TLS_RECORD_MAX:
                        return True
                    need += length
                if len(peeked) >= need:
                    self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, 1)
                    return True
                if mark == need:
                    return False  # woken at the mark yet short of it: closed or failed
                self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, need)
                mark = need
            except OSError:
                return False
            await self._readable()

    def _drop(self) -> None:
        """The socket never got a transport: close it (unless asyncio did) and free its slot."""
        if not self._handed and self._sock.fileno() >= 0:
            self._loop.remove_reader(self._sock.fileno())  # while its first bytes were awaited
            self._sock.close()
        self._release()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._tls = transport.get_extra_info("sslcontext") is not None
        # TLS's default is 512 KiB; one response waits at most this much above the socket's
        transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)

    def data_received(self, data: bytes) -> None:
        if self._transport is None or self._transport.is_closing():
            return  # what a closing TLS transport still hands on
        self._h11.receive_data(data)
        if not self._next_waits:  # else reading is paused: at most one read waits in h11
            self._events()  # while answering too: a body is dropped, pipelined bytes bounded

    def _events(self) -> None:
        """Take what h11 has read: a request head starts its answer; a body is dropped."""
        while True:
            try:
                event = self._h11.next_event()
            except h11.RemoteProtocolError:
                if self._answering is None:
                    self._bad()
                else:  # a bad body, or bytes after an HTTP/1.0 request: answered, then closed
                    assert self._transport is not None
                    self._transport.pause_reading()
                return
            if event is h11.NEED_DATA or event is h11.PAUSED:
                break
            if isinstance(event, h11.Request):
                if _head_size(event) > MAX_HEADER_BYTES:  # complete in one read: h11 let it by
                    self._bad()
                    return
                self._stop_waiting()
                self._answering = self._loop.create_task(self._answer(event))
            elif isinstance(event, h11.EndOfMessage) and self._draining:
                self._draining = False  # the answered request's body is whole
                if self._paused:
                    self._next_waits = True
                else:
                    self._next_request()
                return
            elif isinstance(event, h11.ConnectionClosed):
                if self._answering is None:  # else the answer closes once written
                    self._close()
                return
        if self._answering is not None and len(self._h11.trailing_data[0]) > MAX_HEADER_BYTES:
            assert self._transport is not None
            self._transport.pause_reading()  # pipelined requests wait in the kernel

    async def _answer(self, request: h11.Request) -> None:
        method, target = request.method.decode("ascii"), request.target.decode("latin-1")
        path = urllib.parse.unquote(target.partition("?")[0])
        headers = {name.decode("latin-1"): v.decode("latin-1") for name, v in request.headers}
        try:
            status, extra, body = await self._server.app(method, path, headers, self._gone)
        except Exception as exc:  # the app answers its own failures; this is a bug in it
            log.error("event=request_failed error=%r", exc, exc_info=exc)
            status, extra, body = 500, [(b"content-length", b"0")], b""
        transport = self._transport
        assert transport is not None
        self._answering = None
        if transport.is_closing():
            return
        date = email.utils.formatdate(usegmt=True).encode()
        head = h11.Response(
            status_code=status,
            headers=[(b"date", date), (b"server", b"npumon"), *extra],
            reason=HTTPStatus(status).phrase.encode(),
        )
        out = self._h11.send(head) or b""
        if method != "HEAD":
            out += self._h11.send(h11.Data(data=body)) or b""
        transport.write(out + (self._h11.send(h11.EndOfMessage()) or b""))
        if self._h11.our_state is h11.DONE and self._h11.their_state is h11.SEND_BODY:
            self._draining = True  # as net/http: the rest of the body, then the next request
            if not self._paused:  # else resume_writing reads on
                self._drain_body()
        elif self._h11.our_state is not h11.DONE or self._h11.their_state is not h11.DONE:
            self._close()  # asked to close, or the body is bad or cut: no next request
        elif self._paused:
            self._next_waits = True  # resume_writing reads on
        else:
            self._next_request()

    def _drain_body(self) -> None:
        """Read what is left of an answered request's body, under the header deadline."""
        assert self._transport is not None
        if not self._eof:
            self._transport.resume_reading()
        self._wait()
        self._events()

    def _next_request(self) -> None:
        """The response is out of the buffer: read the next request (maybe read already)."""
        assert self._transport is not None
        self._h11.start_next_cycle()
        if not self._eof:
            self._transport.resume_reading()
        self._wait()
        self._events()

    def pause_writing(self) -> None:
        """The client reads slower than we write: read nothing more, and give it
        WRITE_TIMEOUT_SECONDS to take what is buffered; until then the cap may shed it."""
        self._paused = True
        assert self._transport is not None
        self._transport.pause_reading()
        self._wait(self._server.connections.write_timeout)

    def resume_writing(self) -> None:
        """Below the low-water mark: the next request, if a response waited for this (a close
        keeps its deadline)."""
        self._paused = False
        if self._next_waits:
            self._next_waits = False
            self._next_request()
        elif self._draining:
            self._drain_body()

    def _close(self) -> None:
        """Close once what is buffered is sent, within WRITE_TIMEOUT_SECONDS (aborted then),
        sheddable meanwhile."""
        assert self._transport is not None
        if self._transport.is_closing():  # a second close() breaks asyncio's TLS transport
            return
        self._stop_waiting()
        self._transport.close()
        self._wait(self._server.connections.write_timeout)

    def _bad(self) -> None:
        """A malformed request: its 400 when nothing was answered yet, then the close."""
        self._server.connections.bad_requests += 1
        log.debug("event=bad_request client=%s state=%s", self.client, self._h11.our_state)
        assert self._transport is not None
        if self._answering is None and self._h11.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            self._transport.write(BAD_REQUEST)
        self._close()

    def eof_received(self) -> bool | None:
        """The client shut down its write side: a request read whole is answered (as net/http
        answers it), then the connection closes; an unfinished head gets its 400; nothing
        pending closes it. asyncio's TLS transport closes on EOF whatever this returns. As
        net/http cancels a request's context at EOF, ``gone`` completes: a bcrypt check still
        queued for this client is dropped (a client that left and one that half-closed look
        alike until a write fails)."""
        self._eof = True
        if not self._gone.done():
            self._gone.set_result(None)
        assert self._transport is not None
        if self._transport.is_closing():
            return None
        self._h11.receive_data(b"")
        if self._answering is None and not self._next_waits:
            self._events()
        return None if self._tls else True

    def connection_lost(self, exc: Exception | None) -> None:
        self._release()
        if not self._gone.done():
            self._gone.set_result(None)

    def _wait(self, timeout: float | None = None) -> None:
        """Wait for the next request (or ``timeout`` for the client to read), under the
        deadline, the newest in line to be shed."""
        if timeout is None:
            timeout = self._server.connections.header_timeout
        self._stop_waiting()
        self._deadline = self._loop.call_later(timeout, self._expired)
        self._server.connections.waiting[self] = None

    def _stop_waiting(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._server.connections.waiting.pop(self, None)

    def _release(self) -> None:
        self._stop_waiting()
        self._server.connections.live.pop(self, None)
        self._server.connections.tls.pop(self, None)

    def _expired(self) -> None:
        log.debug("event=request_timeout client=%s", self.client)
        self.end()

    def end(self) -> None:
        """Close now and free the slot. A response the client has not read would hold a close
        until it drains (in the kernel too), and a TLS close waits for the client's: those are
        reset, which frees what the kernel holds for them at once."""
        self._release()
        transport = self._transport
        if transport is None:  # first bytes or TLS handshake, maybe not even started
            self._drop()
            self._opening.cancel()
        elif self._paused or transport.get_write_buffer_size() or self._server.web.tls:
            sock = transport.get_extra_info("socket")
            if sock is not None:  # a zero linger: the close sends a reset, not what is queued
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET_ON_CLOSE)
            transport.abort()
        else:
            transport.close()


def _head_size(request: h11.Request) -> int:
    """The request line and headers as read, give or take their optional whitespace."""
    line = len(request.method) + len(request.target) + 12
    return line + sum(len(name) + len(value) + 4 for name, value in request.headers)


def _set_once(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _LoopErrors:
    """The event loop's exception handler and the accept errors' logger: one line a second at
    most, with the count since the last (an accept fails once per queued connection)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock, self._next, self.count = clock, 0.0, 0

    def __call__(self, loop: asyncio.AbstractEventLoop | None, context: dict[str, Any]) -> None:
        self.count += 1
        if self._clock() >= self._next:
            self._next = self._clock() + 1.0
            message, error = context.get("message"), context.get("exception")
            log.error("event=loop_error message=%r error=%r count=%d", message, error, self.count)
            self.count = 0


class _Serving:
    """What the loop thread serves with: the listening socket, the app, the web config, the
    connections."""

    def __init__(
        self, sock: socket.socket, app: EdgeApp, web: LiveWebConfig, connections: Connections
    ) -> None:
        self.sock, self.app, self.web, self.connections = sock, app, web, connections
        self.loop = asyncio.new_event_loop()
        self.errors = _LoopErrors()
        self.loop.set_exception_handler(self.errors)

    def listen(self) -> None:
        self.loop.add_reader(self.sock.fileno(), self._accept)

    def _accept(self) -> None:
        for _ in range(ACCEPT_BATCH):
            try:
                sock, client = self.sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as exc:
                self.errors(self.loop, {"message": "accept failed", "exception": exc})
                if exc.errno in OUT_OF_RESOURCES:  # retried later, not on every wake-up
                    self.loop.remove_reader(self.sock.fileno())
                    self.loop.call_later(ACCEPT_RETRY_SECONDS, self.listen)
                return
            sock.setblocking(False)
            if self.connections.admit():
                _Connection(self, sock, client)
            else:
                sock.close()

    async def stop(self) -> None:
        """Stop accepting; give requests in flight SHUTDOWN_SECONDS, then close every
        connection."""
        self.loop.remove_reader(self.sock.fileno())
        answering = [c._answering for c in self.connections.live if c._answering is not None]
        if answering:
            await asyncio.wait(answering, timeout=SHUTDOWN_SECONDS)
        for connection in list(self.connections.live):
            connection.end()
        await asyncio.sleep(0)  # the aborts' connection_lost callbacks


class Server:
    """A running server: ``port`` (the bound one, useful with port 0) and ``shutdown()``."""

    def __init__(self, serving: _Serving) -> None:
        self._serving, self.connections = serving, serving.connections
        self.port, self.tls = int(serving.sock.getsockname()[1]), serving.web.tls
        serving.loop.call_soon(serving.listen)
        self._thread = threading.Thread(target=serving.loop.run_forever, daemon=True)
        self._thread.start()

    def shutdown(self) -> None:
        """Stop accepting, close connections and wait briefly for the serving thread."""
        loop = self._serving.loop
        stopped = asyncio.run_coroutine_threadsafe(self._serving.stop(), loop)
        try:
            stopped.result(timeout=SHUTDOWN_SECONDS + 3.0)
        except Exception as exc:  # a stuck loop: the thread is a daemon, the process goes on
            log.error("event=shutdown_failed error=%r", exc)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout=3.0)
        if not self._thread.is_alive():
            loop.close()
        self._serving.sock.close()
        self._serving.app.close()


def connection_cap(configured: int, open_files: int) -> int:
    """The connection cap in force: ``configured``, or less under an open-file limit of
    ``open_files``, so that OPEN_FILES_RESERVE descriptors stay for the rest (at least one
    connection): connections shed one another before an accept fails with EMFILE."""
    if open_files == resource.RLIM_INFINITY:
        return configured
    return max(1, min(configured, open_files - OPEN_FILES_RESERVE))


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
    sock.setblocking(False)
    return sock


# sd_listen_fds(3): the first descriptor systemd passes to a socket-activated service
SD_LISTEN_FDS_START = 3
SD_LISTEN_ENV = ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES")


def systemd_socket() -> socket.socket:
    """The listening TCP socket systemd passed (socket activation, as exporter-toolkit's
    --web.systemd-socket and sd_listen_fds(3)): LISTEN_PID names this process and LISTEN_FDS is 1.
    The variables are removed, so npumon's children never see them; the descriptor is not
    inherited. ValueError says what is missing."""
    pid, count = os.environ.get("LISTEN_PID"), os.environ.get("LISTEN_FDS")
    if pid is None or count is None:
        raise ValueError(
            "no socket from systemd (LISTEN_PID and LISTEN_FDS are unset): start npumon from its"
            " .socket unit (deploy/systemd/npumon.socket)"
        )
    if pid != str(os.getpid()):
        raise ValueError(f"LISTEN_PID {pid} is not this process ({os.getpid()})")
    if count != "1":
        raise ValueError(f"LISTEN_FDS is {count}: npumon serves one socket (one ListenStream=)")
    for name in SD_LISTEN_ENV:
        os.environ.pop(name, None)
    sock = socket.socket(fileno=SD_LISTEN_FDS_START)
    if sock.type != socket.SOCK_STREAM or not sock.getsockopt(
        socket.SOL_SOCKET, socket.SO_ACCEPTCONN
    ):
        sock.detach()
        raise ValueError(f"descriptor {SD_LISTEN_FDS_START} is not a listening stream socket")
    sock.set_inheritable(False)
    sock.setblocking(False)
    return sock


def serve(
    exposition: Exposition,
    address: str,
    web_config: WebConfig | str | os.PathLike[str] | None,
    healthy: Callable[[], bool],
    *,
    version: str = "",
    latest: Callable[[], NodeSnapshot] | None = None,
    max_requests: int = MAX_REQUESTS,
    max_connections: int = MAX_CONNECTIONS,
    header_timeout: float = HEADER_TIMEOUT_SECONDS,
    write_timeout: float = WRITE_TIMEOUT_SECONDS,
    reports: Path | None = None,
    listening: socket.socket | None = None,
) -> Server:
    """Serve in a background thread; return once the socket listens. ``max_connections`` is
    lowered under the open-file limit in force (connection_cap). ``web_config`` is
    LiveWebConfig's source; the returned server's ``connections.exposition`` writes the edge's
    own counter; the rest is EdgeApp's. ``listening``: a socket that already listens (systemd's,
    ``systemd_socket``) instead of binding ``address``."""
    web = LiveWebConfig(web_config)
    app = EdgeApp(
        exposition,
        web,
        max_requests,
        healthy=healthy,
        latest=latest,
        version=version,
        reports=reports,
    )
    open_files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    cap = connection_cap(max_connections, open_files)
    if cap < max_connections:
        log.warning(
            "event=connection_cap_lowered configured=%d effective=%d open_files=%d reserve=%d",
            max_connections,
            cap,
            open_files,
            OPEN_FILES_RESERVE,
        )
    connections = Connections(cap, header_timeout, write_timeout)
    sock = listening if listening is not None else _bind(*parse_listen_address(address))
    return Server(_Serving(sock, app, web, connections))
