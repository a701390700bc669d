"""The web config re-read when its file changes, certificates on the next handshake, over
loopback; and the --web.config.file flag of `npumon run`."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest
from edge_helpers import auth, exposition, get, peer_certificate, self_signed

from npumon.exporters.web.auth import _dummy_hash
from npumon.exporters.web.http import Server, serve
from npumon.exporters.web.webconfig import WebConfigError
from tests.helpers.processes import reported_port, stop
from tests.helpers.wait import scaled, wait_for

pytestmark = pytest.mark.integration  # real loopback servers, openssl, a real daemon

HASHED = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode()


def _write(path: Path, text: str) -> None:
    """Replace the file and move its mtime on, so the change shows even within one tick."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    os.utime(path, ns=(before + 10**9, before + 10**9))


@pytest.fixture
def web_file(tmp_path: Path) -> Iterator[tuple[Path, Server]]:
    path = tmp_path / "web.yml"
    _write(path, "")
    server = serve(exposition(), "127.0.0.1:0", path, lambda: True)
    yield path, server
    server.shutdown()


def _becomes(server: Server, status: int, headers: dict[str, str] | None = None) -> None:
    """Return once /metrics answers ``status`` (the reload runs on a thread of its own)."""
    wait_for(lambda: get(server, "/metrics", headers)[0] == status, 10.0, f"/metrics {status}")


def test_web_config_is_reread_when_it_changes(web_file: tuple[Path, Server]) -> None:
    path, server = web_file
    assert get(server, "/metrics")[0] == 200
    _write(path, f"basic_auth_users:\n  prom: '{HASHED}'\n")
    _becomes(server, 401)
    assert get(server, "/metrics", auth("prom", "pw"))[0] == 200
    _write(path, "")
    _becomes(server, 200)


BAD_COST = "$2b$99$" + "a" * 53  # over npumon's cost limit (14) and bcrypt's (31)


@pytest.mark.parametrize("broken", ["prom: cleartext", f"prom: '{BAD_COST}'"])
def test_a_bad_reload_keeps_the_last_good_config_and_later_ones_apply(
    web_file: tuple[Path, Server], broken: str, caplog: pytest.LogCaptureFixture
) -> None:
    path, server = web_file
    _write(path, f"basic_auth_users:\n  prom: '{HASHED}'\n")
    _becomes(server, 401)
    _write(path, f"basic_auth_users:\n  {broken}\n")
    get(server, "/metrics")  # starts the reload of the broken file
    failed = "event=web_config_reload_failed"
    wait_for(lambda: failed in caplog.text, 10.0, "the broken reload to be logged")
    assert get(server, "/metrics", auth("prom", "pw"))[0] == 200  # the last good config
    assert get(server, "/metrics")[0] == 401
    rotated = bcrypt.hashpw(b"new", bcrypt.gensalt(rounds=4)).decode()
    _write(path, f"basic_auth_users:\n  prom: '{rotated}'\n")  # a rotation still applies
    _becomes(server, 200, auth("prom", "new"))
    assert get(server, "/metrics", auth("prom", "pw"))[0] == 401


COST_14 = "$2b$14$" + "a" * 53  # a cost-14 hash: activating it computes a dummy one (~1 s)


def test_a_slow_reload_runs_off_the_event_loop(web_file: tuple[Path, Server]) -> None:
    path, server = web_file
    _dummy_hash.cache_clear()  # a hash computed before (another test, a --count run) is instant
    _write(path, f"basic_auth_users:\n  slow: '{COST_14}'\n")
    assert get(server, "/metrics")[0] == 200  # starts the reload; the old config answers
    answered = 0  # /-/healthy answers while the reload was still computing its hash

    def reloaded() -> bool:
        nonlocal answered
        if get(server, "/metrics")[0] != 200:
            return True
        assert get(server, "/-/healthy")[0] == 200
        answered += 1
        return False

    wait_for(reloaded, 20.0, "the new web config", poll=0.0)
    assert get(server, "/metrics")[0] == 401  # the new config, once ready
    assert answered >= 1, "the event loop answered nothing while the reload ran"


def test_a_broken_web_config_file_refuses_to_start(tmp_path: Path) -> None:
    path = tmp_path / "web.yml"
    path.write_text("tls_server_config: {cert_file: a.crt, key_file: a.key}\n")
    with pytest.raises(WebConfigError, match="cannot read"):
        serve(exposition(), "127.0.0.1:0", path, lambda: True)


def test_certificates_are_reread_on_handshake(tmp_path: Path) -> None:
    cert, key_file = self_signed(tmp_path)
    path = tmp_path / "web.yml"
    _write(path, f"tls_server_config: {{cert_file: {cert.name}, key_file: {key_file.name}}}\n")
    server = serve(exposition(), "127.0.0.1:0", path, lambda: True)
    try:
        first = peer_certificate(server)
        assert first == ssl.PEM_cert_to_DER_cert(cert.read_text())
        self_signed(tmp_path)  # a new key and certificate, same file names
        second = peer_certificate(server)
        assert second != first and second == ssl.PEM_cert_to_DER_cert(cert.read_text())
        client = ssl.create_default_context(cafile=str(cert))
        assert get(server, "/metrics", context=client)[0] == 200
    finally:
        server.shutdown()


def test_web_config_file_flag_wins_over_the_config(tmp_path: Path) -> None:
    web = tmp_path / "web.yml"
    web.write_text(f"basic_auth_users:\n  prom: '{HASHED}'\n")
    config = tmp_path / "npumon.yaml"
    config.write_text(
        f"npu_smi:\n  command: [{sys.executable}, -c, 'import sys; sys.exit(1)']\n"
        f"state_directory: {tmp_path / 'state'}\nweb:\n  config_file: null\n"
        "  max_requests: 5\n"
    )
    log = tmp_path / "npumon.log"
    npumon = Path(sys.executable).parent / "npumon"
    with log.open("wb") as out:
        daemon = subprocess.Popen(
            [
                str(npumon),
                "run",
                "--config",
                str(config),
                "--web.listen-address",
                "127.0.0.1:0",
                "--web.config.file",
                str(web),
                "--web.max-requests",
                "7",
                "--web.max-connections",
                "9",
            ],
            stdout=subprocess.DEVNULL,
            stderr=out,
        )
    try:
        port = reported_port(log, process=daemon)
        assert get(port, "/metrics")[0] == 401
        status, _, body = get(port, "/metrics", auth("prom", "pw"))
        assert status == 200 and b"npumon_http_bad_requests_total 0.0" in body
        assert get(port, "/-/healthy")[0] == 200
        assert "max_requests=7 max_connections=9" in log.read_text()
    finally:
        stop(daemon)


def test_tls_settings_apply_to_new_connections_without_a_restart(tmp_path: Path) -> None:
    cert, key_file = self_signed(tmp_path)
    path = tmp_path / "web.yml"
    tls = f"tls_server_config: {{cert_file: {cert.name}, key_file: {key_file.name}"
    _write(path, tls + "}\n")
    server = serve(exposition(), "127.0.0.1:0", path, lambda: True)
    client = ssl.create_default_context(cafile=str(cert))
    client.maximum_version = ssl.TLSVersion.TLSv1_2
    try:
        assert get(server, "/metrics", context=client)[0] == 200
        _write(path, tls + ", min_version: TLS13}\n")
        deadline = time.monotonic() + scaled(10.0)
        while time.monotonic() < deadline:  # the reload runs on its own thread
            try:
                get(server, "/metrics", context=client)
            except (ssl.SSLError, ConnectionError):
                break  # a TLS 1.2 client is refused now
        else:
            raise AssertionError("min_version TLS13 did not apply")
        client.maximum_version = ssl.TLSVersion.TLSv1_3
        assert get(server, "/metrics", context=client)[0] == 200
    finally:
        server.shutdown()
