"""Simulated training jobs, a profiler wired to the real simulators, exposition helpers."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from npumon.daemon.config import Config, parse_config
from npumon.daemon.model.profile import (
    ProfileSummary,
    StepStats,
    job_adapter,
    report_adapter,
)
from npumon.daemon.profiling.capture import Host
from npumon.daemon.profiling.launch import WORKER_MODULE
from npumon.daemon.profiling.service import Profiler
from npumon.daemon.profiling.workloads import ProcessProbe
from npumon.daemon.runner import DEFAULT_MAX_OUTPUT_BYTES, CommandResult, CommandRunner, run_command
from npumon.daemon.store import SnapshotStore
from npumon.exporters.collector import NpuCollector
from tests.helpers.exposition import promtool_problems, samples
from tests.helpers.exposition import value as exposition_value
from tests.helpers.wait import scaled, wait_for

BIN = Path(sys.executable).parent
SIM_TRAIN = str(BIN / "npumon-sim-train")
SIM_MSPROF = str(BIN / "npumon-sim-msprof")
STEP_SECONDS = "0.05"


@contextmanager
def train_job(
    home: Path,
    kind: str,
    *,
    dynamic: bool = True,
    config_dir: Path | None = None,
    environ: dict[str, str] | None = None,
    steps: int | None = None,
    step_seconds: str = STEP_SECONDS,
    extra: Sequence[str] = (),
) -> Iterator[subprocess.Popen[bytes]]:
    """npumon-sim-train in the background with HOME=home (and ``environ``, ``--steps`` and the
    ``extra`` options); stopped and reaped on exit."""
    env = {**os.environ, "HOME": str(home), **(environ or {})}
    env.pop("PROFILING_MODE", None)
    if dynamic:
        env["PROFILING_MODE"] = "dynamic"
    argv = [SIM_TRAIN, "--profile", kind, "--step-seconds", step_seconds]
    if config_dir is not None:
        argv += ["--dynamic-config-dir", str(config_dir)]
    if steps is not None:
        argv += ["--steps", str(steps)]
    argv += extra
    job = subprocess.Popen(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        if dynamic:
            wait_for(
                lambda: (home / f"dynamic_profiling_socket_{job.pid}").exists(),
                10.0,
                "the job's dynamic profiling socket",
            )
        if config_dir is not None:
            wait_for(
                lambda: (config_dir / "profiler_config.json").exists(),
                10.0,
                "the job's profiler_config.json",
            )
        yield job
    finally:
        job.terminate()
        try:
            job.wait(timeout=scaled(10))
        except subprocess.TimeoutExpired:
            job.kill()
            job.wait(timeout=scaled(10))


def config_for(tmp_path: Path, **profiling: Any) -> Config:
    settings: dict[str, Any] = {
        "enabled": True,
        "duration": "300ms",
        "msprof": {"command": [SIM_MSPROF]},
        "timeouts": {"start": "10s", "stop": "10s", "export": "30s", "analysis": "60s"},
        "discover": False,
    }
    settings.update(profiling)
    return parse_config({"state_directory": str(tmp_path / "state"), "profiling": settings})


class Recorder:
    """set_capturing that records what the store held at every call."""

    def __init__(self, store: SnapshotStore) -> None:
        self.store = store
        self.calls: list[frozenset[tuple[int, int]]] = []

    def __call__(self, chips: frozenset[tuple[int, int]]) -> None:
        self.calls.append(chips)
        self.store.set_capturing(chips)

    def held(self) -> frozenset[tuple[int, int]]:
        """The chips marked under capture now."""
        return self.calls[-1] if self.calls else frozenset()


def worker_in_process(
    argv: Sequence[str],
    timeout: float,
    *,
    stdin: str | None = None,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
) -> CommandResult:
    """The analysis worker's report computed in this process, for tests about what a capture
    exports rather than the worker's process boundary (tests/daemon/profiling/test_launch.py and
    tests/daemon/analysis/test_worker.py run it as a process): no memory limit, no report pages,
    no confined root. Any other command runs as a process."""
    if list(argv[-2:]) != ["-m", WORKER_MODULE]:
        return run_command(argv, timeout, stdin=stdin, max_output_bytes=max_output_bytes)
    from npumon.daemon.analysis.worker import run_job

    assert stdin is not None
    job = job_adapter().validate_json(stdin)
    assert job.confine is None, "a confined job: run the worker as a process"
    report = run_job(job)
    stdout = report_adapter().dump_json(report).decode() + "\n"
    return CommandResult(tuple(argv), stdout, "", 0, 0.0)


def profiler_for(
    config: Config,
    wait: Callable[[float], None] = lambda s: time.sleep(min(s, 0.3)),
    clock: Callable[[], float] = time.time,
    monotonic: Callable[[], float] = time.monotonic,
    runner: CommandRunner = run_command,
) -> tuple[Profiler, Recorder]:
    from npumon.daemon.config import Throttle

    store = SnapshotStore(Throttle())
    recorder = Recorder(store)
    probe = ProcessProbe()
    host = Host(
        probe.alive, probe.all, recorder, runner, wait=wait, clock=clock, monotonic=monotonic
    )
    profiler = Profiler(config, store, host, probe)
    profiler.start()
    return profiler, recorder


def exposition(profiler: Profiler) -> str:
    return NpuCollector(profiler.store.latest, "test").exposition().decode()


def value(text: str, name: str, **labels: str) -> float | None:
    return exposition_value(samples(text), name, **labels)


def promtool_ok(text: str) -> None:
    assert promtool_problems(text) == ""


def tree_digest(root: Path) -> str:
    """Names, sizes, mtimes and contents of every entry: any change shows."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        digest.update(
            f"{path.relative_to(root)}|{st.st_mode}|{st.st_size}|{st.st_mtime_ns}".encode()
        )
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def msprof_children(marker: Path) -> list[int]:
    """Live simulated msprof processes whose argv mentions ``marker`` (our captures dir)."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if "npumon-sim-msprof" in cmd and str(marker) in cmd and p.info["status"] != "zombie":
            found.append(p.pid)
    return found


def summary(workload: str, p99: float) -> ProfileSummary:
    """A summary with only a step time (p99 as given)."""
    return step_summary(StepStats(4, p99 * 0.9, p99 * 0.9, p99 * 0.95, p99), workload)


def step_summary(step: StepStats | None, workload: str = "w") -> ProfileSummary:
    """A summary with only ``step`` (None: a capture without a step table)."""
    return ProfileSummary(
        workload=workload,
        layout="torch_npu",
        capture_time_seconds=None,
        step=step,
        phases=(),
        op_total_seconds=None,
        op_time_ratio=(),
        core_type_time_ratio=(),
        ai_cpu_seconds=None,
        ai_cpu_count=None,
        format_conversion_seconds=None,
        format_conversion_ratio=None,
        dynamic_shape_op_count=None,
        op_types_inferred=False,
        ranks=(),
        rank_spread=(),
        bottlenecks=(),
    )
