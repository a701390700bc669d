"""Basic auth over loopback: one bcrypt at a time, recent results cached, unknown users cost
as much as known ones, and only the liveness path is open."""

from __future__ import annotations

import asyncio
import base64
import os
import select
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import bcrypt
import pytest
from edge_helpers import auth, exposition, get, raw_connection

from npumon.exporters.web import auth as auth_module
from npumon.exporters.web.auth import MAX_PENDING_CHECKS, BasicAuth, BcryptQueue
from npumon.exporters.web.http import Server, serve
from npumon.exporters.web.webconfig import parse_web_config
from tests.helpers.wait import scaled, wait_for

pytestmark = pytest.mark.integration  # real loopback servers

ROUNDS = 5  # a cheap cost, different from the old fixed dummy hash's 10


class _CountingCheckpw:
    """bcrypt.checkpw, recording every hash it was given and how many ran at once."""

    def __init__(self) -> None:
        self.hashes: list[bytes] = []
        self.running = 0
        self.most = 0
        self.delay = 0.02  # stands for a costlier hash: overlapping calls would show
        self.gate = threading.Event()  # cleared: every check waits until it is set again
        self.gate.set()
        self._lock = threading.Lock()
        self._real = bcrypt.checkpw

    def __call__(self, password: bytes, hashed: bytes) -> bool:
        with self._lock:
            self.hashes.append(hashed)
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            assert self.gate.wait(scaled(30)), "the test never opened the gate"
            time.sleep(self.delay)
            return self._real(password, hashed)
        finally:
            with self._lock:
                self.running -= 1


@pytest.fixture
def checkpw(monkeypatch: pytest.MonkeyPatch) -> _CountingCheckpw:
    counting = _CountingCheckpw()
    monkeypatch.setattr(auth_module.bcrypt, "checkpw", counting)
    return counting


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=ROUNDS)).decode()
    config = parse_web_config({"basic_auth_users": {"prom": hashed}}, base=tmp_path)
    running = serve(exposition(), "127.0.0.1:0", config, lambda: True)
    yield running
    running.shutdown()


def test_one_bcrypt_at_a_time_and_a_repeated_failure_is_cached(
    server: Server, checkpw: _CountingCheckpw
) -> None:
    with ThreadPoolExecutor(8) as pool:  # 8 clients, each with its own wrong password
        codes = list(
            pool.map(lambda i: get(server, "/metrics", auth("prom", f"w{i}"))[0], range(8))
        )
    assert codes == [401] * 8
    assert checkpw.most == 1, "bcrypt ran concurrently"
    calls = len(checkpw.hashes)
    for _ in range(5):
        assert get(server, "/metrics", auth("prom", "w0"))[0] == 401
    assert len(checkpw.hashes) == calls, "a repeated wrong password ran bcrypt again"
    for _ in range(3):
        assert get(server, "/metrics", auth("prom", "s3cret"))[0] == 200
    assert len(checkpw.hashes) == calls + 1  # the good one once, then from the cache


def test_unknown_user_costs_a_hash_of_the_configured_cost(
    server: Server, checkpw: _CountingCheckpw
) -> None:
    assert get(server, "/metrics", auth("nobody", "s3cret"))[0] == 401
    assert get(server, "/metrics", auth("prom", "wrong"))[0] == 401
    unknown, known = checkpw.hashes
    assert unknown != known
    assert unknown[:7] == known[:7] == f"$2b$0{ROUNDS}$".encode()


def test_only_the_liveness_path_is_open(server: Server) -> None:
    status, headers, body = get(server, "/-/healthy")
    assert (status, body) == (200, b"OK\n")
    assert "www-authenticate" not in headers
    for path in ("/healthz", "/metrics", "/", "/nope", "/-/healthy/../metrics"):
        assert get(server, path)[0] == 401, path


def test_checks_of_departed_clients_are_dropped_from_the_queue(
    server: Server, checkpw: _CountingCheckpw
) -> None:
    checkpw.delay = 0.2  # a cost-14 hash takes ~1 s: 60 queued would keep a user 12 s
    for i in range(60):
        request = f"GET /metrics HTTP/1.1\r\nHost: x\r\n{_header(f'w{i}')}\r\n\r\n"
        raw_connection(server, request.encode()).close()  # and leave at once
    assert get(server, "/metrics", auth("prom", "s3cret"))[0] == 200
    assert len(checkpw.hashes) <= 3, f"{len(checkpw.hashes)} checks ran for departed clients"


def _header(password: str) -> str:
    return "Authorization: " + auth("prom", password)["Authorization"]


def _basic(raw: bytes) -> str:
    return "Basic " + base64.b64encode(raw).decode()


@pytest.mark.parametrize(
    "header",
    [None, "", "Bearer x", "Basic !!", "Basic YTp", _basic(b"no-colon"), _basic(b"\xff:pw")],
)
def test_a_malformed_header_is_refused_without_bcrypt(
    header: str | None, checkpw: _CountingCheckpw
) -> None:
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode()
    basic = BasicAuth({"a": hashed, "\ufffd": hashed})
    assert basic.cached(header) is False and basic.check(header) is False
    assert checkpw.hashes == []
    assert basic.check("basic" + _basic(b"a:pw")[5:])  # the scheme in any case


def test_unknown_names_cost_what_the_configured_users_cost(checkpw: _CountingCheckpw) -> None:
    # users of mixed costs (htpasswd -B makes cost 5, Go's and Python's bcrypt 10 or 12): a
    # fixed dummy cost would set unknown names apart from the users of every other cost
    checkpw.delay = 0.0
    users = {
        "cheap": bcrypt.hashpw(b"a", bcrypt.gensalt(rounds=4)).decode(),
        "dear": bcrypt.hashpw(b"b", bcrypt.gensalt(rounds=5)).decode(),
    }
    names = [f"nobody{i}" for i in range(32)]
    for name in names:
        assert not BasicAuth(users).check(_basic(f"{name}:x".encode()))
    costs = [hashed[:7] for hashed in checkpw.hashes]
    assert set(costs) == {b"$2b$04$", b"$2b$05$"}, costs
    checkpw.hashes.clear()
    restarted = BasicAuth(users)  # a name's cost is the same after a restart
    for name in names:
        assert not restarted.check(_basic(f"{name}:y".encode()))
    assert [hashed[:7] for hashed in checkpw.hashes] == costs


def test_bcrypt_checks_waited_for_are_bounded_and_the_rest_shed_at_once(
    checkpw: _CountingCheckpw,
) -> None:
    """What a flood of new credentials can park behind the one bcrypt thread is ``limit``
    requests: the next are answered None (a 503) without queueing; a client that leaves frees
    its place and its queued check never runs."""
    checkpw.delay = 0.0
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode()
    basic, queue = BasicAuth({"prom": hashed}), BcryptQueue(limit=4)

    async def flood() -> None:
        loop = asyncio.get_running_loop()
        left = [loop.create_future() for _ in range(7)]
        checks = [
            asyncio.ensure_future(queue.check(basic, _header(f"w{i}")[15:], left[i]))
            for i in range(7)
        ]
        assert [await check for check in checks[4:]] == [None] * 3  # shed at once
        assert queue.pending == 4
        left[1].set_result(None)  # a client queued behind the first check leaves
        assert await checks[1] is False and queue.pending == 3
        checkpw.gate.set()
        assert [await checks[i] for i in (0, 2, 3)] == [False] * 3
        assert queue.pending == 0
        stays = loop.create_future()
        assert await queue.check(basic, _header("w0")[15:], stays) is False  # cached
        assert await queue.check(basic, _header("pw")[15:], stays) is True

    checkpw.gate.clear()
    try:
        asyncio.run(flood())
    finally:
        checkpw.gate.set()
        queue.close()
    assert len(checkpw.hashes) == 4, "a check ran for the client that left, or a shed one"


def test_requests_parked_behind_bcrypt_are_bounded_the_rest_get_503(
    server: Server, checkpw: _CountingCheckpw
) -> None:
    # each request with new credentials and junk behind it held its connection in flight
    # (never shed) until bcrypt answered: 1,024 of them parked 191 MB
    checkpw.delay = 0.0
    checkpw.gate.clear()
    flood = MAX_PENDING_CHECKS + 6
    try:
        socks = [
            raw_connection(
                server,
                f"GET /metrics HTTP/1.1\r\nHost: x\r\n{_header(f'w{i}')}\r\n\r\n".encode()
                + b"junk" * 4096,
            )
            for i in range(flood)
        ]
        answered: list[bytes] = []
        while len(answered) < flood - MAX_PENDING_CHECKS:
            ready, _, _ = select.select(socks, [], [], scaled(10))
            assert ready, f"{len(answered)} answered while bcrypt is held"
            for sock in ready:
                answered.append(sock.recv(64).split(b"\r\n")[0])
                socks.remove(sock)
        assert answered == [b"HTTP/1.1 503 Service Unavailable"] * (flood - MAX_PENDING_CHECKS)
        assert not select.select(socks, [], [], 0)[0]  # the others wait for bcrypt
        checkpw.gate.set()
        for sock in socks:
            assert sock.recv(64).startswith(b"HTTP/1.1 401 ")
            sock.close()
    finally:
        checkpw.gate.set()


def _write(path: Path, text: str) -> None:
    """Replace the file and move its mtime on, so the change shows even within one tick."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    os.utime(path, ns=(before + 10**9, before + 10**9))


def test_a_wrong_password_flood_leaves_cached_scrapers_answered_across_a_reload(
    tmp_path: Path, checkpw: _CountingCheckpw
) -> None:
    # 100 sockets with new wrong passwords fill the bcrypt queue; a reload built a new cache,
    # so cached scrapers went from 20/20 to 0/30 (503s) until the flood stopped
    checkpw.delay = 0.0
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=ROUNDS)).decode()
    users = f"basic_auth_users:\n  prom: '{hashed}'\n"
    path = tmp_path / "web.yml"
    _write(path, users)
    server = serve(exposition(), "127.0.0.1:0", path, lambda: True)
    socks: list[socket.socket] = []
    try:
        assert get(server, "/metrics", auth("prom", "s3cret"))[0] == 200  # now cached
        checkpw.gate.clear()  # bcrypt holds the first check: the rest queue behind it
        for i in range(100):
            request = f"GET /metrics HTTP/1.1\r\nHost: x\r\n{_header(f'w{i}')}\r\n\r\n"
            socks.append(raw_connection(server, request.encode()))
        waiting, shed = list(socks), 0  # the queue is full once the rest had their 503
        while shed < len(socks) - MAX_PENDING_CHECKS:
            ready, _, _ = select.select(waiting, [], [], scaled(10))
            assert ready, f"{shed} shed while bcrypt is held"
            for sock in ready:
                assert sock.recv(64).startswith(b"HTTP/1.1 503 "), "an uncached check ran"
                waiting.remove(sock)
                shed += 1
        codes = [get(server, "/metrics", auth("prom", "s3cret"))[0] for _ in range(20)]
        assert codes == [200] * 20
        # the same user and hash, one more header: the reload must keep prom's result
        _write(path, users + "http_server_config:\n  headers:\n    X-Frame-Options: deny\n")
        codes = []

        def reloaded() -> bool:
            status, headers, _ = get(server, "/metrics", auth("prom", "s3cret"))
            codes.append(status)
            return headers.get("x-frame-options") == "deny"

        wait_for(reloaded, 10.0, "the reloaded web config")
        codes += [get(server, "/metrics", auth("prom", "s3cret"))[0] for _ in range(30)]
        assert set(codes) == {200}, codes
        assert get(server, "/metrics", auth("prom", "new2"))[0] == 503  # the flood goes on
    finally:
        checkpw.gate.set()
        for sock in socks:
            sock.close()
        server.shutdown()


def test_a_reload_keeps_the_results_of_unchanged_users_only(checkpw: _CountingCheckpw) -> None:
    checkpw.delay = 0.0
    old, new = (bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode() for _ in range(2))
    before = BasicAuth({"same": old, "changed": old, "removed": old})
    for user in ("same", "changed", "removed"):
        assert before.check(_basic(f"{user}:pw".encode()))
        assert not before.check(_basic(f"{user}:wrong".encode()))
    after = BasicAuth({"same": old, "changed": new, "added": old}, previous=before)
    assert after.cached(_basic(b"same:pw")) is True
    assert after.cached(_basic(b"same:wrong")) is False
    for user in ("changed", "removed", "added"):  # a rotated password is checked again
        assert after.cached(_basic(f"{user}:pw".encode())) is None, user
        assert after.cached(_basic(f"{user}:wrong".encode())) is None, user
    assert after.check(_basic(b"changed:pw")) and not after.check(_basic(b"removed:pw"))
