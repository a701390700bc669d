"""The in-flight limit counted as requests are parsed: which requests take a slot before their
task runs (EdgeApp.admit), which are refused while read (EdgeApp.refusal), and that every slot
comes back. The server side of it is in test_http.py (real sockets)."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import bcrypt
import pytest

from npumon.exporters.edge import EdgeApp
from npumon.exporters.rendercache import RenderCache
from npumon.exporters.webconfig import WebConfig, parse_web_config
from npumon.exporters.weblive import LiveWebConfig


def _edge(config: WebConfig | None = None, *, fail: bool = False,
          versions: list[object] | None = None) -> EdgeApp:
    """max_requests 2; the render cache's snapshot is ``versions[-1]`` (one throughout by
    default: a body rendered once stays current)."""
    versions = versions or [object()]
    def exposition(openmetrics: bool) -> bytes:
        if fail:
            raise RuntimeError("a collector broke")
        return b"x 1\n"

    return EdgeApp(exposition, LiveWebConfig(None, config), max_requests=2,
                   healthy=lambda: True, status=None, version="t",
                   cache=RenderCache(lambda: versions[-1]))


def _scope(path: str = "/metrics", method: str = "GET",
           authorization: bytes | None = None) -> dict[str, Any]:
    headers = [(b"host", b"x"), (b"accept-encoding", b"gzip")]
    if authorization is not None:
        headers.append((b"authorization", authorization))
    return {"type": "http", "method": method, "path": path, "headers": headers}


def _run(edge: EdgeApp, scope: dict[str, Any]) -> int:
    """The request through the ASGI app; its status."""
    sent: list[MutableMapping[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    asyncio.run(edge(scope, None, send))
    return int(sent[0]["status"])


def _basic(user: str, password: str) -> bytes:
    return b"Basic " + base64.b64encode(f"{user}:{password}".encode())


def test_a_scrape_waiting_for_a_render_takes_its_slot_when_parsed() -> None:
    edge = _edge()
    parsed = [_scope() for _ in range(3)]
    for scope in parsed:
        edge.admit(scope)
    assert edge.full()
    assert [bool(s.get("extensions", {}).get("npumon.slot")) for s in parsed] == [
        True, True, False]
    assert edge.refusal("GET", "/metrics", None) == ()  # the third is refused while read
    # (had it not been) its task, run while the two wait, refuses it; they are served and give
    # their slots back
    assert [_run(edge, s) for s in reversed(parsed)] == [503, 200, 200]
    assert not edge.full() and edge.refusal("GET", "/metrics", None) is None


def test_a_scrape_answered_from_memory_takes_no_slot_when_parsed() -> None:
    edge = _edge()
    assert _run(edge, _scope()) == 200  # renders the gzip text body once
    scopes = [_scope() for _ in range(5)]
    for scope in scopes:
        edge.admit(scope)
    assert not edge.full()  # five parsed at once, none waiting for a render
    assert [_run(edge, s) for s in scopes] == [200] * 5


@pytest.mark.parametrize(("path", "method"), [("/healthz", "GET"), ("/", "GET"),
                                              ("/-/healthy", "GET"), ("/metrics", "POST")])
def test_only_gets_of_metrics_count(path: str, method: str) -> None:
    edge = _edge()
    for _ in range(3):
        edge.admit(_scope(path, method))
    assert not edge.full()


def test_only_credentials_known_good_take_a_slot_or_are_refused_while_read(
        tmp_path: Path) -> None:
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode()
    config = parse_web_config({"basic_auth_users": {"prom": hashed},
                               "http_server_config": {"headers": {"X-Frame-Options": "deny"}}},
                              base=tmp_path)
    versions = [object()]
    edge = _edge(config, versions=versions)
    good, bad = _basic("prom", "pw"), _basic("prom", "guess")
    for header in (None, bad, good):  # not yet checked: bcrypt first, in the task
        edge.admit(_scope(authorization=header))
    assert not edge.full()
    assert _run(edge, _scope(authorization=good)) == 200  # checked once: cached good now
    assert _run(edge, _scope(authorization=bad)) == 401  # cached bad
    versions.append(object())  # a new snapshot: the next scrapes wait for its render
    held = [_scope(authorization=good) for _ in range(2)]
    for scope in held:
        edge.admit(scope)
    assert edge.full()
    assert edge.refusal("GET", "/metrics", good) == ((b"x-frame-options", b"deny"),)
    # a bad or missing credential is never refused as busy: it gets its 401 in the task
    assert edge.refusal("GET", "/metrics", bad) is None
    assert edge.refusal("GET", "/metrics", None) is None
    assert _run(edge, _scope(authorization=bad)) == 401
    assert [_run(edge, s) for s in held] == [200, 200] and not edge.full()


def test_a_failed_render_gives_its_slot_back() -> None:
    edge = _edge(fail=True)
    scopes = [_scope() for _ in range(2)]
    for scope in scopes:
        edge.admit(scope)
    assert edge.full()
    assert [_run(edge, s) for s in scopes] == [500, 500]
    assert not edge.full()
