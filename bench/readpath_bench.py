"""The read path as users see it: printed, never asserted.

1. A real Prometheus (Debian's ``prometheus``, on loopback) scrapes two daemons, each on its own
   simulated 16-chip A3 node (hccn_tool on where the simulator has it), one every 5 s and one
   every 15 s, and Debian's ``prometheus-node-exporter`` at both intervals when it is installed,
   for ``--seconds``: ``scrape_duration_seconds`` p50 / p99 / max per job, as Prometheus
   measured it; and apart, each job's first scrape (the one that adds every series to the
   TSDB) and the p99 of its other scrapes.
2. Each daemon's own CPU over that window (its children, npu-smi and hccn_tool, apart) and RSS;
   for the one scraped every 15 s, the share of a core its renders took at most (the sum over
   its scrapes of npumon_scrape_collector_duration_seconds, wall time). Beside them, npumon's
   HTTP edge alone in a process of its own, serving an empty body and never asked: what the
   server costs at rest (its loop sleeps until a connection comes).
3. The floor: the same Prometheus scraping, at both intervals, a minimal server that answers
   every GET with one fixed copy of the 15 s daemon's body (OpenMetrics, gzip), taken once every
   source has succeeded: what this Prometheus on this machine measures for that body with no
   render at all. npumon's p99 is printed beside it.
4. Ten requests on one kept-alive connection, each after a first request on a new connection.

Each figure is printed with its budget (issue 19) and whether it is met.

Usage: python bench/readpath_bench.py [--seconds 60] [--json PATH]
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import http.server
import json
import select
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import psutil
from daemon_bench import _config, _has_hccn_tool, _met, _start, _wait_for_chips

from npumon.daemon.analysis.readers.steptime import percentile  # PromQL's quantile_over_time rule

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = str(ROOT / "simulator" / "scenarios" / "a3-8x2.yaml")
CHIPS = 16
JOBS = {"npumon_5s": 5, "npumon_15s": 15}  # job name: scrape interval in seconds
IDLE = "idle_edge"
ROUND_TRIES = 5
OPENMETRICS = {"Accept": "application/openmetrics-text; version=1.0.0", "Accept-Encoding": "gzip"}
# a body is whole once these sources have succeeded (hccn_tool where the simulator has it)
WHOLE = (b'last_success_timestamp_seconds{source="npu_smi_health"}', b"npu_network_up{")
# npumon's HTTP edge alone, serving an empty body and never asked: what serving costs at rest
IDLE_EDGE = (
    "import threading\n"
    "from npumon.exporters.web.http import serve\n"
    "serve(lambda openmetrics: b'', '127.0.0.1:0', None, lambda: True)\n"
    "print('listening', flush=True)\n"
    "threading.Event().wait()\n"
)


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


def _results(port: int, expr: str) -> list[dict[str, Any]]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as response:
        result: list[dict[str, Any]] = json.load(response)["data"]["result"]
    return result


def _query(port: int, expr: str) -> dict[str, float]:
    return {r["metric"].get("job", ""): float(r["value"][1]) for r in _results(port, expr)}


def _series(port: int, expr: str) -> dict[str, list[float]]:
    """A range vector's values per job, oldest first."""
    return {
        r["metric"].get("job", ""): [float(v) for _, v in r["values"]] for r in _results(port, expr)
    }


def _first_apart(port: int, window: str) -> dict[str, dict[str, float]]:
    """Per job: its first scrape (ms; that one adds every series to the TSDB, and how many it
    added) and the p99 of the others."""
    durations = _series(port, f"scrape_duration_seconds{window}")
    added = _series(port, f"scrape_series_added{window}")
    return {
        "first_ms": {job: 1000 * v[0] for job, v in durations.items()},
        "first_series_added": {job: v[0] for job, v in added.items()},
        "after_first_p99_ms": {
            job: 1000 * percentile(v[1:], 99) for job, v in durations.items() if len(v) > 1
        },
    }


def _kept_alive(port: int) -> dict[str, list[float]]:
    """Ten GETs of /metrics on one connection, each after a GET on a new connection (ms), both
    of the same snapshot: a round whose two bodies differ (a poll published in between, so the
    second paid a render the first did not) is asked again, up to ROUND_TRIES times."""
    headers = OPENMETRICS

    def timed(conn: http.client.HTTPConnection) -> tuple[float, bytes]:
        started = time.perf_counter()
        conn.request("GET", "/metrics", headers=headers)
        body = conn.getresponse().read()
        return 1000 * (time.perf_counter() - started), body

    def first() -> tuple[float, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            return timed(conn)
        finally:
            conn.close()

    first()  # renders the current snapshot
    kept_conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    kept, new = [], []
    for _ in range(10):
        for _ in range(ROUND_TRIES):
            (new_ms, new_body), (kept_ms, kept_body) = first(), timed(kept_conn)
            if new_body == kept_body:
                break
        new.append(new_ms)
        kept.append(kept_ms)
    kept_conn.close()
    return {"kept_alive_ms": kept, "new_connection_ms": new}


def _whole_body(port: int, deadline_s: float) -> tuple[bytes, str]:
    """The daemon's OpenMetrics body (gzip) and content type, once it holds every tier."""
    deadline, whole = time.monotonic() + deadline_s, WHOLE if _has_hccn_tool() else WHOLE[:1]
    while True:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/metrics", headers=OPENMETRICS)
        response = conn.getresponse()
        body, content_type = response.read(), response.getheader("content-type", "")
        conn.close()
        if all(part in gzip.decompress(body) for part in whole):
            return body, content_type
        if time.monotonic() > deadline:
            raise SystemExit("the daemon never served every tier")
        time.sleep(1.0)  # the simulated tiers run on wall time


def _fixed_server(body: bytes, content_type: str) -> http.server.ThreadingHTTPServer:
    """HTTP/1.1 on a free loopback port answering every GET with ``body`` (gzip)."""

    class Fixed(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.send_response(200)
            for name, value in (
                ("Content-Type", content_type),
                ("Content-Encoding", "gzip"),
                ("Content-Length", str(len(body))),
            ):
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fixed)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _idle_edge() -> subprocess.Popen[bytes]:
    """The edge alone, once it listens: its imports and start stay out of the CPU window."""
    edge = subprocess.Popen(
        [sys.executable, "-c", IDLE_EDGE], stdout=subprocess.PIPE, start_new_session=True
    )
    assert edge.stdout is not None
    ready, _, _ = select.select([edge.stdout], [], [], 60)
    if not ready or edge.stdout.readline() != b"listening\n":
        edge.kill()
        raise SystemExit("the idle edge did not start listening within 60 s")
    return edge


def _start_exporters(
    folder: Path,
) -> tuple[list[subprocess.Popen[bytes]], dict[str, tuple[int, int]], dict[str, int]]:
    """One daemon per npumon job (its own simulated node), node_exporter when installed: the
    processes, Prometheus' targets (job: port, interval) and the daemons' pids by job."""
    processes, targets, pids = [], {}, {}
    for job, interval in JOBS.items():
        (folder / job).mkdir()
        daemon, port = _start(_config(folder / job, SCENARIO, "10s"), None)
        processes.append(daemon)
        targets[job], pids[job] = (port, interval), daemon.pid
    for job in JOBS:
        _wait_for_chips(targets[job][0], CHIPS, 60)
    node_exporter = shutil.which("prometheus-node-exporter")
    if node_exporter:
        node_port = _free_port()
        processes.append(
            subprocess.Popen(
                [node_exporter, f"--web.listen-address=127.0.0.1:{node_port}"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
        targets |= {f"node_exporter_{i}s": (node_port, i) for i in JOBS.values()}
    return processes, targets, pids


def _add_floor(targets: dict[str, tuple[int, int]]) -> http.server.ThreadingHTTPServer:
    """The fixed-body server, as job ``fixed_<interval>s`` at each interval."""
    server = _fixed_server(*_whole_body(targets["npumon_15s"][0], 180))
    targets |= {f"fixed_{i}s": (server.server_address[1], i) for i in JOBS.values()}
    return server


def run(seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        processes: list[subprocess.Popen[bytes]] = []
        try:
            processes, targets, pids = _start_exporters(folder)
            floor = _add_floor(targets)
            prometheus, prom_port = _prometheus(folder, targets)
            idle = _idle_edge()
            processes += [prometheus, idle]
            procs = {job: psutil.Process(pid) for job, pid in (pids | {IDLE: idle.pid}).items()}
            cpu0, wall0 = {job: p.cpu_times() for job, p in procs.items()}, time.monotonic()
            time.sleep(seconds)  # a real Prometheus scraping for real: wall time
            cpu1, wall1 = {job: p.cpu_times() for job, p in procs.items()}, time.monotonic()
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
                # the collectors' wall time in each scrape's render, summed over the window
                "render_seconds": _query(
                    prom_port,
                    "sum by (job) (sum_over_time("
                    f"npumon_scrape_collector_duration_seconds{window}))",
                ),
                "cpu_percent": {
                    job: 100
                    * (c.user + c.system - cpu0[job].user - cpu0[job].system)
                    / (wall1 - wall0)
                    for job, c in cpu1.items()
                },
                "rss_mb": {
                    job: p.memory_info().rss / 2**20 for job, p in procs.items() if job != IDLE
                },
                "node_exporter": any(job.startswith("node_exporter") for job in targets),
                "samples": _query(prom_port, "scrape_samples_scraped"),
            }
            result |= _first_apart(prom_port, window)
            result |= _kept_alive(targets["npumon_15s"][0])
            floor.shutdown()
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(10)
    return result


def _print(r: dict[str, Any]) -> None:
    print(f"== a real Prometheus, {r['seconds']:g} s, 16-chip A3 nodes (simulated), one per job")
    for job in sorted(r["p99_ms"]):
        print(
            f"  {job}: scrape_duration_seconds p50 {r['p50_ms'].get(job, float('nan')):.2f} ms"
            f"  p99 {r['p99_ms'][job]:.2f} ms  max {r['max_ms'].get(job, float('nan')):.2f} ms"
            f"  ({r['scrapes'].get(job, 0):.0f} scrapes); the first"
            f" {r['first_ms'].get(job, float('nan')):.2f} ms (adds"
            f" {r['first_series_added'].get(job, 0):.0f} series), p99 of the others"
            f" {r['after_first_p99_ms'].get(job, float('nan')):.2f} ms"
        )
    if not r["node_exporter"]:
        print("  (prometheus-node-exporter is not installed: no comparison)")
    for job, interval in JOBS.items():
        p99, theirs = (
            r["p99_ms"].get(job, float("nan")),
            r["p99_ms"].get(f"node_exporter_{interval}s", float("nan")),
        )
        print(
            f"  every {interval} s: npumon p99 {p99:.2f} ms, node_exporter p99 {theirs:.2f} ms"
            f" (budget < 10 ms and below node_exporter): {_met(p99 < 10 and p99 < theirs)}"
        )
        fixed = r["p99_ms"].get(f"fixed_{interval}s", float("nan"))
        print(
            f"  every {interval} s: the same body as fixed bytes, no render: p99 {fixed:.2f} ms"
            f" ({r['samples'].get(job, 0):.0f} samples); npumon {p99 - fixed:+.2f} ms over it"
        )
    cpu, render = r["cpu_percent"]["npumon_15s"], r["render_seconds"].get("npumon_15s", 0.0)
    share = 100 * render / r["seconds"]
    print(
        f"  daemon CPU scraped every 15 s (OpenMetrics, gzip; children apart) {cpu:.2f} % of a"
        f" core, rendering at most {share:.3f} % ({1000 * render:.1f} ms of collector time in"
        f" {r['scrapes'].get('npumon_15s', 0):.0f} scrapes) (budget < 0.7 %): {_met(cpu < 0.7)}"
    )
    print(f"  daemon CPU scraped every 5 s {r['cpu_percent']['npumon_5s']:.2f} % of a core")
    print(
        "  npumon's HTTP edge alone, never asked (at rest)"
        f" {r['cpu_percent'][IDLE]:.2f} % of a core"
    )
    for job, rss in sorted(r["rss_mb"].items()):
        print(f"  RSS {job} {rss:.1f} MB (budget < 60 MB): {_met(rss < 60)}")
    kept, new = r["kept_alive_ms"], r["new_connection_ms"]
    first = statistics.median(new)
    kept_ok = max(kept) < 2 * first
    print(
        "  ten requests on one kept-alive connection (OpenMetrics, gzip), ms: "
        + " ".join(f"{t:.2f}" for t in kept)
    )
    print(
        f"  a first request on a new connection: median {first:.2f} ms; kept-alive max"
        f" {max(kept):.2f} ms (budget each < 2x, {2 * first:.2f} ms): {_met(kept_ok)}",
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
