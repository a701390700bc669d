"""Daemon budgets (docs/architecture.md, "Budgets") on the simulator: printed, never asserted.

1. polling 8 chips (910B) and 16 chips (A3: 8 NPUs x 2 dies) at the default intervals, with
   profiling on at its defaults (a simulated training job, attached with the simulated msprof)
   and a scrape every 15 s as Prometheus sends it (OpenMetrics, gzip):
   CPU of the daemon process itself, excluding its children (npu-smi, msprof: reported apart),
   RSS, and whether pandas is mapped into the daemon (the analysis runs in a worker process);
2. one client's scrapes (p50/p99, exposition size) of those nodes and of a 64-chip node (a
   scenario written here: A3 with 32 NPUs), with process and profiling series (network series
   too where the hccn_tool source exists);
3. duty cycle: the capture's duration over the profiling interval, per workload;
4. scrape latency (p50/p99 over many HTTP scrapes) of a 16-chip node while npu-smi hangs.

The daemons run side by side (one window of wall time for all of them). Stops by itself.

Usage: python bench/daemon_bench.py [--seconds 120] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil

LISTENING = re.compile(r"event=listening address=\S* port=(\d+)")

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
HANG_SCENARIO = """\
family: a3
events:
  - {kind: hang, argv: [info], start: 1000, seconds: 3600}
"""


BIG_SCENARIO = """\
# 64 chips: an A3 node with 32 NPUs x 2 dies (the simulator's `npus` override), busy
family: a3
npus: 32
period: 600
seed: 64
load: {base_percent: 70, amplitude_percent: 20, sine_period_seconds: 240}
processes:
%s
"""


def _has_hccn_tool() -> bool:
    from npumon.daemon.config import Config

    return "hccn_tool" in Config.model_fields and (BIN / "npumon-sim-hccn-tool").exists()


NICE_SIMULATORS = False  # --nice-simulators: the simulated npu-smi and hccn_tool at nice 19


def _train_program(folder: Path) -> Path:
    """This node's own path to the simulated training job (a link in its folder): the profiling
    target matches it, never another run's or another user's job with the same arguments."""
    return folder / "npumon-sim-train"


def _config(folder: Path, scenario: str, timeout: str, device: int | None = None) -> Path:
    """The daemon's config: the simulated npu-smi (and hccn_tool where that source exists);
    with `device`, profiling on at its defaults for the job this node started
    (`_train_program(folder) ... --device <device>`)."""
    path = folder / "npumon.yaml"
    nice = '"nice", "-n", "19", ' if NICE_SIMULATORS else ""
    text = (
        "npu_smi:\n"
        f'  command: [{nice}"{BIN / "npumon-sim-npu-smi"}", "--scenario", "{scenario}"]\n'
        f"chips:\n  timeout: {timeout}\n"
        f"state_directory: {folder / 'state'}\n"
    )
    if _has_hccn_tool():
        hccn = BIN / "npumon-sim-hccn-tool"
        text += f'hccn_tool:\n  command: [{nice}"{hccn}", "--scenario", "{scenario}"]\n'
    if device is not None:
        text += (
            "profiling:\n  enabled: true\n  discover: false\n  targets:\n"
            f"    - {{workload: train-{device},"
            f" cmdline: '^\\S+ {re.escape(str(_train_program(folder)))} .*--device {device}$',"
            f" npus: [{device % 8}]}}\n"
            f'  msprof: {{command: ["{BIN / "npumon-sim-msprof"}"]}}\n'
        )
    path.write_text(text)
    return path


def _start(
    config: Path, sim_time: str | None, host: str = "127.0.0.1", prefix: tuple[str, ...] = ()
) -> tuple[subprocess.Popen[bytes], int]:
    """The daemon on ``host`` and a port the kernel picks (0), and that port, read from its
    log; ``prefix`` runs it under another command (``ip netns exec NAME``)."""
    env = dict(os.environ)
    if sim_time is not None:
        env["NPUMON_SIM_TIME"] = sim_time
    log = config.parent / "npumon.log"
    with log.open("wb") as out:
        daemon = subprocess.Popen(
            [
                *prefix,
                str(BIN / "npumon"),
                "run",
                "--config",
                str(config),
                "--web.listen-address",
                f"{host}:0",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=out,
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and daemon.poll() is None:
        found = LISTENING.search(log.read_text(errors="replace"))
        if found:
            return daemon, int(found[1])
        time.sleep(0.1)
    daemon.kill()
    raise SystemExit(f"the daemon did not report its port; see {log}")


def _scrape(port: int, host: str = "127.0.0.1") -> tuple[float, bytes]:
    started = time.perf_counter()
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as response:
        body = response.read()
    return time.perf_counter() - started, body


def _wait_for_chips(port: int, chips: int, deadline_s: float, host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            _, body = _scrape(port, host)
            if body.count(b"\nnpu_temperature_celsius{") >= chips:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"the daemon never served the {chips} chips")


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def _pandas_mapped(pid: int) -> bool:
    """pandas' compiled modules mapped into the process: pandas was imported."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False
    return "/pandas/" in maps


class Node:
    """One daemon (profiling on, its own simulated training job) on one simulated node."""

    def __init__(self, folder: Path, label: str, scenario: str, chips: int, device: int) -> None:
        folder.mkdir()
        self.label, self.chips, self.folder = label, chips, folder
        _train_program(folder).symlink_to(BIN / "npumon-sim-train")
        self.train = subprocess.Popen(
            [
                str(_train_program(folder)),
                "--profile",
                "conversion_bound",
                "--step-seconds",
                "0.5",
                "--device",
                str(device),
            ],
            env={**os.environ, "PROFILING_MODE": "dynamic"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.daemon, self.port = _start(_config(folder, scenario, "10s", device), None)
        self.proc = psutil.Process(self.daemon.pid)

    def stop(self) -> None:
        for child in (self.daemon, self.train):
            child.terminate()
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait(10)

    def scrapes(self, count: int) -> dict[str, Any]:
        latencies, body = [], b""
        for _ in range(count):
            latency, body = _scrape(self.port)
            latencies.append(latency)
        latencies.sort()
        text = body.decode()
        samples = [line for line in text.splitlines() if line and not line.startswith("#")]
        capture = re.search(
            r'^npumon_capture_duration_seconds\{[^}]*workload="([^"]+)"[^}]*\} (\S+)', text, re.M
        )
        return {
            "p50_ms": 1000 * statistics.median(latencies),
            "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
            "bytes": len(body),
            "samples": len(samples),
            "process_series": sum(s.startswith("npu_process") for s in samples),
            "network_series": sum(
                s.startswith(
                    ("npu_network", "npu_roce", "npu_optical", "npu_hccs", "npu_sio", "npu_pcie")
                )
                for s in samples
            ),
            "profiling_series": sum(
                s.startswith(("npu_profile", "npu_step", "npumon_capture", "npu_profiling"))
                for s in samples
            ),
            "capture_workload": capture[1] if capture else None,
            "capture_seconds": float(capture[2]) if capture else None,
        }


def _alone(node: Node, nodes: list[Node], scrapes: int) -> dict[str, Any]:
    """``node``'s scrapes while the other daemons and their jobs are stopped (SIGSTOP): this
    daemon polling its simulators as usual, without two other nodes' simulators (a Python
    process per npu-smi call: 1.5 cores at 64 chips) saturating the 2 cores."""
    others = [n for n in nodes if n is not node]
    for other in others:
        for child in (other.daemon, other.train):
            os.kill(child.pid, signal.SIGSTOP)
    try:
        time.sleep(2.0)  # their npu-smi calls in progress finish: real processes, real time
        return node.scrapes(scrapes)
    finally:
        for other in others:
            for child in (other.daemon, other.train):
                os.kill(child.pid, signal.SIGCONT)


# What Prometheus sends (OpenMetrics first, gzip) and its common scrape interval: the daemon's
# CPU is measured while it is scraped as in production, not left alone.
PROMETHEUS_HEADERS = {
    "Accept": "application/openmetrics-text;version=1.0.0;q=0.5,"
    "text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
    "Accept-Encoding": "gzip",
}
SCRAPE_INTERVAL_S = 15.0


def _scraped_by_prometheus(nodes: list[Node], seconds: float) -> None:
    """Every SCRAPE_INTERVAL_S for ``seconds`` (wall time: the daemons run for real), each node
    scraped as Prometheus does."""
    started = time.monotonic()
    tick = started
    while tick < started + seconds:
        for node in nodes:
            request = urllib.request.Request(
                f"http://127.0.0.1:{node.port}/metrics", headers=PROMETHEUS_HEADERS
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                response.read()
        tick += SCRAPE_INTERVAL_S
        time.sleep(max(0.0, min(tick, started + seconds) - time.monotonic()))


def run_nodes(folder: Path, seconds: float, scrapes: int) -> dict[str, Any]:
    big = folder / "big64.yaml"
    big.write_text(
        BIG_SCENARIO
        % "\n".join(
            f"  - {{npu: {n}, chip: {c}, pid: {10000 + 2 * n + c}, name: python3, hbm_mb: 40960}}"
            for n in range(32)
            for c in range(2)
        )
    )
    nodes = [
        Node(folder / "n8", "8 chips (910B)", "910b-8", 8, 1),
        Node(folder / "n16", "16 chips (A3 8x2)", "a3-8x2", 16, 2),
        Node(folder / "n64", "64 chips (A3 32x2, bench scenario)", str(big), 64, 3),
    ]
    results: dict[str, Any] = {}
    try:
        for node in nodes:
            _wait_for_chips(node.port, node.chips, 90)
        before = {n.label: (n.proc.cpu_times(), time.monotonic()) for n in nodes}
        _scraped_by_prometheus(nodes, seconds)
        figures_of: dict[str, dict[str, Any]] = {}
        for node in nodes:
            (b, wall), a = before[node.label], node.proc.cpu_times()
            elapsed = time.monotonic() - wall
            own = (a.user + a.system) - (b.user + b.system)
            children = (a.children_user + a.children_system) - (b.children_user + b.children_system)
            figures: dict[str, Any] = {
                "chips": node.chips,
                "seconds": elapsed,
                "own_cpu_percent": 100 * own / elapsed,
                "children_cpu_percent": 100 * children / elapsed,
                "rss_mb": node.proc.memory_info().rss / 2**20,
                "pandas_loaded": _pandas_mapped(node.daemon.pid),
            }
            # what is served, before any daemon is stopped (a stopped daemon's npu-smi and
            # hccn_tool calls overrun their deadline: its sources are down for a while after)
            figures.update(node.scrapes(1))
            figures_of[node.label] = figures
        for node in nodes:
            figures = figures_of[node.label]
            timing = _alone(node, nodes, scrapes)
            figures.update(p50_ms=timing["p50_ms"], p99_ms=timing["p99_ms"])
            results[str(node.chips)] = figures
            elapsed = figures["seconds"]
            print(f"{node.label}, defaults + profiling, for {elapsed:.0f} s:")
            print(
                f"  daemon's own CPU {figures['own_cpu_percent']:.2f} % of one core"
                f" (budget < 1 %): {_met(figures['own_cpu_percent'] < 1)}"
                "   children (npu-smi, msprof) "
                f"{figures['children_cpu_percent']:.2f} %"
            )
            print(
                f"  RSS {figures['rss_mb']:.1f} MB (budget < 60 MB):"
                f" {_met(figures['rss_mb'] < 60)}  pandas loaded: "
                f"{figures['pandas_loaded']}"
            )
            print(
                f"  1 client, {scrapes} scrapes: p50 {figures['p50_ms']:.2f} ms  p99 "
                f"{figures['p99_ms']:.2f} ms  {figures['bytes']} bytes, "
                f"{figures['samples']} samples ({figures['process_series']} process, "
                f"{figures['network_series']} network, {figures['profiling_series']} "
                "profiling)"
            )
            print(
                f"  capture: {figures['capture_workload']} {figures['capture_seconds']} s",
                flush=True,
            )
    finally:
        for node in nodes:
            node.stop()
    return results


def scrape_16_chips_hung(folder: Path, scrapes: int) -> dict[str, float]:
    """In-process: a 16-chip snapshot is published, then every call hangs; scrape over HTTP."""
    from npumon.daemon.config import parse_config
    from npumon.daemon.supervisor import Supervisor
    from npumon.exporters.web.http import serve

    scenario = folder / "hang16.yaml"
    scenario.write_text(HANG_SCENARIO)
    config = parse_config(
        {
            "npu_smi": {
                "command": [str(BIN / "npumon-sim-npu-smi"), "--scenario", str(scenario)],
            },
            "chips": {"timeout": "60s"},
        }
    )
    supervisor = Supervisor(config, lambda: config)  # what `npumon run` serves
    os.environ["NPUMON_SIM_TIME"] = "900"
    supervisor.agent.sources.poll_all()
    os.environ["NPUMON_SIM_TIME"] = "1000"  # from now on npu-smi hangs
    server = serve(supervisor.exposition, "127.0.0.1:0", None, supervisor.healthy)
    supervisor.start()
    try:
        latencies = []
        for _ in range(scrapes):
            latency, body = _scrape(server.port)
            latencies.append(latency)
        assert body.count(b"\nnpu_temperature_celsius{") == 16
        latencies.sort()
        p99 = latencies[int(0.99 * (len(latencies) - 1))]
        print(
            f"scrapes of a 16-chip node while npu-smi hangs ({len(latencies)} scrapes,"
            f" {len(body)} bytes each):"
        )
        print(
            f"  p50 {1000 * statistics.median(latencies):.2f} ms  p99 {1000 * p99:.2f} ms"
            f"  (budget p99 < 5 ms): {_met(p99 < 0.005)}"
        )
        return {
            "p50_ms": 1000 * statistics.median(latencies),
            "p99_ms": 1000 * p99,
            "bytes": len(body),
            "scrapes": len(latencies),
        }
    finally:
        supervisor.stop()
        server.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--scrapes", type=int, default=300, help="per node, one client")
    parser.add_argument("--hung-scrapes", type=int, default=1000)
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument(
        "--nice-simulators",
        action="store_true",
        help="run the simulated npu-smi and hccn_tool at nice 19: separates the "
        "daemon's latency from the simulators' CPU (Python per call)",
    )
    args = parser.parse_args()
    global NICE_SIMULATORS
    NICE_SIMULATORS = args.nice_simulators
    from npumon.daemon.config import Config

    profiling = Config().profiling
    with tempfile.TemporaryDirectory() as tmp:
        nodes = run_nodes(Path(tmp), args.seconds, args.scrapes)
        hung = scrape_16_chips_hung(Path(tmp), args.hung_scrapes)
    figures = {
        "nodes": nodes,
        "hung_16": hung,
        "hccn_tool_source": _has_hccn_tool(),
        "profiling_interval_s": profiling.interval,
        "profiling_duration_s": profiling.duration,
        "profiling_steps": profiling.steps,
        "load_average": os.getloadavg(),
    }
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
