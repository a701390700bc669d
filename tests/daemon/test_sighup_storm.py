"""A burst of SIGHUPs while a reload runs makes one more reload, not one per signal."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from npumon.daemon.cli import _SignalPipe, _until_stopped
from tests.helpers.wait import scaled, wait_for

SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@pytest.fixture
def pipe() -> Iterator[_SignalPipe]:
    handlers = {signum: signal.getsignal(signum) for signum in SIGNALS}
    wakeup = signal.set_wakeup_fd(-1)
    try:
        yield _SignalPipe(SIGNALS)
    finally:
        signal.set_wakeup_fd(wakeup)
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


class SlowReloads:
    """A supervisor whose first reload blocks until the test releases it."""

    def __init__(self) -> None:
        self.reloads = 0
        self.release = threading.Event()

    def reload(self) -> bool:
        self.reloads += 1
        if self.reloads == 1:
            assert self.release.wait(scaled(30))
        return True


def test_sighups_during_a_reload_make_one_more_reload(pipe: _SignalPipe) -> None:
    supervisor = SlowReloads()

    def storm() -> None:
        os.kill(os.getpid(), signal.SIGHUP)
        wait_for(lambda: supervisor.reloads == 1, 10.0, "the first reload")
        for _ in range(100):
            os.kill(os.getpid(), signal.SIGHUP)
        supervisor.release.set()
        wait_for(lambda: supervisor.reloads == 2, 10.0, "the coalesced reload")
        os.kill(os.getpid(), signal.SIGTERM)

    sender = threading.Thread(target=storm)
    sender.start()
    _until_stopped(supervisor, pipe)  # type: ignore[arg-type]
    sender.join(scaled(10))
    assert supervisor.reloads == 2


def test_a_sigterm_among_pending_sighups_stops_without_reloading(pipe: _SignalPipe) -> None:
    supervisor: Any = SlowReloads()
    for signum in (signal.SIGHUP, signal.SIGHUP, signal.SIGTERM, signal.SIGHUP):
        os.kill(os.getpid(), signum)
    _until_stopped(supervisor, pipe)
    assert supervisor.reloads == 0
