"""Drive an interactive command (msprof's `(msprof)` prompt) with a deadline on every step."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence

from npumon.daemon.profiling.children import Children


class PromptTimeout(Exception):
    """The expected text did not come in time; the process group has been killed."""


class PromptExited(Exception):
    """The process ended before printing the expected text."""

    def __init__(self, exit_code: int | None, output: str) -> None:
        self.exit_code = exit_code
        self.output = output
        super().__init__(f"exited with {exit_code}: {output.strip()[-300:]}")


class Prompt:
    """A child in its own session; a reader thread collects its output (stdout + stderr)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        children: Children | None = None,
    ) -> None:
        self._monotonic = monotonic
        self._children = children
        self.process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: one killpg takes every helper
            env=env,
        )
        if children is not None:
            children.track(self.process.pid)  # Profiler.stop() can kill it from another thread
        self._buffer = ""
        self._seen = 0  # expect() looks only at output after the previous match
        self._done = False
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, name="prompt-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            with self._cond:
                if not chunk:
                    self._done = True
                    self._cond.notify_all()
                    return
                self._buffer += chunk.decode("utf-8", errors="replace")
                self._cond.notify_all()

    @property
    def output(self) -> str:
        with self._cond:
            return self._buffer

    def expect(self, marker: str, timeout: float) -> str:
        """Output up to and including ``marker``; PromptTimeout or PromptExited otherwise."""
        deadline = self._monotonic() + timeout
        with self._cond:
            while True:
                found = self._buffer.find(marker, self._seen)
                if found >= 0:
                    text = self._buffer[self._seen : found + len(marker)]
                    self._seen = found + len(marker)
                    return text
                if self._done:
                    break
                left = deadline - self._monotonic()
                if left <= 0:
                    self.kill()
                    raise PromptTimeout(f"no {marker!r} within {timeout:g}s")
                self._cond.wait(min(left, 0.5))
        raise PromptExited(self._wait_exit(5.0), self.output)

    def send(self, line: str) -> None:
        """Write one line; a child that already closed its stdin is reported by expect()."""
        assert self.process.stdin is not None
        with contextlib.suppress(BrokenPipeError, OSError):
            self.process.stdin.write((line + "\n").encode())
            self.process.stdin.flush()

    def wait_exit(self, timeout: float) -> int:
        """The exit code; PromptTimeout (group killed) when it does not exit in time."""
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise PromptTimeout(f"did not exit within {timeout:g}s") from None

    def _wait_exit(self, timeout: float) -> int | None:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def close(self) -> None:
        """Always called: no child or helper of ours survives a capture."""
        if self.process.poll() is None:
            self.kill()
        self.process.wait()
        if self._children is not None:
            self._children.untrack(self.process.pid)
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        self._reader.join(timeout=2.0)
        if self.process.stdout is not None:
            self.process.stdout.close()
