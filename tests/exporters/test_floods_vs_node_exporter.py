"""Each flood against npumon's edge and Debian's node_exporter on the same machine: scrapes
are answered at least as often by npumon (fractions, never durations). A small flood against
a small cap; bench/flood_bench.py runs the full-size ones and writes bench/RESULTS.md."""

from __future__ import annotations

import contextlib
import socket
import ssl
from pathlib import Path

import pytest
from edge_helpers import TIMEOUT, exposition, get, node_exporter, self_signed

from npumon.exporters.web.http import serve
from npumon.exporters.web.webconfig import load_web_config
from tests.helpers.wait import scaled

pytestmark = pytest.mark.integration  # real loopback servers and node_exporter

CAP = 20  # npumon's connection cap here; each flood opens three times as many
SCRAPES = 6
FLOODS = {
    "held": b"",
    "stuffed": b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * 1000,
    "trickled_body": b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\na",
    "slow_tls": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
}


def _answered(port: int, flood: bytes, context: ssl.SSLContext | None) -> float:
    """The fraction of SCRAPES scrapes answered 200 while 3 x CAP flood connections are open."""
    held = []
    try:
        for _ in range(3 * CAP):
            sock = socket.create_connection(("127.0.0.1", port), timeout=scaled(TIMEOUT))
            with contextlib.suppress(OSError):
                sock.sendall(flood)
            held.append(sock)
        ok = 0
        for _ in range(SCRAPES):
            with contextlib.suppress(OSError):
                ok += get(port, "/metrics", context=context)[0] == 200
        return ok / SCRAPES
    finally:
        for sock in held:
            sock.close()


@pytest.mark.parametrize("flood", list(FLOODS))
def test_npumon_answers_scrapes_under_a_flood_at_least_as_well_as_node_exporter(
    tmp_path: Path, flood: str
) -> None:
    cert, key_file = self_signed(tmp_path)
    web = tmp_path / "web-config.yml"
    tls = flood == "slow_tls"
    web.write_text(
        f"tls_server_config: {{cert_file: {cert}, key_file: {key_file}}}\n" if tls else "{}\n"
    )
    context = ssl.create_default_context(cafile=str(cert)) if tls else None
    server = serve(
        exposition(), "127.0.0.1:0", load_web_config(web), lambda: True, max_connections=CAP
    )
    try:
        ours = _answered(server.port, FLOODS[flood], context)
    finally:
        server.shutdown()
    with node_exporter(web) as port:
        theirs = _answered(port, FLOODS[flood], context)
    print(f"{flood}: npumon {ours:.0%}, node_exporter {theirs:.0%}", end=" ")
    assert ours >= theirs and ours == 1.0, (ours, theirs)
