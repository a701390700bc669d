"""The target of a simulated `msprof --dynamic=on` session and its start/stop captures."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from npumon.simulator.prof_dir import CaptureMeta, write_host_only, write_raw
from npumon.simulator.profiles import KINDS

DEFAULT_STEP_SECONDS = 0.5


class TargetGone(Exception):
    """The profiled process exited."""


@dataclass(frozen=True, slots=True)
class Target:
    """A process to profile; workload details come from its command line when it is a sim job."""

    pid: int
    create_time: float
    kind: str
    step_seconds: float
    device_id: int
    epoch: float | None = None  # a synchronous job's shared step 0 (--epoch); None: its start


def socket_path(pid: int) -> Path:
    """The job creates it when started with PROFILING_MODE=dynamic."""
    return Path.home() / f"dynamic_profiling_socket_{pid}"


def tell(pid: int, command: str) -> None:
    """Pass ``command`` (start, stop) to the job: the real msprof sends it over the job's unix
    socket; here it is written into the job's marker file, which the job reads every step. A
    job that is gone (no marker) is told nothing."""
    try:
        fd = os.open(socket_path(pid), os.O_WRONLY | os.O_TRUNC)  # never creates the marker
    except OSError:
        return
    with open(fd, "w", encoding="ascii") as marker:
        marker.write(command + "\n")


def told(pid: int) -> str:
    """The last command msprof passed to the job ``pid`` ("" when none, or no marker)."""
    try:
        return socket_path(pid).read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        return ""


def _option(cmdline: Sequence[str], name: str) -> str | None:
    for index, arg in enumerate(cmdline):
        if arg == name and index + 1 < len(cmdline):
            return cmdline[index + 1]
        if arg.startswith(name + "="):
            return arg.partition("=")[2]
    return None


def target_from_cmdline(pid: int, create_time: float, cmdline: Sequence[str]) -> Target:
    """`npumon-sim-train --profile K --step-seconds S --device N [--epoch T]`; anything else:
    defaults."""
    kind = _option(cmdline, "--profile") or "balanced"
    try:
        step = float(_option(cmdline, "--step-seconds") or DEFAULT_STEP_SECONDS)
        device = int(_option(cmdline, "--device") or 0)
        epoch_text = _option(cmdline, "--epoch")
        epoch = float(epoch_text) if epoch_text else None
    except ValueError:
        step, device, epoch = DEFAULT_STEP_SECONDS, 0, None
    return Target(
        pid,
        create_time,
        kind if kind in KINDS else "balanced",
        step if step > 0 else DEFAULT_STEP_SECONDS,
        device,
        epoch,
    )


def find_target(pid: int) -> Target | None:
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return target_from_cmdline(pid, process.create_time(), process.cmdline())
    except psutil.Error:
        return None


def is_alive(target: Target) -> bool:
    """Same process (not a reused pid) and not a zombie."""
    found = find_target(target.pid)
    return found is not None and found.create_time == target.create_time


class Session:
    """start/stop pairs; each stop writes one raw PROF_* directory per target under ``output``."""

    def __init__(
        self,
        targets: Sequence[Target],
        output: Path,
        raw_mb: int = 0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.targets = tuple(targets)
        self.clock = clock  # tests pass a fake one: the window covers steps without waiting
        self.output = output
        self.raw_mb = raw_mb
        self.started_at: float | None = None
        self.count = 0

    @property
    def started(self) -> bool:
        return self.started_at is not None

    def _gone(self) -> Target | None:
        return next((t for t in self.targets if not is_alive(t)), None)

    def start(self) -> str:
        gone = self._gone()
        if gone is not None:
            raise TargetGone(f"The process {gone.pid} exited; profiling cannot start.")
        if self.started_at is not None:
            return "[WARNING] [msprof] Profiling has already started."
        self.started_at = self.clock()
        for target in self.targets:
            tell(target.pid, "start")
        return "[INFO] [msprof] Start profiling...."

    def stop(self) -> str:
        if self.started_at is None:
            return "[WARNING] [msprof] Profiling has not started. Enter start first."
        start, stop = self.started_at, self.clock()
        self.started_at = None
        for target in self.targets:
            tell(target.pid, "stop")
        self.output.mkdir(parents=True, exist_ok=True)
        gone = self._gone()
        if gone is not None:
            self.count += 1
            write_host_only(self.output, self.count, start, gone.pid)  # what a dead job leaves
            raise TargetGone(
                f"The process {gone.pid} exited during profiling; no data was collected."
            )
        lines = ["[INFO] [msprof] Stop profiling...."]
        for target in self.targets:
            self.count += 1
            path = write_raw(
                self.output, capture_meta(target, start, stop), self.count, self.raw_mb
            )
            lines.append(f"[INFO] [msprof] Data saved in {path}")
        return "\n".join(lines)


def capture_meta(t: Target, start: float, stop: float) -> CaptureMeta:
    """The steps the target ran between start and stop, numbered from its own start (or from
    the job's shared ``--epoch``: every rank of a synchronous job numbers the same step alike)."""
    return CaptureMeta(
        kind=t.kind,
        pid=t.pid,
        device_id=t.device_id,
        step_seconds=t.step_seconds,
        start_seconds=start,
        stop_seconds=stop,
        first_step=int((start - (t.create_time if t.epoch is None else t.epoch)) / t.step_seconds)
        + 1,
        steps=max(1, round((stop - start) / t.step_seconds)),
        seed=t.pid ^ int(start * 1000),
    )
