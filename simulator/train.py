"""`npumon-sim-train --profile KIND`: a stand-in training job (torch_npu / graph mode) to profile.

It runs steps in real time until SIGTERM/SIGINT (or --steps N). With PROFILING_MODE=dynamic it
creates ``$HOME/dynamic_profiling_socket_<pid>`` for msprof attach; with --dynamic-config-dir it
polls ``DIR/profiler_config.json`` every step like torch_npu.profiler.dynamic_profile.init(DIR).

--capture-inflation F makes each step last (1 + F) times --step-seconds while a capture runs (a
simulated msprof attach between its start and stop, or a dynamic_profile plan's steps): a
profiler's cost to the job, known to the test that measures it. --step-log PATH appends one
Megatron-LM iteration line every --log-interval steps, as the kubelet's CRI container log holds
it (formats: tests/fixtures/steplog/SOURCES.md).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import TextIO

from npumon.simulator.attach import socket_path, told
from npumon.simulator.prof_dir import CaptureMeta
from npumon.simulator.profiles import KINDS, simulate
from npumon.simulator.torch_profile import ConfigWatcher, Plan, write_ascend_pt

_NAP_SECONDS = 0.1  # longest sleep between looks at the stop flag


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="npumon-sim-train", description=__doc__)
    parser.add_argument("--profile", required=True, choices=KINDS, help="workload kind")
    parser.add_argument("--step-seconds", type=float, default=0.5, help="real seconds per step")
    parser.add_argument("--dynamic-config-dir", type=Path, help="torch_npu dynamic_profile dir")
    parser.add_argument("--steps", type=int, help="stop after N steps (default: run until killed)")
    parser.add_argument("--device", type=int, default=0, help="NPU id written in the profiles")
    parser.add_argument(
        "--epoch",
        type=float,
        help="Unix time of step 0, shared by every rank of a synchronous job (default: now)",
    )
    parser.add_argument(
        "--capture-inflation",
        type=float,
        default=0.0,
        help="steps last (1 + F) times --step-seconds while a capture runs (default 0)",
    )
    parser.add_argument(
        "--step-log", type=Path, help="append Megatron-LM iteration lines as CRI log lines here"
    )
    parser.add_argument(
        "--log-interval", type=int, default=1, help="steps per --step-log line (default 1)"
    )
    return parser


GLOBAL_BATCH = 128  # samples per iteration in the step log


def cri_line(now_ns: int, message: str) -> str:
    """``message`` as the kubelet's CRI log holds a stdout line: RFC3339Nano UTC time (Go's
    format: trailing zeros of the fraction dropped), stream, ``F`` (a whole line), message."""
    seconds, nanos = divmod(now_ns, 1_000_000_000)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    fraction = f"{nanos:09d}".rstrip("0")
    return f"{stamp}{'.' + fraction if fraction else ''}Z stdout F {message}\n"


def megatron_line(now: float, iteration: int, total: int, elapsed_ms: float) -> str:
    """Megatron-LM ``training_log``'s line for ``iteration`` (the fields of
    tests/fixtures/steplog/megatron-cri.log; the loss falls slowly, the rest is fixed)."""
    return (
        f" [{datetime.fromtimestamp(now):%Y-%m-%d %H:%M:%S.%f}]"
        f" iteration {iteration:8d}/{total:8d} |"
        f" consumed samples: {iteration * GLOBAL_BATCH:12d} |"
        f" elapsed time per iteration (ms): {elapsed_ms:.1f} |"
        f" learning rate: {3e-5:.6E} |"
        f" global batch size: {GLOBAL_BATCH:5d} |"
        f" lm loss: {7.0 / (1 + iteration / 1000):.6E} |"
        f" loss scale: {1.0:.1f} |"
        f" grad norm: {1.25:.3f} |"
        f" number of skipped iterations: {0:3d} |"
        f" number of nan iterations: {0:3d} |"
    )


@dataclass
class _Capture:
    plan: Plan
    start_seconds: float | None = None


class Job:
    """The step loop; ``stop()`` (from a signal handler) ends it after the current nap."""

    def __init__(self, args: argparse.Namespace, log: TextIO) -> None:
        self.args = args
        self.log = log
        self.pid = os.getpid()
        self.rank = int(os.environ["RANK"]) if os.environ.get("RANK", "").isdigit() else None
        world = os.environ.get("WORLD_SIZE", "")
        self.world_size = int(world) if world.isdigit() and int(world) > (self.rank or 0) else 1
        self.stopping = False
        self.watcher = (
            ConfigWatcher(args.dynamic_config_dir, self.rank or 0, log)
            if args.dynamic_config_dir
            else None
        )
        self.capture: _Capture | None = None
        self.attachable = os.environ.get("PROFILING_MODE") == "dynamic"
        self.logged: tuple[int, float] | None = None  # the step and time of the last log line

    def stop(self, signum: int = 0, frame: FrameType | None = None) -> None:
        self.stopping = True

    def _sleep_until(self, deadline: float) -> None:
        while not self.stopping and (left := deadline - time.time()) > 0:
            time.sleep(min(left, _NAP_SECONDS))

    def _before_step(self, step: int, now: float) -> None:
        if self.capture is None and self.watcher is not None:
            plan = self.watcher.poll(step - 1)
            if plan is not None:
                self.capture = _Capture(plan)
                print(
                    f"[INFO] dynamic_profile: capturing steps {plan.first_step}.."
                    f"{plan.last_step} into {plan.prof_dir}",
                    file=self.log,
                    flush=True,
                )
        if self.capture is not None and step == self.capture.plan.first_step:
            self.capture.start_seconds = now

    def _after_step(self, step: int, now: float) -> None:
        capture = self.capture
        if capture is None or capture.start_seconds is None or step != capture.plan.last_step:
            return
        self.capture = None
        plan, start = capture.plan, capture.start_seconds
        meta = CaptureMeta(
            self.args.profile,
            self.pid,
            self.args.device,
            self.args.step_seconds,
            start,
            now,
            plan.first_step,
            plan.active,
            self.pid ^ int(start * 1000),
        )
        steps = simulate(
            meta.kind, meta.first_step, meta.steps, meta.step_seconds, meta.start_seconds, meta.seed
        )
        try:
            path = write_ascend_pt(
                plan, steps, meta, self.rank, socket.gethostname(), self.world_size, os.environ
            )
        except OSError as error:
            print(f"[ERROR] dynamic_profile: cannot write the profile: {error}", file=self.log)
            return
        print(f"[INFO] dynamic_profile: profile written to {path}", file=self.log, flush=True)

    def capturing(self) -> bool:
        """A capture runs: the steps of a dynamic_profile plan, or msprof started."""
        if self.capture is not None and self.capture.start_seconds is not None:
            return True
        return self.attachable and told(self.pid) == "start"

    def _log_step(self, step: int, now: float) -> None:
        """Every --log-interval steps: the mean step time since the previous line (Megatron's
        ``elapsed time per iteration``), logged at the end of the step."""
        if self.args.step_log is None or self.logged is None or step % self.args.log_interval:
            return
        since_step, since = self.logged
        self.logged = (step, now)
        elapsed_ms = (now - since) / (step - since_step) * 1000.0
        line = cri_line(time.time_ns(), megatron_line(now, step, self.args.steps or 0, elapsed_ms))
        try:
            with open(self.args.step_log, "a", encoding="utf-8") as out:
                out.write(line)
        except OSError as error:
            print(f"[ERROR] step log: {error}", file=self.log, flush=True)

    def run(self) -> None:
        begin = time.time() if self.args.epoch is None else self.args.epoch
        step = max(0, int((time.time() - begin) / self.args.step_seconds))
        self.logged = (step, time.time())
        extra = 0.0  # seconds the captured steps ran longer
        while not self.stopping and (self.args.steps is None or step < self.args.steps):
            step += 1
            self._before_step(step, time.time())
            if self.args.capture_inflation and self.capturing():
                extra += self.args.step_seconds * self.args.capture_inflation
            self._sleep_until(begin + step * self.args.step_seconds + extra)
            if not self.stopping:
                now = time.time()
                self._after_step(step, now)
                self._log_step(step, now)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.step_seconds <= 0:
        print("npumon-sim-train: --step-seconds must be positive", file=sys.stderr)
        return 2
    if args.capture_inflation < 0 or args.log_interval < 1:
        print(
            "npumon-sim-train: --capture-inflation must be 0 or more, --log-interval 1 or more",
            file=sys.stderr,
        )
        return 2
    if args.step_log is not None:
        args.step_log.parent.mkdir(parents=True, exist_ok=True)  # the kubelet makes it
    job = Job(args, sys.stderr)
    signal.signal(signal.SIGTERM, job.stop)
    signal.signal(signal.SIGINT, job.stop)
    marker = socket_path(job.pid) if os.environ.get("PROFILING_MODE") == "dynamic" else None
    if marker is not None:
        marker.touch()  # the real job listens on a unix socket here; msprof only checks it exists
    try:
        job.run()
    finally:
        if marker is not None:
            marker.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
