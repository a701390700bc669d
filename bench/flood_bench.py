"""Hostile floods against npumon and Debian's node_exporter in the same run: printed, never
asserted (tests/exporters/test_hostile.py holds the cheap checks).

For each flood, each server in turn: an attacker process opens the flood's connections (and
opens a new one whenever one is closed, as an attacker would), and once each has been tried a
Prometheus-like scraper asks GET /metrics on a new connection every 0.5 s (10 s timeout, as
Prometheus' default scrape_timeout) for ``--seconds``. The figure is the fraction of those
scrapes answered 200.

Floods: ``held`` (connections that send nothing), ``trickled_body`` (GET / declaring a 100 kB
body, then a byte a second), ``trickled_metrics_body`` (the same as POST /metrics: Go's server
reads a body left unread before a response of more than 2 kB goes out, inside the handler, so
node_exporter's 40 in-flight slots wait on the tricklers), ``stuffed`` (63 kB of headers never
finished), ``slow_tls`` (a ClientHello never finished, against both servers with TLS on),
``stalled_tls`` (a whole ClientHello, Python's, then nothing: the server's handshake waits),
``pipelining`` (one connection pipelining GET /metrics as fast as the server takes them and
never reading), ``http10_unread`` (one HTTP/1.0 GET /metrics per connection, never read). The
non-readers' receive buffers are 4 KB: loopback's 64 KB MTU would otherwise absorb about 1.6 MB
of responses per socket. ``http10_unread_netns`` is http10_unread at the kernel's default
receive buffer across a veth pair of MTU 1500 (about 0.8 MB a socket): both servers run in a
network namespace of their own (``ip netns add``, root and iproute2) and listen on its end,
the attacker and the scraper connect from the other. npumon's 8-chip answer (16 KB) fits in
what the kernel takes; tests/exporters/test_write_floods.py floods answers of 1.5 MiB. Each
flood's figure also has the server's RSS before and at its peak (psutil), and ``half_close``
asks GET /metrics then shuts its write side (as ``nc -N``): the answers counted.

npumon is ``npumon run`` on a simulated 8-chip node at its defaults (1,024 connections);
node_exporter is /usr/bin/prometheus-node-exporter with two cheap collectors (loadavg,
meminfo), both on loopback (but for the namespace flood) with the same web-config.yml (TLS
for the TLS floods only).

Before the floods, npumon's HTTP edge alone at rest: its share of a core over
``--idle-seconds`` (the edge sleeps until a connection comes).

Usage: python bench/flood_bench.py [--seconds 20] [--idle-seconds 60] [--floods held,...]
       [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import resource
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
from daemon_bench import _config, _start, _wait_for_chips
from readpath_bench import _idle_edge

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = str(ROOT / "simulator" / "scenarios" / "910b-8.yaml")
NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"
FLOODS = {
    "held": 10_000,
    "trickled_body": 1_100,
    "trickled_metrics_body": 1_100,
    "stuffed": 1_100,
    "slow_tls": 2_000,
    "stalled_tls": 2_000,
    "pipelining": 1,
    "http10_unread": 1_100,
    "http10_unread_netns": 1_100,
}
NETNS_FLOODS = {"http10_unread_netns"}
TLS_FLOODS = {"slow_tls", "stalled_tls"}
HALF_CLOSES = 20
SCRAPE_EVERY = 0.5
SCRAPE_TIMEOUT = 10.0

# The attacker: COUNT connections of KIND to HOST:PORT, each reopened 0.1 s after it is closed.
# Plain non-blocking sockets on one selector: cheap enough for 10,000 on a busy machine.
ATTACKER = textwrap.dedent(
    """
    import resource, selectors, socket, sys, time
    host, port, kind, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    resource.setrlimit(resource.RLIMIT_NOFILE, (count + 256, count + 256))
    HEAD = {
        "held": b"",
        "trickled_body": b"GET / HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 100000\\r\\n\\r\\n",
        "trickled_metrics_body": (
            b"POST /metrics HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 100000\\r\\n\\r\\n"
        ),
        "stuffed": b"GET /metrics HTTP/1.1\\r\\nX-Pad: " + b"a" * 63000,
        "slow_tls": b"\\x16\\x03\\x01\\x02\\x00\\x01\\x00\\x01\\xfc\\x03\\x03",
        "stalled_tls": bytes.fromhex(sys.argv[5]) if len(sys.argv) > 5 else b"",
        "pipelining": b"GET /metrics HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n" * 100,
        "http10_unread": b"GET /metrics HTTP/1.0\\r\\n\\r\\n",
        "http10_unread_netns": b"GET /metrics HTTP/1.0\\r\\n\\r\\n",
    }[kind]
    reads = kind not in ("pipelining", "http10_unread", "http10_unread_netns")
    pipelined = []
    sel = selectors.DefaultSelector()
    held, reopen, to_open, connected = set(), [], count, 0
    started = time.monotonic()
    next_trickle = started + 1.0

    def close(sock):
        held.discard(sock)
        try:
            sel.unregister(sock)
        except (KeyError, ValueError):
            pass
        sock.close()
        reopen.append(time.monotonic() + 0.1)

    def open_one():
        sock = socket.socket()
        if not reads and kind != "http10_unread_netns":  # a small window: the server's
            # answers wait in its own buffers (across MTU 1500 the default is small enough)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        try:
            sock.connect((host, port))
        except BlockingIOError:
            pass
        except OSError:
            sock.close()
            reopen.append(time.monotonic() + 0.1)
            return
        sel.register(sock, selectors.EVENT_WRITE, "connecting")

    announced = False
    while True:
        now = time.monotonic()
        for _ in range(min(to_open, 500)):
            open_one()
            to_open -= 1
        due = [t for t in reopen if t <= now]
        reopen[:] = [t for t in reopen if t > now]
        for _ in due:
            open_one()
        for key, _ in sel.select(0.05):
            sock = key.fileobj
            if key.data == "connecting":
                if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                    close(sock)
                    continue
                connected += 1
                try:
                    sock.send(HEAD)
                except OSError:
                    close(sock)
                    continue
                held.add(sock)
                if reads:
                    sel.modify(sock, selectors.EVENT_READ, "held")
                else:  # never read: nothing to wait for
                    sel.unregister(sock)
                    if kind == "pipelining":
                        pipelined.append(sock)
            else:
                try:
                    if not sock.recv(65536):
                        close(sock)
                except OSError:
                    close(sock)
        if kind.startswith("trickled") and now >= next_trickle:
            next_trickle = now + 1.0
            for sock in list(held):
                try:
                    sock.send(b"a")
                except BlockingIOError:
                    pass
                except OSError:
                    close(sock)
        for sock in list(pipelined):  # as many more requests as the server takes
            try:
                sock.send(HEAD)
            except BlockingIOError:
                pass
            except OSError:  # reset at the server's write deadline: reopened
                pipelined.remove(sock)
                held.discard(sock)
                sock.close()
                reopen.append(time.monotonic() + 0.1)
        if not announced and (connected >= count or now - started > 30):
            print("open", flush=True)
            announced = True
    """
)


def _hello(context: ssl.SSLContext | None) -> str:
    """A real ClientHello of ``context`` (hex), the first flight its handshake sends."""
    if context is None:
        return ""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with contextlib.suppress(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read().hex()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _certificate(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "server.crt", folder / "server.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
        + [
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ]
        + ["-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    return cert, key


def _scrape(port: int, context: ssl.SSLContext | None, host: str = "127.0.0.1") -> bool:
    try:
        if context is None:
            conn = http.client.HTTPConnection(host, port, timeout=SCRAPE_TIMEOUT)
        else:
            conn = http.client.HTTPSConnection(host, port, timeout=SCRAPE_TIMEOUT, context=context)
        try:
            conn.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
            resp = conn.getresponse()
            return resp.status == 200 and len(resp.read()) > 0
        finally:
            conn.close()
    except (OSError, http.client.HTTPException):
        return False


def _scrapes(
    port: int, context: ssl.SSLContext | None, seconds: float, host: str
) -> tuple[int, int]:
    """Scrapes every SCRAPE_EVERY s, each on its own thread: (answered 200, asked)."""
    results: list[bool] = []
    threads = []
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        thread = threading.Thread(target=lambda: results.append(_scrape(port, context, host)))
        thread.start()
        threads.append(thread)
        time.sleep(SCRAPE_EVERY)
    for thread in threads:
        thread.join(SCRAPE_TIMEOUT + 5)
    return sum(results), len(threads)


def _half_close(port: int) -> int:
    """GET /metrics, then the write side shut (``nc -N``): how many of HALF_CLOSES get a 200."""
    answered = 0
    for _ in range(HALF_CLOSES):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=SCRAPE_TIMEOUT) as sock:
                sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                sock.shutdown(socket.SHUT_WR)
                answered += sock.recv(12) == b"HTTP/1.1 200"
        except OSError:
            pass
    return answered


def _rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 1e6


def _flood(
    host: str,
    port: int,
    kind: str,
    count: int,
    context: ssl.SSLContext | None,
    seconds: float,
    pid: int,
):
    attacker = subprocess.Popen(
        [sys.executable, "-c", ATTACKER, host, str(port), kind, str(count), _hello(context)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    before, peak, sampling = _rss_mb(pid), [0.0], threading.Event()

    def sample() -> None:
        while not sampling.wait(0.2):
            peak[0] = max(peak[0], _rss_mb(pid))

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        assert attacker.stdout is not None
        opening = time.monotonic()
        ready = attacker.stdout.readline() == b"open\n"
        opened_in = time.monotonic() - opening
        ok, asked = _scrapes(port, context, seconds, host)
    finally:
        sampling.set()
        sampler.join()
        attacker.kill()
        attacker.wait(10)
    return {
        "ok": ok,
        "asked": asked,
        "ready": ready,
        "open_s": opened_in,
        "rss_before_mb": round(before, 1),
        "rss_peak_mb": round(max(peak[0], before), 1),
    }


@contextlib.contextmanager
def _namespace() -> Iterator[tuple[tuple[str, ...], str]]:
    """A network namespace joined to this one by a veth pair of MTU 1500: the command that runs
    a program in it and the address of its end (the other end is .1 of the same /30)."""
    tag = secrets.token_hex(3)
    name, outside, inside = f"npumon-flood-{tag}", f"nmf{tag}o", f"nmf{tag}i"
    net = f"10.{200 + secrets.randbelow(50)}.{secrets.randbelow(256)}"
    steps = [
        ["ip", "netns", "add", name],
        ["ip", "link", "add", outside, "mtu", "1500", "type", "veth", "peer", "name", inside],
        ["ip", "link", "set", inside, "netns", name],
        ["ip", "addr", "add", f"{net}.1/30", "dev", outside],
        ["ip", "link", "set", outside, "up"],
        ["ip", "-n", name, "addr", "add", f"{net}.2/30", "dev", inside],
        ["ip", "-n", name, "link", "set", inside, "mtu", "1500", "up"],
    ]
    try:
        for step in steps:
            subprocess.run(step, check=True, capture_output=True)
        yield ("ip", "netns", "exec", name), f"{net}.2"
    finally:  # deleting the namespace deletes its end of the pair, and so the pair
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
        subprocess.run(["ip", "link", "del", outside], capture_output=True)


def _start_servers(
    folder: Path, tls: bool, host: str = "127.0.0.1", prefix: tuple[str, ...] = ()
) -> tuple[list[subprocess.Popen[bytes]], dict[str, int]]:
    web = folder / "web-config.yml"
    if tls:
        cert, key = folder / "server.crt", folder / "server.key"
        web.write_text(f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n")
    else:
        web.write_text("{}\n")
    (folder / "npumon").mkdir(exist_ok=True)
    config = _config(folder / "npumon", SCENARIO, "10s")
    config.write_text(config.read_text() + f"web:\n  config_file: {web}\n")
    daemon, port = _start(config, None, host, prefix)
    node_port = _free_port()  # free here; in a new namespace every port is
    node = subprocess.Popen(
        [
            *prefix,
            NODE_EXPORTER,
            f"--web.listen-address={host}:{node_port}",
            f"--web.config.file={web}",
            "--collector.disable-defaults",
            "--collector.loadavg",
            "--collector.meminfo",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    if not tls:
        _wait_for_chips(port, 8, 60, host)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, node_port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.2)
    return [daemon, node], {"npumon": port, "node_exporter": node_port}


def idle_cpu_percent(seconds: float) -> float:
    """npumon's HTTP edge alone (readpath_bench's IDLE_EDGE), never asked: its share of a core
    over ``seconds`` once it listens."""
    edge = _idle_edge()
    try:
        process = psutil.Process(edge.pid)
        before, started = process.cpu_times(), time.monotonic()
        time.sleep(seconds)  # at rest: wall time is the measurement
        after, ended = process.cpu_times(), time.monotonic()
    finally:
        edge.terminate()
        edge.wait(10)
    used = round(after.user + after.system - before.user - before.system, 2)  # 10 ms ticks
    return 100 * max(used, 0.0) / (ended - started)


def run(seconds: float, floods: list[str]) -> dict[str, Any]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    results: dict[str, Any] = {"seconds": seconds, "floods": {}}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cert, _ = _certificate(folder)
        for tls, netns in ((False, False), (True, False), (False, True)):
            kinds = [k for k in floods if (k in TLS_FLOODS) == tls and (k in NETNS_FLOODS) == netns]
            if not kinds:
                continue
            context = ssl.create_default_context(cafile=str(cert)) if tls else None
            with contextlib.ExitStack() as stack:
                prefix, host = stack.enter_context(_namespace()) if netns else ((), "127.0.0.1")
                processes, ports = _start_servers(folder, tls, host, prefix)
                try:
                    _floods(results, kinds, processes, ports, context, seconds, host)
                finally:
                    for process in processes:
                        process.terminate()
                    for process in processes:
                        process.wait(10)
    return results


def _floods(
    results: dict[str, Any],
    kinds: list[str],
    processes: list[subprocess.Popen[bytes]],
    ports: dict[str, int],
    context: ssl.SSLContext | None,
    seconds: float,
    host: str,
) -> None:
    if context is None and host == "127.0.0.1":
        for name, port in ports.items():
            answered = _half_close(port)
            results.setdefault("half_close", {})[name] = answered
            print(f"  half_close: {name} answered {answered}/{HALF_CLOSES}", flush=True)
    for kind in kinds:
        for name, port in ports.items():
            assert _scrape(port, context, host), f"{name} does not answer before {kind}"
            pid = processes[list(ports).index(name)].pid
            figure = _flood(host, port, kind, FLOODS[kind], context, seconds, pid)
            figure["connections"] = FLOODS[kind]
            results["floods"].setdefault(kind, {})[name] = figure
            _print_one(kind, name, figure)
            time.sleep(2)  # the flood's connections closed before the next


def _print_one(kind: str, name: str, f: dict[str, Any]) -> None:
    share = f["ok"] / f["asked"] if f["asked"] else float("nan")
    opened = f"all tried in {f['open_s']:.1f} s" if f["ready"] else "not all tried"
    print(
        f"  {kind} ({f['connections']:,} connections, {opened}): {name} answered "
        f"{f['ok']}/{f['asked']} scrapes ({100 * share:.0f} %), RSS {f['rss_before_mb']} -> "
        f"{f['rss_peak_mb']} MB",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--floods", default=",".join(FLOODS))
    parser.add_argument("--idle-seconds", type=float, default=60.0, help="0: not measured")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    # `timeout` sends SIGTERM: leave through the finally blocks that stop the servers
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(1))
    if not shutil.which(NODE_EXPORTER):
        raise SystemExit(f"{NODE_EXPORTER} is missing: `make tools` installs it")
    idle = idle_cpu_percent(args.idle_seconds) if args.idle_seconds > 0 else None
    if idle is not None:
        print(f"== npumon's HTTP edge alone, never asked, {args.idle_seconds:g} s: {idle:.3f} %")
    print(f"== floods, {args.seconds:g} s of scrapes each, npumon and node_exporter in turn")
    results = run(args.seconds, args.floods.split(","))
    results["idle_edge_cpu_percent"], results["idle_seconds"] = idle, args.idle_seconds
    print("| flood | connections | npumon | node_exporter |")
    print("|---|---|---|---|")
    for kind, by in results["floods"].items():
        cells = [
            f"{by[n]['ok']}/{by[n]['asked']}, "
            f"RSS {by[n]['rss_before_mb']} -> {by[n]['rss_peak_mb']} MB"
            for n in ("npumon", "node_exporter")
            if n in by
        ]
        print(f"| {kind} | {FLOODS[kind]:,} | " + " | ".join(cells) + " |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
