"""The app behind the server (exporters/web/http.py): auth, then the routes; /metrics bounded in
flight. A request is its method, path and headers; the answer a status, headers and a body."""

from __future__ import annotations

import asyncio
import gzip
import html
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from prometheus_client.exposition import choose_encoder

from npumon.daemon.model.snapshot import EMPTY_SNAPSHOT, NodeSnapshot
from npumon.exporters.web import reports as report_files
from npumon.exporters.web.auth import BcryptQueue
from npumon.exporters.web.weblive import LiveWebConfig

log = logging.getLogger(__name__)

Header = tuple[bytes, bytes]
Headers = tuple[Header, ...]
Response = tuple[int, list[Header], bytes]  # status, headers, body
Exposition = Callable[[bool], bytes]  # OpenMetrics? -> the body
TEXT = "text/plain; charset=utf-8"
LIVENESS_PATH = "/-/healthy"  # unauthenticated, says nothing but "OK": for Kubernetes probes
RENDER_THREADS = 2  # the exposition runs here, off the event loop
GZIP_LEVEL = 1  # most of level 6's saving at a fraction of its time (bench/RESULTS.md)
BUSY = b"Too many requests in flight\n"  # the 503's body
CHALLENGE = (b"www-authenticate", b'Basic realm="npumon", charset="UTF-8"')  # the 401's header
# the project's documentation, the same base as the chart's prometheusRule.runbookBaseUrl
DOCS_URL = "https://github.com/npumon/npumon/blob/main/"


def gzip_wanted(accept_encoding: str) -> bool:
    """True when gzip (or ``*``) is listed with a q-value above 0 (``gzip;q=0`` refuses it)."""
    weights: dict[str, float] = {}
    for item in accept_encoding.lower().split(","):
        coding, *params = (part.strip() for part in item.split(";"))
        qs = [v for n, _, v in (p.partition("=") for p in params) if n.strip() == "q"] or ["1"]
        try:
            weights[coding] = float(qs[-1])
        except ValueError:  # a q-value that is not a number refuses the coding
            weights[coding] = 0.0
    return weights.get("gzip", weights.get("*", 0.0)) > 0


class EdgeApp:
    """Every path but LIVENESS_PATH needs auth when users are configured. At most
    ``max_requests`` authorised /metrics requests are in flight, the next gets a 503 at once
    (node_exporter's --web.max-requests, inside auth as there: a flood of bad credentials waits
    on bcrypt and gets its 401, and /healthz and the landing page never count)."""

    def __init__(
        self,
        exposition: Exposition,
        web: LiveWebConfig,
        max_requests: int,
        *,
        healthy: Callable[[], bool],
        latest: Callable[[], NodeSnapshot] | None,
        version: str,
        reports: Path | None = None,
    ) -> None:
        self._exposition, self._web, self._max = exposition, web, max_requests
        self._healthy, self._version = healthy, version
        self._reports = reports  # the state directory's reports/: /reports/<workload>.html
        self._latest = latest or (lambda: EMPTY_SNAPSHOT)
        self._in_flight = 0  # the semaphore: only the event loop thread counts
        self._zipped: dict[bool, tuple[bytes, bytes]] = {}  # per format: a body and its gzip
        # scrapes whose credentials are cached never wait for bcrypt
        self._bcrypt = BcryptQueue()
        self._render = ThreadPoolExecutor(RENDER_THREADS, thread_name_prefix="npumon-render")

    def close(self) -> None:
        self._bcrypt.close()
        self._render.shutdown(wait=False, cancel_futures=True)

    async def __call__(
        self, method: str, path: str, headers: dict[str, str], gone: asyncio.Future[None]
    ) -> Response:
        """The answer to one request; ``headers`` by lower-case name, ``gone`` done once the
        client has left."""
        active = self._web.current()
        if method not in ("GET", "HEAD"):
            return _answer(405, b"Method Not Allowed\n", TEXT, (b"allow", b"GET, HEAD"))
        if path == LIVENESS_PATH:
            return _answer(200, b"OK\n", TEXT)
        if active.auth is not None:
            verdict = await self._bcrypt.check(active.auth, headers.get("authorization"), gone)
            if verdict is None:  # too many bcrypt checks waited for: shed, as max_requests
                return _answer(503, BUSY, TEXT, *active.headers)
            if not verdict:
                return _answer(401, b"Unauthorized\n", TEXT, *active.headers, CHALLENGE)
        if path == "/metrics" and self._in_flight >= self._max:
            return _answer(503, BUSY, TEXT, *active.headers)
        if path == "/metrics":
            self._in_flight += 1
            try:
                return await self._metrics(headers, active.headers)
            finally:
                self._in_flight -= 1
        if path == "/healthz":
            reason = self._unhealthy()
            text = f"unhealthy: {reason}\n" if reason else "ok\n"
            return _answer(503 if reason else 200, text.encode(), TEXT, *active.headers)
        if path == "/":
            page = self._landing().encode()
            return _answer(200, page, "text/html; charset=utf-8", *active.headers)
        if path.startswith(report_files.PREFIX):
            return await self._report(path, active.headers)
        return _answer(404, b"Not Found: try /metrics\n", TEXT, *active.headers)

    async def _report(self, path: str, extra: Headers) -> Response:
        """A workload's latest report page or JSON, read off the event loop; 404 for a name
        that is not a report file the daemon wrote."""
        name = report_files.file_name(path)
        body = None
        if name is not None and self._reports is not None:
            body = await asyncio.get_running_loop().run_in_executor(
                self._render, report_files.read, self._reports, name
            )
        if name is None or body is None:
            return _answer(404, b"Not Found: no such report\n", TEXT, *extra)
        kind = report_files.content_type(name)
        return _answer(200, body, kind, *extra, *report_files.PAGE_HEADERS)

    async def _metrics(self, headers: dict[str, str], extra: Headers) -> Response:
        _, content_type = choose_encoder(headers.get("accept", ""))
        openmetrics = content_type.startswith("application/openmetrics-text")
        zipped = gzip_wanted(headers.get("accept-encoding", ""))
        try:
            body = await asyncio.get_running_loop().run_in_executor(
                self._render, self._body, openmetrics, zipped
            )
        except Exception as exc:  # a collector outside NpuCollector's boundaries: visible 500
            log.error("event=scrape_failed error=%r", exc, exc_info=exc)
            return _answer(500, f"scrape failed: {exc!r}\n".encode(), TEXT, *extra)
        coding = [(b"content-encoding", b"gzip")] if zipped else []
        return _answer(200, body, content_type, *extra, *coding, (b"vary", b"Accept-Encoding"))

    def _body(self, openmetrics: bool, zipped: bool) -> bytes:
        """The exposition, gzipped once per body (the same object while the snapshot stays)."""
        body = self._exposition(openmetrics)
        if not zipped:
            return body
        kept = self._zipped.get(openmetrics)
        if kept is None or kept[0] is not body:
            kept = self._zipped[openmetrics] = (body, gzip.compress(body, GZIP_LEVEL))
        return kept[1]

    def _unhealthy(self) -> str:
        """Why the node is not healthy; empty when it is."""
        try:
            if self._healthy():
                return ""
        except Exception as exc:  # a broken health callback is an unhealthy answer, not a 500
            return f"health check failed: {exc!r}"
        down = [f"{s.source} down: {s.last_error}" for s in self._latest().sources if not s.up]
        return "; ".join(down) or "no source has run yet"

    def _landing(self) -> str:
        """Version, the node's npu-smi and driver, each source as itself, the links."""
        snap, ok = self._latest(), not self._unhealthy()
        rows = "".join(
            f"<tr><td>{_e(s.source)}</td><td>{'up' if s.up else 'down'}</td>"
            f"<td>{html.escape(s.last_error or '')}</td></tr>"
            for s in snap.sources
        )
        return (
            '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>npumon</title></head>'
            f"<body><h1>npumon</h1><p>Ascend NPU exporter, version {_e(self._version)}; "
            f"{'healthy' if ok else 'not healthy'}.</p>"
            f"<p>npu-smi {_e(snap.node.npu_smi_version)}, driver {_e(snap.node.driver_version)}</p>"
            "<table><tr><th>source</th><th>state</th><th>last error</th></tr>"
            f"{rows or '<tr><td colspan=3>no source has run yet</td></tr>'}</table><ul>"
            '<li><a href="metrics">/metrics</a></li><li><a href="healthz">/healthz</a></li>'
            '<li><a href="-/healthy">/-/healthy</a> (liveness, no auth)</li></ul>'
            f'<p>Documentation: <a href="{DOCS_URL}README.md">README</a>, '
            f'<a href="{DOCS_URL}docs/runbooks.md">runbooks (one section per alert)</a>, '
            f'<a href="{DOCS_URL}docs/privileges.md">privileges and limits</a></p></body></html>\n'
        )


def _e(text: str | None) -> str:
    return html.escape(text or "unknown")


def _answer(status: int, body: bytes, content_type: str, *headers: Header) -> Response:
    start = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    return status, start + [*headers], body
