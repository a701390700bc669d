"""Load on the HTTP edge of a real daemon over loopback: printed, asserted only by its test.

Per scenario: a daemon on a simulated 16-chip node (port 0), then for ``--seconds`` many
scrapers (keep-alive, gzip, each every ``--interval``). Prints scrape p50/p99, 503s, errors
(other statuses, resets, 5 s timeouts), the daemon's threads and RSS before, right after and
SETTLE_SECONDS after. Scenarios: plain, TLS + basic auth, npu-smi hanging on every call, and
the default --web.max-requests 40 (beyond it a 503, with no latency target). Stops by itself;
the last line is ``RESULT {json}``.

``--hostile held|stuffing``: instead, ``--connections`` (10,000 / 12,000) sockets opened to the
daemon and held (sending nothing, or 63 KB of headers never finished) for ``--seconds``, while
one scraper tries a new connection every second; prints scrapes answered / attempted, the
daemon's peak RSS and the bytes it logged.

Usage: python bench/load_bench.py [--seconds 60] [--short] [--scenario NAME ...] [--json PATH]
       python bench/load_bench.py --hostile held [--connections 10000] [--seconds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import random
import resource
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import bcrypt
import psutil
from daemon_bench import HANG_SCENARIO, LISTENING

BIN = Path(sys.executable).parent
PASSWORD = "bench-pw"
CLIENT_TIMEOUT = 5.0
SETTLE_SECONDS = 5.0  # after the load, before the second RSS reading (freed memory returned)
SIZES = {"seconds": (60.0, 5.0), "scrapers": (100, 20), "warmup": (3.0, 2.0)}
SCENARIOS = {  # name: (max_requests or None for the default, TLS + auth, npu-smi hangs)
    "plain": (200, False, False),
    "tls_auth": (200, True, False),
    "npu_smi_hang": (200, False, True),
    "default_40": (None, False, False),
}


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    busy: list[float] = field(default_factory=list)  # 503s
    errors: int = 0


def _stop(daemon: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL when the daemon has not ended 10 s later (a very busy machine)."""
    daemon.terminate()
    try:
        daemon.wait(10)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()


def _web_config(folder: Path) -> Path:
    cert, key = folder / "bench.crt", folder / "bench.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=30,
    )
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=10)).decode()
    path = folder / "web.yml"
    path.write_text(
        f"tls_server_config: {{cert_file: {cert}, key_file: {key}}}\n"
        f"basic_auth_users:\n  prom: '{hashed}'\n"
    )
    return path


def _start(
    folder: Path, max_requests: int | None, tls: bool, hang: bool
) -> tuple[subprocess.Popen[bytes], int]:
    scenario = "a3-8x2"
    env = dict(os.environ)
    if hang:
        (folder / "hang.yaml").write_text(HANG_SCENARIO)
        scenario, env["NPUMON_SIM_TIME"] = str(folder / "hang.yaml"), "1000"
    config = folder / "npumon.yaml"
    config.write_text(
        f'npu_smi:\n  command: ["{BIN / "npumon-sim-npu-smi"}", "--scenario", "{scenario}"]\n'
        f"chips:\n  timeout: 10s\nstate_directory: {folder / 'state'}\n"
    )
    argv = [
        str(BIN / "npumon"),
        "run",
        "--config",
        str(config),
        "--web.listen-address",
        "127.0.0.1:0",
    ]
    if max_requests is not None:
        argv += ["--web.max-requests", str(max_requests)]
    if tls:
        argv += ["--web.config.file", str(_web_config(folder))]
    log = folder / "npumon.log"
    with log.open("wb") as out:
        daemon = subprocess.Popen(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=out, start_new_session=True
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and daemon.poll() is None:
        found = LISTENING.search(log.read_text(errors="replace"))
        if found:
            return daemon, int(found[1])
        time.sleep(0.1)  # a subprocess starting: no clock to inject
    daemon.kill()
    raise SystemExit(f"the daemon did not report its port; see {log}")


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, int]:
    writer.write(request)
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await reader.readexactly(length)
    return status, length


async def _scraper(
    port: int,
    tls: ssl.SSLContext | None,
    request: bytes,
    until: float,
    interval: float,
    tally: Tally,
) -> None:
    """Scrapes every ``interval`` s at a random phase (out of step, as in a fleet)."""
    conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    loop = asyncio.get_running_loop()
    next_at = loop.time() + random.uniform(0, interval)
    while (now := loop.time()) < until:
        await asyncio.sleep(max(0.0, next_at - now))
        next_at += interval
        started = loop.time()
        try:
            if conn is None:
                conn = await asyncio.wait_for(
                    asyncio.open_connection("127.0.0.1", port, ssl=tls), CLIENT_TIMEOUT
                )
            status, _ = await asyncio.wait_for(_exchange(*conn, request), CLIENT_TIMEOUT)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError, IndexError):
            tally.errors += 1
            conn = None
            continue
        elapsed = loop.time() - started
        if status == 200:
            tally.latencies.append(elapsed)
        elif status == 503:
            tally.busy.append(elapsed)
        else:
            tally.errors += 1
    if conn is not None:
        conn[1].close()


def _client_tls(tls: bool) -> ssl.SSLContext | None:
    if not tls:
        return None
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    return context


async def _load(port: int, tls: bool, args: argparse.Namespace) -> Tally:
    tally, context = Tally(), _client_tls(tls)
    headers = b"Accept-Encoding: gzip\r\n"
    if tls:
        headers += b"Authorization: Basic " + base64.b64encode(f"prom:{PASSWORD}".encode())
        headers += b"\r\n"
    request = b"GET /metrics HTTP/1.1\r\nHost: bench\r\n" + headers + b"\r\n"
    until = asyncio.get_running_loop().time() + args.seconds
    await asyncio.gather(
        *(
            _scraper(port, context, request, until, args.interval, tally)
            for _ in range(args.scrapers)
        )
    )
    return tally


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[int(q * (len(ordered) - 1))] if ordered else float("nan")


def run_scenario(name: str, args: argparse.Namespace) -> dict[str, float]:
    max_requests, tls, hang = SCENARIOS[name]
    with tempfile.TemporaryDirectory() as tmp:
        daemon, port = _start(Path(tmp), max_requests, tls, hang)
        try:
            proc = psutil.Process(daemon.pid)
            time.sleep(args.warmup)  # first polls, first snapshot: a real daemon, real time
            rss0, threads0 = proc.memory_info().rss / 2**20, proc.num_threads()
            tally = asyncio.run(_load(port, tls, args))
            rss1, threads1 = proc.memory_info().rss / 2**20, proc.num_threads()
            time.sleep(SETTLE_SECONDS)  # a real daemon returning freed memory: real time
            rss2 = proc.memory_info().rss / 2**20
        finally:
            _stop(daemon)
    result = {
        "ok": len(tally.latencies),
        "p50_ms": 1000 * statistics.median(tally.latencies or [0]),
        "p99_ms": _pct(tally.latencies, 0.99),
        "max_ms": _pct(tally.latencies, 1.0),
        "busy_503": len(tally.busy),
        "busy_p50_ms": _pct(tally.busy, 0.5),
        "busy_p99_ms": _pct(tally.busy, 0.99),
        "errors": tally.errors,
        "rss_before_mb": rss0,
        "rss_after_mb": rss1,
        "rss_settled_mb": rss2,
        "threads_before": threads0,
        "threads_after": threads1,
    }
    _print(name, max_requests, args, result)
    return result


def _print(
    name: str, max_requests: int | None, args: argparse.Namespace, r: dict[str, float]
) -> None:
    print(
        f"== {name} (--web.max-requests {max_requests or '40, the default'}): "
        f"{args.scrapers} scrapers every {1000 * args.interval:.0f} ms for {args.seconds:g} s"
    )
    print(
        f"  scrapes ok {r['ok']:.0f}  p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms"
        f"  max {r['max_ms']:.1f} ms"
    )
    print(
        f"  503 {r['busy_503']:.0f} (p50 {r['busy_p50_ms']:.2f} ms, p99 "
        f"{r['busy_p99_ms']:.2f} ms)  errors/timeouts "
        f"{r['errors']:.0f}"
    )
    print(
        f"  daemon RSS {r['rss_before_mb']:.1f} -> {r['rss_after_mb']:.1f} MB"
        f" ({r['rss_after_mb'] - r['rss_before_mb']:+.1f} MB), {SETTLE_SECONDS:g} s later "
        f"{r['rss_settled_mb']:.1f} MB ({r['rss_settled_mb'] - r['rss_before_mb']:+.1f} MB)"
        "  threads "
        f"{r['threads_before']:.0f} -> {r['threads_after']:.0f}",
        flush=True,
    )


HOSTILE = {
    "held": (10_000, b""),
    "stuffing": (12_000, b"GET / HTTP/1.1\r\nX-Pad: " + b"a" * 63_000),
}


def _scrape_once(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=CLIENT_TIMEOUT) as sock:
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
            return sock.recv(12).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def run_hostile(kind: str, connections: int | None, seconds: float) -> dict[str, float]:
    count, payload = HOSTILE[kind]
    count = connections or count
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the daemon inherits it too
    with tempfile.TemporaryDirectory() as tmp:
        daemon, port = _start(Path(tmp), None, False, False)
        proc, log = psutil.Process(daemon.pid), Path(tmp) / "npumon.log"
        log0, rss0, held, sent = log.stat().st_size, proc.memory_info().rss, [], 0
        peak, answered, attempted = rss0, 0, 0
        started = time.monotonic()
        try:
            for _ in range(count):
                sock = socket.socket()
                sock.setblocking(False)
                sock.connect_ex(("127.0.0.1", port))
                held.append(sock)
            time.sleep(0.5)  # the connects complete (loopback)
            for sock in held:
                with contextlib.suppress(OSError):  # closed by the daemon: beyond its cap
                    sent += sock.send(payload) if payload else 0
            opened = time.monotonic() - started
            while time.monotonic() - started < seconds:
                attempted += 1
                answered += _scrape_once(port)
                peak = max(peak, proc.memory_info().rss)
                time.sleep(1.0)  # one scrape a second against a real daemon
        finally:
            for sock in held:
                sock.close()
            logged = log.stat().st_size - log0
            _stop(daemon)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    result = {
        "connections": count,
        "opened_s": opened,
        "sent_mb": sent / 1e6,
        "answered": answered,
        "attempted": attempted,
        "rss_before_mb": rss0 / 2**20,
        "rss_peak_mb": peak / 2**20,
        "log_bytes": logged,
    }
    print(
        f"== {kind}: {count} connections ({sent / 1e6:.0f} MB of headers sent) held {seconds:g} s:"
        f" scrapes answered {answered}/{attempted}, daemon RSS {rss0 / 2**20:.0f} -> peak"
        f" {peak / 2**20:.0f} MB, log {logged} bytes",
        flush=True,
    )
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--scrapers", type=int)
    parser.add_argument("--interval", type=float, default=0.1, help="per scraper, seconds")
    parser.add_argument("--warmup", type=float)
    parser.add_argument("--short", action="store_true", help="5 s, 20 scrapers (where not given)")
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--hostile", choices=sorted(HOSTILE))
    parser.add_argument("--connections", type=int, help="for --hostile")
    args = parser.parse_args(argv)
    if args.hostile:
        result = run_hostile(args.hostile, args.connections, args.seconds or 20.0)
        print("RESULT " + json.dumps({args.hostile: result}))
        return
    for name, (full, short) in SIZES.items():  # where not given: the full or the short run's
        if getattr(args, name) is None:
            setattr(args, name, short if args.short else full)
    results = {name: run_scenario(name, args) for name in args.scenario or SCENARIOS}
    print("RESULT " + json.dumps(results))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "scrapers": args.scrapers,
                    "seconds": args.seconds,
                    "interval_s": args.interval,
                    "scenarios": results,
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
