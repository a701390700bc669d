"""The read path as users see it: printed, never asserted.

1. A real Prometheus (Debian's ``prometheus``, on loopback) scrapes a daemon on a simulated
   16-chip A3 node (hccn_tool on where the simulator has it) every 5 s and every 15 s (two
   jobs), and Debian's ``prometheus-node-exporter`` alike when it is installed, for
   ``--seconds``: ``scrape_duration_seconds`` p50 / p99 / max per job, as Prometheus measured.
2. The daemon's own CPU over that window (its children, npu-smi and hccn_tool, apart) and its
   RSS; the render cost per new snapshot (the sum of npumon_scrape_collector_duration_seconds)
   and, from the number of scrapes, the most of that CPU rendering can be.
3. Ten requests on one kept-alive connection against a first request on a new connection each.

Usage: python bench/readpath_bench.py [--seconds 60] [--json PATH]
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import psutil
from daemon_bench import _config, _start, _wait_for_chips

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = str(ROOT / "simulator" / "scenarios" / "a3-8x2.yaml")
CHIPS = 16
JOBS = {"npumon_5s": 5, "npumon_15s": 15}  # job name: scrape interval in seconds


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _prometheus(
    folder: Path, targets: dict[str, tuple[int, int]]
) -> tuple[subprocess.Popen[bytes], int]:
    """Prometheus scraping each job's 127.0.0.1:port at its interval; its own port."""
    jobs = "".join(
        f"  - job_name: {job}\n    scrape_interval: {interval}s\n    scrape_timeout: {interval}s\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{port}']}}]\n"
        for job, (port, interval) in targets.items()
    )
    (folder / "prometheus.yml").write_text(f"scrape_configs:\n{jobs}")
    port = _free_port()
    process = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={folder / 'prometheus.yml'}",
            f"--storage.tsdb.path={folder / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(folder / "prometheus.log").open("wb"),
        start_new_session=True,
    )
    return process, port


def _query(port: int, expr: str) -> dict[str, float]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as response:
        data = json.load(response)["data"]["result"]
    return {r["metric"].get("job", ""): float(r["value"][1]) for r in data}


def _kept_alive(port: int) -> dict[str, list[float]]:
    """Ten GETs of /metrics on one connection, and ten on a new connection each (ms)."""
    headers = {"Accept": "application/openmetrics-text; version=1.0.0", "Accept-Encoding": "gzip"}

    def timed(conn: http.client.HTTPConnection) -> float:
        started = time.perf_counter()
        conn.request("GET", "/metrics", headers=headers)
        conn.getresponse().read()
        return 1000 * (time.perf_counter() - started)

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    kept = [timed(conn) for _ in range(10)]
    conn.close()
    new = []
    for _ in range(10):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        new.append(timed(conn))
        conn.close()
    return {"kept_alive_ms": kept, "new_connection_ms": new}


def run(seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        daemon, port = _start(_config(folder, SCENARIO, "10s"), None)
        exporters = [daemon]
        try:
            _wait_for_chips(port, CHIPS, 60)
            targets = {job: (port, interval) for job, interval in JOBS.items()}
            node_exporter = shutil.which("prometheus-node-exporter")
            if node_exporter:
                node_port = _free_port()
                exporters.append(
                    subprocess.Popen(
                        [node_exporter, f"--web.listen-address=127.0.0.1:{node_port}"],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        start_new_session=True,
                    )
                )
                targets |= {f"node_exporter_{i}s": (node_port, i) for i in JOBS.values()}
            prometheus, prom_port = _prometheus(folder, targets)
            exporters.append(prometheus)
            proc = psutil.Process(daemon.pid)
            cpu0, wall0 = proc.cpu_times(), time.monotonic()
            time.sleep(seconds)  # a real Prometheus scraping for real: wall time
            cpu1, wall1 = proc.cpu_times(), time.monotonic()
            window = f"[{int(seconds)}s]"
            result: dict[str, Any] = {
                "seconds": seconds,
                "p50_ms": _query(
                    prom_port, f"1000 * quantile_over_time(0.5, scrape_duration_seconds{window})"
                ),
                "p99_ms": _query(
                    prom_port, f"1000 * quantile_over_time(0.99, scrape_duration_seconds{window})"
                ),
                "max_ms": _query(
                    prom_port, f"1000 * max_over_time(scrape_duration_seconds{window})"
                ),
                "scrapes": _query(prom_port, f"count_over_time(up{window})"),
                "render_ms": 1000
                * sum(
                    _query(
                        prom_port,
                        "sum by (job) (avg_over_time("
                        f"npumon_scrape_collector_duration_seconds{window}))",
                    ).get(job, 0.0)
                    for job in ("npumon_15s",)
                ),
                "cpu_percent": 100
                * (cpu1.user + cpu1.system - cpu0.user - cpu0.system)
                / (wall1 - wall0),
                "rss_mb": proc.memory_info().rss / 2**20,
                "node_exporter": bool(node_exporter),
            }
            result |= _kept_alive(port)
        finally:
            for process in exporters:
                process.terminate()
            for process in exporters:
                process.wait(10)
    return result


def _print(r: dict[str, Any]) -> None:
    print(f"== a real Prometheus, {r['seconds']:g} s, a 16-chip A3 node (simulated)")
    for job in sorted(r["p99_ms"]):
        print(
            f"  {job}: scrape_duration_seconds p50 {r['p50_ms'].get(job, float('nan')):.2f} ms"
            f"  p99 {r['p99_ms'][job]:.2f} ms  max {r['max_ms'].get(job, float('nan')):.2f} ms"
            f"  ({r['scrapes'].get(job, 0):.0f} scrapes)"
        )
    if not r["node_exporter"]:
        print("  (prometheus-node-exporter is not installed: no comparison)")
    npumon_scrapes = sum(v for k, v in r["scrapes"].items() if k.startswith("npumon"))
    most = r["render_ms"] * npumon_scrapes / (10 * r["seconds"])
    print(
        f"  daemon CPU {r['cpu_percent']:.2f} % of a core (both npumon jobs, children apart),"
        f" RSS {r['rss_mb']:.1f} MB; a render of a new snapshot {r['render_ms']:.1f} ms, so at"
        f" most {most:.2f} % of a core rendering ({npumon_scrapes:.0f} scrapes, each at most"
        " one render)"
    )
    kept, new = r["kept_alive_ms"], r["new_connection_ms"]
    print(
        "  ten requests on one kept-alive connection (OpenMetrics, gzip), ms: "
        + " ".join(f"{t:.2f}" for t in kept)
    )
    print(
        f"  a new connection each: median {statistics.median(new):.2f} ms; kept-alive after the"
        f" first: median {statistics.median(kept[1:]):.2f} ms, max {max(kept[1:]):.2f} ms",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if shutil.which("prometheus") is None:
        sys.exit("prometheus is missing: `make tools` installs it")
    result = run(args.seconds)
    _print(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
