"""EdgeApp in process: the in-flight semaphore (full = 503 at once, every slot comes back),
gzip once per body, auth before the limit. The server side is in test_http.py."""

from __future__ import annotations

import asyncio
import base64
import gzip
import threading
from pathlib import Path
from typing import Any

import bcrypt

from npumon.exporters.web.edge import EdgeApp, Exposition
from npumon.exporters.web.webconfig import WebConfig, parse_web_config
from npumon.exporters.web.weblive import LiveWebConfig
from tests.helpers.wait import scaled


def _edge(
    exposition: Exposition, config: WebConfig | None = None, max_requests: int = 2
) -> EdgeApp:
    return EdgeApp(
        exposition,
        LiveWebConfig(config),
        max_requests=max_requests,
        healthy=lambda: True,
        latest=None,
        version="t",
    )


def _scope(path: str = "/metrics", authorization: str | None = None) -> dict[str, Any]:
    headers = {"host": "x", "accept-encoding": "gzip"}
    if authorization is not None:
        headers["authorization"] = authorization
    return {"method": "GET", "path": path, "headers": headers}


async def _request(edge: EdgeApp, scope: dict[str, Any]) -> tuple[int, bytes]:
    gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()  # a client that stays
    status, _, body = await edge(scope["method"], scope["path"], scope["headers"], gone)
    return status, body


def _run(edge: EdgeApp, *scopes: dict[str, Any]) -> list[int]:
    """The requests concurrently on one event loop, as the server runs them; their statuses."""

    async def all_of() -> list[tuple[int, bytes]]:
        return list(await asyncio.gather(*(_request(edge, s) for s in scopes)))

    return [status for status, _ in asyncio.run(all_of())]


def test_beyond_max_requests_a_503_at_once_and_the_slots_come_back() -> None:
    release, entered = threading.Event(), threading.Semaphore(0)

    def exposition(openmetrics: bool) -> bytes:
        entered.release()
        release.wait(scaled(10))
        return b"x 1\n"

    edge = _edge(exposition)

    async def scenario() -> list[int]:
        held = [asyncio.ensure_future(_request(edge, _scope())) for _ in range(2)]
        loop = asyncio.get_running_loop()
        for _ in range(2):
            assert await loop.run_in_executor(None, entered.acquire, True, 5)
        refused = await _request(edge, _scope())
        healthz = await _request(edge, _scope("/healthz"))  # only /metrics counts
        release.set()
        served = [status for status, _ in await asyncio.gather(*held)]
        again = await _request(edge, _scope())
        return [refused[0], healthz[0], *served, again[0]]

    try:
        assert asyncio.run(scenario()) == [503, 200, 200, 200, 200]
    finally:
        edge.close()


def test_a_failed_render_is_a_500_and_gives_its_slot_back() -> None:
    calls: list[int] = []

    def exposition(openmetrics: bool) -> bytes:
        calls.append(1)
        if len(calls) <= 2:
            raise RuntimeError("a collector broke")
        return b"x 1\n"

    edge = _edge(exposition, max_requests=1)
    assert _run(edge, _scope()) == [500]
    assert _run(edge, _scope()) == [500]
    assert _run(edge, _scope()) == [200]
    edge.close()


def test_the_same_body_is_gzipped_once() -> None:
    body = b"x 1\n" * 1000
    edge = _edge(lambda openmetrics: body)

    async def twice() -> list[bytes]:
        return [(await _request(edge, _scope()))[1] for _ in range(2)]

    try:
        first, second = asyncio.run(twice())
    finally:
        edge.close()
    assert first is second and gzip.decompress(first) == body


def test_bad_credentials_get_their_401_never_a_503(tmp_path: Path) -> None:
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode()
    config = parse_web_config({"basic_auth_users": {"prom": hashed}}, base=tmp_path)
    bad = "Basic " + base64.b64encode(b"prom:guess").decode()
    good = "Basic " + base64.b64encode(b"prom:pw").decode()
    edge = _edge(lambda openmetrics: b"x 1\n", config, max_requests=0)  # every slot taken
    assert _run(edge, _scope(authorization=bad), _scope(), _scope(authorization=good)) == [
        401,
        401,
        503,
    ]
    edge.close()
