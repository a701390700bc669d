"""The ASGI app behind the server: auth, bounded in-flight requests, routes, render cache."""

from __future__ import annotations

import asyncio
import gzip
import html
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from prometheus_client.exposition import choose_encoder

from npumon.exporters.auth import BasicAuth
from npumon.exporters.rendercache import Key, RenderCache
from npumon.exporters.weblive import Active, LiveWebConfig

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
TEXT = "text/plain; charset=utf-8"
TEXT_BYTES = TEXT.encode()
LIVENESS_PATH = "/-/healthy"  # unauthenticated, says nothing but "OK": for Kubernetes probes
RENDER_THREADS = 2  # collectors run here, off the event loop; the cache makes most scrapes free
# gzip level 1: a 16-chip exposition (230 KB) takes 1.0 ms and 27 KB, level 6 3.8 ms and 22 KB
GZIP_LEVEL = 1
Exposition = Callable[[bool], bytes]  # OpenMetrics? -> the body
BUSY = b"Too many requests in flight\n"  # the 503's body
SLOT = "npumon.slot"  # in scope["extensions"]: this request holds one of the max_requests slots
JUDGED = "npumon.judged"  # in scope["extensions"]: what ``admit`` found (a _Judged)


@dataclass(frozen=True)
class _Judged:
    """What ``admit`` found as a /metrics request was parsed, so that its task does not work it
    out again: the web config it was judged by (its credentials are cached good under it), its
    decoded headers, the render cache key and whether the body is OpenMetrics."""

    active: Active
    headers: dict[str, str]
    key: Key
    openmetrics: bool


def _decoded(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in raw}


def _variant(headers: Mapping[str, str]) -> tuple[Key, bool]:
    """The render cache's key (content type, gzip) for these request headers, and whether the
    body is OpenMetrics."""
    _, content_type = choose_encoder(headers.get("accept", ""))
    zipped = gzip_wanted(headers.get("accept-encoding", ""))
    return (content_type, zipped), content_type.startswith("application/openmetrics-text")


def gzip_wanted(accept_encoding: str) -> bool:
    """True when gzip (or ``*``) is listed with a q-value above 0 (``gzip;q=0`` refuses it)."""
    weights: dict[str, float] = {}
    for item in accept_encoding.split(","):
        coding, *params = (part.strip() for part in item.split(";"))
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        weights[coding.lower()] = q
    return weights.get("gzip", weights.get("*", 0.0)) > 0


class EdgeApp:
    """Every path but LIVENESS_PATH needs auth when users are configured; at most
    ``max_requests`` authorised /metrics requests are in flight (rendering or being handed to
    the connection), the rest get a 503 at once. As node_exporter's --web.max-requests, the
    limit is inside auth: a flood of bad credentials waits on bcrypt and gets its 401, but
    cannot take the slots of a scraper whose credentials are cached, and /healthz and the
    landing page never count."""

    def __init__(self, exposition: Exposition, web: LiveWebConfig, *, max_requests: int,
                 healthy: Callable[[], bool], status: Callable[[], str] | None, version: str,
                 cache: RenderCache | None) -> None:
        self._exposition, self._web, self._max = exposition, web, max_requests
        self._healthy, self._status_fn, self._version, self._cache = healthy, status, version, cache
        self._in_flight = 0
        self._bcrypt = ThreadPoolExecutor(1, thread_name_prefix="npumon-bcrypt")
        self._render = ThreadPoolExecutor(RENDER_THREADS, thread_name_prefix="npumon-render")

    def close(self) -> None:
        self._bcrypt.shutdown(wait=False, cancel_futures=True)
        self._render.shutdown(wait=False, cancel_futures=True)

    def full(self) -> bool:
        """Every slot taken: an authorised /metrics would get a 503 now."""
        return self._in_flight >= self._max

    def admit(self, scope: Scope) -> None:
        """Called by the server as it parses a request, before the request's task runs: an
        authorised /metrics that must wait for a render takes its slot now. A burst parsed in
        one go is then counted as it arrives, so its surplus is refused while it is read
        (``refusal``), not after every task ahead of it has run. A request whose body is ready
        takes its slot in its task, as do undecided ones (an uncached credential: bcrypt
        first)."""
        raw = scope["headers"]
        authorization = next((v for k, v in raw if k == b"authorization"), None)
        active = self._known_good(scope["method"], scope["path"], authorization)
        if active is None:
            return
        headers = _decoded(raw)
        judged = scope.setdefault("extensions", {})[JUDGED] = _Judged(
            active, headers, *_variant(headers))
        if self._cache is None or not self._cache.ready(judged.key):
            self._take(scope)

    def refusal(self, method: str, path: str,
                authorization: bytes | None) -> tuple[tuple[bytes, bytes], ...] | None:
        """The web config's extra headers for the 503 that this request gets anyway, when every
        slot is taken and it is a GET/HEAD of /metrics whose credentials are known good without
        bcrypt; None: let it take the normal path (which refuses it alike, only later)."""
        if not self.full():
            return None
        active = self._known_good(method, path, authorization)
        return None if active is None else active.headers

    def _known_good(self, method: str, path: str, authorization: bytes | None) -> Active | None:
        if method not in ("GET", "HEAD") or path != "/metrics":
            return None
        active = self._web.current()
        if active is None or (active.auth is not None and active.auth.cached(
                None if authorization is None else authorization.decode("latin-1")) is not True):
            return None
        return active

    def _take(self, scope: Scope) -> bool:
        """A slot for this request (True), taken now or when it was parsed; False when full."""
        extensions = scope.setdefault("extensions", {})
        if extensions.get(SLOT):
            return True
        if self.full():
            return False
        self._in_flight += 1
        extensions[SLOT] = True
        return True

    async def __call__(self, scope: Scope, receive: Any, send: Send) -> None:
        if scope["type"] != "http":
            return
        try:
            await self._route(scope, send)
        finally:
            if scope.get("extensions", {}).get(SLOT):
                self._in_flight -= 1

    async def _route(self, scope: Scope, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await _send(send, 405, b"Method Not Allowed\n", TEXT, (), [(b"allow", b"GET, HEAD")])
            return
        if scope["path"] == LIVENESS_PATH:
            await _send(send, 200, b"OK\n", TEXT, ())
            return
        judged: _Judged | None = scope.get("extensions", {}).get(JUDGED)
        active = self._web.current() if judged is None else judged.active
        if active is None:  # the web config file is broken: fail closed (exporter-toolkit too)
            await _send(send, 500, b"Internal Server Error\n", TEXT, ())
            return
        await self._handle(scope, send, active, judged)

    async def _handle(self, scope: Scope, send: Send, active: Active,
                      judged: _Judged | None) -> None:
        auth, extra = active.auth, active.headers
        headers = _decoded(scope["headers"]) if judged is None else judged.headers
        if judged is None and auth is not None and not await self._authorized(
                auth, headers.get("authorization")):
            challenge = [(k.lower().encode(), v.encode()) for k, v in auth.challenge().items()]
            await _send(send, 401, b"Unauthorized\n", TEXT, extra, challenge)
            return
        path = scope["path"]
        if path == "/metrics":
            if not self._take(scope):
                await _send(send, 503, BUSY, TEXT, extra)
                return
            await self._metrics(send, _variant(headers) if judged is None else (
                judged.key, judged.openmetrics), extra)
        elif path == "/healthz":
            ok, reason = self._health()
            text = "ok\n" if ok else f"unhealthy: {reason}\n"
            await _send(send, 200 if ok else 503, text.encode(), TEXT, extra)
        elif path == "/":
            await _send(send, 200, self._landing().encode(), "text/html; charset=utf-8", extra)
        else:
            await _send(send, 404, b"Not Found: try /metrics\n", TEXT, extra)

    async def _authorized(self, auth: BasicAuth, header: str | None) -> bool:
        known = auth.cached(header)
        if known is not None:
            return known
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._bcrypt, auth.check, header)

    async def _metrics(self, send: Send, variant: tuple[Key, bool],
                       extra: tuple[tuple[bytes, bytes], ...]) -> None:
        key, openmetrics = variant
        content_type, zipped = key

        def render() -> bytes:
            body = self._exposition(openmetrics)
            return gzip.compress(body, compresslevel=GZIP_LEVEL) if zipped else body

        cache = self._cache
        try:
            body = cache.peek(key) if cache is not None else None
            if body is None:
                work = (lambda: cache.get(key, render)) if cache is not None else render
                body = await asyncio.get_running_loop().run_in_executor(self._render, work)
        except Exception as exc:  # a collector outside NpuCollector's boundaries: visible 500
            log.error("event=scrape_failed error=%r", exc, exc_info=exc)
            await _send(send, 500, f"scrape failed: {exc!r}\n".encode(), TEXT, extra)
            return
        more = [(b"content-encoding", b"gzip")] if zipped else []
        await _send(send, 200, body, content_type, extra, more + [(b"vary", b"Accept-Encoding")])

    def _health(self) -> tuple[bool, str]:
        try:
            ok = bool(self._healthy())
        except Exception as exc:  # a broken health callback is an unhealthy answer, not a 500
            return False, f"health check failed: {exc!r}"
        return ok, "" if ok else self._status() or "not healthy"

    def _status(self) -> str:
        if self._status_fn is None:
            return ""
        try:
            return self._status_fn()
        except Exception as exc:  # the landing page must render even then
            return f"status unavailable: {exc!r}"

    def _landing(self) -> str:
        ok, _ = self._health()
        version = html.escape(self._version or "unknown")
        status = html.escape(self._status() or ("healthy" if ok else "not healthy"))
        return (
            '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>npumon</title></head>'
            "<body><h1>npumon</h1><p>Ascend NPU exporter, version "
            f"{version}</p><p>npu-smi: {status}</p><ul>"
            '<li><a href="metrics">/metrics</a></li><li><a href="healthz">/healthz</a></li>'
            "</ul></body></html>\n"
        )


async def _send(send: Send, status: int, body: bytes, content_type: str,
                extra: tuple[tuple[bytes, bytes], ...],
                more: list[tuple[bytes, bytes]] | None = None) -> None:
    headers = [(b"content-type", content_type.encode()),
               (b"content-length", str(len(body)).encode()), *extra, *(more or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
