"""`make demo` as a user runs it (in a temp folder, on loopback): a healthy start logs no
warning, every line is logfmt, a failed start stops what it started, the profiler targets only
the demo's own job; and the unit and README say SIGHUP reloads."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import yaml

from tests.helpers.exposition import samples, value
from tests.helpers.http import get
from tests.helpers.wait import scaled, wait_for
from tests.support import ROOT

SIM_TRAIN = "npumon-sim-train"
LOGFMT = re.compile(
    r"ts=\S+ level=(debug|info|warning|error) logger=\S+"
    r'( \w+=("(?:[^"\\]|\\.)*"|[^\s"=]*))+'
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make(target: str, demo: Path, port: int, **extra: str) -> subprocess.CompletedProcess[str]:
    """make TARGET in the repository, everything the demo writes under ``demo`` (HOME too: the
    simulated job puts its msprof socket there); the venv is taken as built (-o its stamp)."""
    env = {**os.environ, "HOME": str(demo), "MAKEFLAGS": ""}
    argv = [
        "make",
        "-s",
        "-C",
        str(ROOT),
        "-o",
        ".venv/.installed-stamp",
        target,
        f"DEMO={demo}",
        f"PORT={port}",
        f"LISTEN=127.0.0.1:{port}",
        f"BIN={Path(sys.executable).parent}",
        f"DEMO_WAIT={scaled(20):g}",  # seconds for the daemon to serve (make demo's deadline)
        *(f"{k}={v}" for k, v in extra.items()),
    ]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=scaled(90), env=env, check=False
    )


def demo_processes(demo: Path) -> list[psutil.Process]:
    """Processes started for this demo folder (their command lines name it)."""
    found = []
    for process in psutil.process_iter():
        try:
            if any(str(demo) in part for part in process.cmdline()):
                found.append(process)
        except psutil.Error:
            continue
    return found


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "demo"  # short: the fake kubelet's unix socket lives in it
    yield folder
    for process in demo_processes(folder):  # whatever a failing test left behind
        process.kill()


@pytest.mark.integration  # the daemon, the simulators and a training job as real processes
def test_a_healthy_demo_start_logs_no_warning_and_counts_no_problem(demo: Path) -> None:
    port = free_port()
    decoy = subprocess.Popen(
        [
            str(Path(sys.executable).parent / SIM_TRAIN),
            "--profile",
            "conversion_bound",
            "--step-seconds",
            "0.5",
        ],  # another demo's job
        cwd=demo.parent,
        env={**os.environ, "HOME": str(demo.parent)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        started = make("demo", demo, port)
        assert started.returncode == 0, started.stderr + started.stdout
        url = f"http://127.0.0.1:{port}/metrics"

        def settled() -> bool:  # every source up, chips attributed, a capture analysed
            found = samples(get(url))
            ups = [v for (name, _), v in found.items() if name == "npumon_source_up"]
            return (
                len(ups) == 7
                and all(v == 1 for v in ups)
                and value(
                    found,
                    "npu_chip_allocation_info",
                    npu="0",
                    chip="0",
                    namespace="ml",
                    pod="train-0",
                    container="trainer",
                )
                == 1
                and value(
                    found, "npu_profile_bottleneck", workload="demo-train", kind="format_conversion"
                )
                == 1
            )

        wait_for(settled, timeout=60, what="the demo to settle", tolerate=(OSError,), poll=1.0)
        found = samples(get(url))
        target = yaml.safe_load((demo / "npumon.yaml").read_text())["profiling"]["targets"][0]
        train = psutil.Process(int((demo / "train.pid").read_text()))
        assert re.search(target["cmdline"], " ".join(train.cmdline()))
        assert not re.search(target["cmdline"], " ".join(psutil.Process(decoy.pid).cmdline()))
    finally:
        stopped = make("demo-stop", demo, port)
        decoy.kill()
        decoy.wait(scaled(10))
    assert stopped.returncode == 0, stopped.stderr
    problems = [v for (name, _), v in found.items() if name == "npumon_attribution_problems_total"]
    assert problems in ([], [0.0])
    lines = (demo / "npumon.log").read_text().splitlines()
    assert lines and all(LOGFMT.fullmatch(line) for line in lines), lines
    assert [line for line in lines if " level=info " not in line] == []
    wait_for(lambda: not demo_processes(demo), timeout=10, what="the demo to stop")


@pytest.mark.integration
def test_a_failed_demo_start_stops_what_it_started(demo: Path) -> None:
    with socket.socket() as taken:  # the port is someone else's
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        failed = make("demo", demo, port)
    assert failed.returncode != 0
    assert f"did not serve port {port}" in failed.stderr or "exited" in failed.stderr
    wait_for(lambda: not demo_processes(demo), timeout=10, what="the demo's processes to stop")
    assert not list(demo.glob("*.pid"))


def test_the_unit_reloads_with_sighup_and_the_readme_says_so() -> None:
    unit = (ROOT / "deploy" / "systemd" / "npumon.service").read_text()
    assert "\nExecReload=/bin/kill -HUP $MAINPID\n" in unit
    readme = (ROOT / "README.md").read_text()
    assert "SIGHUP reloads the config file" in readme and "systemctl reload npumon" in readme
