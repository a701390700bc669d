"""Helpers for the msprof / training-job simulator tests: child processes with deadlines, and
the diagnosis each simulated workload is built to show."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.helpers.processes import stop
from tests.helpers.wait import scaled

BIN = Path(sys.executable).parent
TRAIN = str(BIN / "npumon-sim-train")
MSPROF = str(BIN / "npumon-sim-msprof")

# the diagnoses each workload is built to show (rules of daemon/analysis/rules/)
DIAGNOSES = {
    "balanced": set(),
    "input_bound": {"input_pipeline"},
    "conversion_bound": {"format_conversion"},
    "aicpu_fallback": {"ai_cpu_fallback"},
    "communication_bound": {"communication"},
    "slow_link": {"communication", "slow_link"},
}
# the kinds the msprof tests profile, and the diagnoses they look at
MSPROF_KINDS = ("aicpu_fallback", "balanced", "conversion_bound", "input_bound")
WATCHED = {"input_pipeline", "format_conversion", "ai_cpu_fallback"}


def child_env(home: Path, **extra: str) -> dict[str, str]:
    """HOME in tmp (the socket marker lives there); no simulator knobs leaking in."""
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("NPUMON_SIM_") and k not in ("PROFILING_MODE", "RANK")
    }
    return {**base, "HOME": str(home), **extra}


@contextmanager
def train_job(
    home: Path, *args: str, dynamic: bool = True, stderr: Path | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """A running npumon-sim-train; terminated (and reaped) on exit."""
    env = child_env(home, **({"PROFILING_MODE": "dynamic"} if dynamic else {}))
    err = stderr.open("wb") if stderr else subprocess.DEVNULL
    proc = subprocess.Popen([TRAIN, *args], env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        yield proc
    finally:
        stop(proc)
        if stderr:
            err.close()  # type: ignore[union-attr]


class Interactive:
    """A child driven line by line; ``expect`` reads stdout + stderr with a deadline."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        self.text = ""
        self._seen = 0

    def expect(self, marker: str, timeout: float = 10.0) -> str:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + scaled(timeout)
        while (found := self.text.find(marker, self._seen)) < 0:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.proc.stdout], [], [], max(left, 0))
            if not ready:
                raise TimeoutError(f"no {marker!r} in {self.text!r}")
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:
                raise EOFError(f"exited before {marker!r}: {self.text!r}")
            self.text += chunk.decode()
        before = self.text[self._seen : found]
        self._seen = found + len(marker)
        return before

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def finish(self, timeout: float = 10.0) -> tuple[int, str]:
        """Close stdin, read the rest, return (exit code, whole output)."""
        rest, _ = self.proc.communicate(timeout=scaled(timeout))
        self.text += rest.decode()
        return self.proc.returncode, self.text

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=scaled(10))
