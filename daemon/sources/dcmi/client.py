"""The daemon's side of the DCMI helper: start it, ask it within a deadline, kill it when late.

A late helper is killed and never waited on (a process stuck in an ioctl may not die at once;
it is reaped later, without blocking); the next start waits a backoff that doubles from 1 s to
5 min and resets on an answer. Every failure is a HelperFailure, and the caller asks npu-smi.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import selectors
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from npumon.daemon.runner import CHILD_PYTHON, PROCESS_GROUPS, ProcessGroups, kill_group
from npumon.daemon.sources.wrapper import SourceFailure

log = logging.getLogger(__name__)
HELPER_MODULE = "npumon.daemon.sources.dcmi.child"  # its __main__
MAX_ANSWER_BYTES = 4 * 1024 * 1024
Call = tuple[str, int, int, int]  # (request name, card, device, argument)


class HelperFailure(SourceFailure):
    """No answer from the helper; ``reason`` is a failure-counter label (dcmi_timeout, ...)."""


# NPU_*_DEVICE_ID of the driver's npucli/inc/npu_common.h
CHIP_MODELS = {0xD100: "310", 0xD500: "310p", 0xD105: "310b", 0xD801: "910", 0xD802: "910b"}
CHIP_MODELS |= {0xD803: "a3", 0xD806: "950"}


@dataclass(frozen=True, slots=True)
class DcmiChip:
    card: int  # npu-smi's NPU ID
    device: int  # npu-smi's chip index
    logic_id: int
    phy_id: int
    pci_device_id: int = 0  # 0: none (a SoC board), or the library could not say

    @property
    def model(self) -> str:
        """npu-smi's chip type from the PCI device id (npu_common.h, npu_init_ep_chip_type):
        what decides which DCMI calls npu-smi makes for a value; "other" for the rest."""
        return CHIP_MODELS.get(self.pci_device_id, "other")


@dataclass(frozen=True, slots=True)
class Hello:
    """What a helper found at dcmi_init: the chips (frozen until it restarts) and lacks."""

    chips: tuple[DcmiChip, ...]
    missing: frozenset[str]
    dcmi_version: str | None
    driver_version: str | None
    interface: int = 1  # 2: the 950's dcmiv2_* (dcmi_init answered -8255, dcmiv2_init 0)


def _hello(message: Mapping[str, Any]) -> Hello:
    if message.get("load_error"):
        raise HelperFailure("dcmi_load_failed", f"dlopen failed: {message['load_error']}")
    if message.get("init") != 0:
        raise HelperFailure(
            "dcmi_init",
            f"dcmi_init returned {message.get('init')} (-99998: "
            "the library lacks it; -8005: no device access or not ready)",
        )
    if message.get("enumerate") != 0:
        raise HelperFailure(
            "dcmi_enumerate", f"listing the chips returned {message.get('enumerate')}"
        )
    return Hello(
        chips=tuple(DcmiChip(*chip) for chip in message["chips"]),
        missing=frozenset(message["missing"]),
        dcmi_version=message.get("dcmi_version"),
        driver_version=message.get("driver_version"),
        interface=message.get("interface", 1),
    )


def helper_environment(library: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` with the library's directory and the driver's `lib64/common` (where its
    dependencies libascend_hal, libdrvdsmi_host, libc_sec live) after LD_LIBRARY_PATH's own
    entries, as npu-exporter's image sets them; the dynamic loader reads it at process start."""
    entries = [e for e in environ.get("LD_LIBRARY_PATH", "").split(":") if e]
    for folder in (library.parent, library.parent.parent / "common"):
        if str(folder) not in entries:
            entries.append(str(folder))
    return {**environ, "LD_LIBRARY_PATH": ":".join(entries)}


class DcmiHelper:
    """One helper process at a time; ``call`` is safe from several threads (one at a time)."""

    def __init__(
        self,
        library: Path,
        timeout: float,
        *,
        command: Sequence[str] = (*CHILD_PYTHON, "-m", HELPER_MODULE),
        env: Mapping[str, str] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        groups: ProcessGroups = PROCESS_GROUPS,
        max_backoff: float = 300.0,
    ) -> None:
        self.library = library
        self.timeout = timeout
        self._command = (*command, str(library))
        self._env = helper_environment(library, os.environ if env is None else env)
        self._monotonic = monotonic
        self._groups = groups
        self._max_backoff = max_backoff
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._hello: Hello | None = None
        self._failures = 0  # since a helper last lived max_backoff s: an answer alone is not it
        self._not_before = 0.0
        self._started = 0.0  # monotonic start of the running helper
        self._dying: list[subprocess.Popen[bytes]] = []
        self.starts = 0  # helpers started (a test counts restarts)

    @property
    def pid(self) -> int | None:
        """The running helper's process ID (bench/dcmi_bench.py reads its CPU time)."""
        return self._process.pid if self._process is not None else None

    def hello(self) -> Hello:
        """The running helper's hello, starting one if none runs (and the backoff is over)."""
        with self._locked():
            return self._ensure()

    def call(self, calls: Sequence[Call]) -> list[tuple[int, Any]]:
        """One request, answered within the timeout, or HelperFailure (the helper is killed)."""
        with self._locked():
            self._ensure()
            request = json.dumps({"calls": [list(c) for c in calls]}) + "\n"
            answer = self._exchange(request.encode(), f"{len(calls)} calls")
            answers = answer.get("answers")
            if not isinstance(answers, list) or len(answers) != len(calls):
                self._kill("dcmi_protocol", "the helper answered something else")
            if self._monotonic() - self._started >= self._max_backoff:
                self._failures = 0  # a helper that lived a whole backoff: failures forgotten
            return [(int(rc), value) for rc, value in answers]

    def restart(self, why: str) -> None:
        """Kill the helper now; the next call starts one at once (a fresh dcmi_init)."""
        with self._lock:
            if self._process is not None:
                log.info("event=dcmi_helper_restart why=%r", why)
                self._stop()
            self._not_before = 0.0

    def close(self) -> None:
        with self._lock:
            self._stop()

    @contextlib.contextmanager
    def _locked(self) -> Any:
        if not self._lock.acquire(timeout=self.timeout):
            raise HelperFailure("dcmi_busy", "another poll holds the DCMI helper")
        try:
            yield
        finally:
            self._lock.release()

    def _ensure(self) -> Hello:
        self._reap()
        if self._process is not None and self._hello is not None:
            return self._hello
        wait = self._not_before - self._monotonic()
        if wait > 0:
            raise HelperFailure("dcmi_backoff", f"the helper failed; next start in {wait:.0f} s")
        self._start()
        try:
            self._hello = _hello(self._exchange(b"", "dcmi_init"))
        except HelperFailure as failure:
            if self._process is not None:
                self._fail()
            raise failure from None
        return self._hello

    def _start(self) -> None:
        self.starts += 1
        self._started = self._monotonic()
        self._buffer = b""
        self._process = subprocess.Popen(  # noqa: S603 (our own interpreter and module)
            self._command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=self._env,
        )
        if not self._groups.add(self._process.pid):
            self._stop()
            raise HelperFailure("cancelled", "npumon is shutting down")

    def _exchange(self, request: bytes, what: str) -> dict[str, Any]:
        process = self._process
        assert process is not None and process.stdin is not None
        try:
            if request:
                process.stdin.write(request)
                process.stdin.flush()
            line = self._read_line(time.monotonic() + self.timeout, what)
            message: Any = json.loads(line)
        except (OSError, ValueError) as error:
            self._kill("dcmi_exited", f"the helper went away during {what}: {error}")
        if not isinstance(message, dict):
            self._kill("dcmi_protocol", "the helper answered something else")
        return dict(message)

    def _read_line(self, deadline: float, what: str) -> bytes:
        """One answer line; the deadline is real time (a pipe), whatever clock backoff uses."""
        process = self._process
        assert process is not None and process.stdout is not None
        fd = process.stdout.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    self._kill(
                        "dcmi_timeout",
                        f"no answer to {what} in {self.timeout:g} s; "
                        "is the driver hung? npu-smi serves meanwhile",
                    )
                if not selector.select(left):
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise OSError("end of output")
                self._buffer += chunk
                if len(self._buffer) > MAX_ANSWER_BYTES:
                    self._kill("dcmi_protocol", "the helper's answer is too large")
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _kill(self, reason: str, message: str) -> NoReturn:
        self._fail()
        raise HelperFailure(reason, message)

    def _fail(self) -> None:
        """Kill the helper and wait a backoff before the next start."""
        self._stop()
        self._back_off()

    def _back_off(self) -> None:
        self._failures += 1
        delay = min(self._max_backoff, 2.0 ** (self._failures - 1))
        self._not_before = self._monotonic() + delay

    def _stop(self) -> None:
        """SIGKILL the helper's group; it is reaped later, never waited on."""
        process, self._process, self._hello = self._process, None, None
        if process is None:
            return
        kill_group(process.pid)  # still registered: its group id cannot be a recycled one
        _close_pipes(process)
        self._dying.append(process)
        self._reap()

    def _reap(self) -> None:
        """Collect helpers that have exited, without blocking; one that exited by itself
        counts as a failure."""
        current = self._process
        if current is not None and current.poll() is not None:
            log.warning("event=dcmi_helper_exited code=%s", current.returncode)
            self._process, self._hello = None, None
            _close_pipes(current)
            self._dying.append(current)
            self._back_off()
        still = []
        for process in self._dying:
            if process.poll() is None:
                still.append(process)
            else:
                self._groups.remove(process.pid)
        self._dying = still


def _close_pipes(process: subprocess.Popen[bytes]) -> None:
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
