"""Trimmer: malloc_trim only after enough connections closed; the real call exists on glibc."""

from __future__ import annotations

import platform

import pytest

from npumon.exporters.memtrim import Trimmer, malloc_trim


def test_trims_only_after_enough_closes_and_counts_from_the_last_trim() -> None:
    trims: list[int] = []
    trimmer = Trimmer(lambda: trims.append(1), after=3)
    assert trimmer.maybe_trim() is False  # a quiet exporter never trims
    for _ in range(2):
        trimmer.closed()
    assert trimmer.maybe_trim() is False
    trimmer.closed()
    assert trimmer.maybe_trim() is True and trims == [1]
    assert trimmer.maybe_trim() is False  # nothing closed since
    for _ in range(3):
        trimmer.closed()
    assert trimmer.maybe_trim() is True and trims == [1, 1]


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_the_real_malloc_trim_runs() -> None:
    trim = malloc_trim()
    assert trim is not None
    assert trim() in (0, 1)  # 1: memory was released, 0: none could be


def test_the_server_counts_closed_connections() -> None:
    import socket

    from prometheus_client import CollectorRegistry

    from npumon.exporters.http import serve
    from tests.helpers.wait import wait_for

    server = serve(CollectorRegistry(), "127.0.0.1:0", None, lambda: True)
    try:
        trimmer = server._trimmer  # noqa: SLF001
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", server.port), timeout=5) as conn:
                conn.sendall(b"GET /-/healthy HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                assert conn.recv(100).startswith(b"HTTP/1.1 200")
        wait_for(lambda: trimmer._closed == 3, timeout=5)  # noqa: SLF001
    finally:
        server.shutdown()
