"""Daemon budgets (docs/architecture.md, "Budgets") on the simulator: printed, never asserted.

1. polling a 16-chip node (A3: 8 NPUs x 2 dies) every 5 s: CPU of the daemon process itself,
   excluding its npu-smi children (npu-smi's own cost is reported separately);
2. idle RSS of the daemon after that run;
3. scrape latency (p50/p99 over many HTTP scrapes) of that 16-chip node while npu-smi hangs.

Usage: python bench/daemon_bench.py [--seconds 60]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

LISTENING = re.compile(r"event=listening address=\S* port=(\d+)")

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
HANG_SCENARIO = """\
family: a3
events:
  - {kind: hang, argv: [info], start: 1000, seconds: 3600}
"""


def _config(folder: Path, scenario: str, timeout: str) -> Path:
    path = folder / "npumon.yaml"
    path.write_text(
        "npu_smi:\n"
        f"  command: [\"{BIN / 'npumon-sim-npu-smi'}\", \"--scenario\", \"{scenario}\"]\n"
        f"  timeout: {timeout}\n"
        f"state_directory: {folder / 'state'}\n"
    )
    return path


def _start(config: Path, sim_time: str | None) -> tuple[subprocess.Popen[bytes], int]:
    """The daemon on a port the kernel picks (0), and that port, read from its log."""
    env = dict(os.environ)
    if sim_time is not None:
        env["NPUMON_SIM_TIME"] = sim_time
    log = config.parent / "npumon.log"
    with log.open("wb") as out:
        daemon = subprocess.Popen(
            [str(BIN / "npumon"), "run", "--config", str(config), "--web.listen-address",
             "127.0.0.1:0"],
            env=env, stdout=subprocess.DEVNULL, stderr=out, start_new_session=True,
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and daemon.poll() is None:
        found = LISTENING.search(log.read_text(errors="replace"))
        if found:
            return daemon, int(found[1])
        time.sleep(0.1)
    daemon.kill()
    raise SystemExit(f"the daemon did not report its port; see {log}")


def _scrape(port: int) -> tuple[float, bytes]:
    started = time.perf_counter()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        body = response.read()
    return time.perf_counter() - started, body


def _wait_for_chips(port: int, chips: int, deadline_s: float) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            _, body = _scrape(port)
            if body.count(b"\nnpu_temperature_celsius{") >= chips:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("the daemon never served the 16 chips")


def polling_cost(folder: Path, seconds: float) -> None:
    config = _config(folder, "a3-8x2", "10s")
    daemon, port = _start(config, None)
    try:
        _wait_for_chips(port, 16, 60)
        proc = psutil.Process(daemon.pid)
        before, wall = proc.cpu_times(), time.monotonic()
        time.sleep(seconds)  # measuring a running daemon over wall time
        after, elapsed = proc.cpu_times(), time.monotonic() - wall
        own = (after.user + after.system) - (before.user + before.system)
        children = (after.children_user + after.children_system) - (
            before.children_user + before.children_system)
        print(f"polling 16 chips, table every 5 s, for {elapsed:.0f} s:")
        print(f"  daemon's own CPU     {own:.2f} s = {100 * own / elapsed:.2f} % of one core"
              "  (budget < 1 %)")
        share = 100 * children / elapsed
        print(f"  npu-smi (simulator)  {children:.2f} s = {share:.2f} % of one core")
        print(f"  daemon RSS           {proc.memory_info().rss / 2**20:.1f} MB  (budget < 60 MB)")
    finally:
        daemon.terminate()
        daemon.wait(10)


def scrape_16_chips_hung(folder: Path, scrapes: int) -> None:
    """In-process: a 16-chip snapshot is published, then every call hangs; scrape over HTTP."""
    from npumon.daemon.config import parse_config
    from npumon.daemon.supervisor import Supervisor
    from npumon.exporters.http import serve

    scenario = folder / "hang16.yaml"
    scenario.write_text(HANG_SCENARIO)
    config = parse_config({"npu_smi": {
        "command": [str(BIN / "npumon-sim-npu-smi"), "--scenario", str(scenario)],
        "timeout": "60s"}})
    supervisor = Supervisor(config, lambda: config)  # what `npumon run` serves
    os.environ["NPUMON_SIM_TIME"] = "900"
    supervisor.agent.sources.poll_all()
    os.environ["NPUMON_SIM_TIME"] = "1000"  # from now on npu-smi hangs
    server = serve(supervisor.registry, "127.0.0.1:0", None, supervisor.healthy,
                   render_version=supervisor.version)
    supervisor.start()
    try:
        latencies = []
        for _ in range(scrapes):
            latency, body = _scrape(server.port)
            latencies.append(latency)
        assert body.count(b"\nnpu_temperature_celsius{") == 16
        latencies.sort()
        p99 = latencies[int(0.99 * (len(latencies) - 1))]
        print(f"scrapes of a 16-chip node while npu-smi hangs ({len(latencies)} scrapes,"
              f" {len(body)} bytes each):")
        print(f"  p50 {1000 * statistics.median(latencies):.2f} ms  p99 {1000 * p99:.2f} ms"
              "  (budget p99 < 5 ms)")
    finally:
        supervisor.stop()
        server.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--scrapes", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        polling_cost(Path(tmp), args.seconds)
        scrape_16_chips_hung(Path(tmp), args.scrapes)


if __name__ == "__main__":
    main()
