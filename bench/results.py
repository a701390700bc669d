"""Assemble bench/RESULTS.md from the JSON figures the bench scripts wrote (`make bench`).

    python bench/results.py OUT_DIR [--output bench/RESULTS.md]

OUT_DIR holds daemon.json, load_1.json, load_100.json, readpath.json, flood.json, fuzz.json,
network_render.json, analysis.json, advisor.json, simulator.json, series.json, image.json,
collect.json, calls.json (where bench/calls_bench.py exists), machine_before.json and wall.txt.
A figure whose script wrote nothing reads "not measured" and counts as a miss.

    python bench/results.py OUT_DIR --section series   (or --section edge, --section image)

rewrites only that section of an existing RESULTS.md (after running just its script).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
from pathlib import Path
from typing import Any

NA = "not measured"


def _load(folder: Path, name: str) -> Any:
    path = folder / f"{name}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def machine(folder: Path) -> str:
    cpu = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kib = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal")
    )
    before = _load(folder, "machine_before") or {}
    after = (_load(folder, "machine_after") or {}).get("load_average") or os.getloadavg()
    wall = (folder / "wall.txt").read_text().strip() if (folder / "wall.txt").exists() else "?"
    return (
        f"{cpu}, {os.cpu_count()} cores, {mem_kib / 2**20:.1f} GiB RAM, "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}; "
        f"load average (1/5/15 min) before "
        f"{'/'.join(f'{x:.2f}' for x in before.get('load_average', [])) or '?'}, after "
        f"{'/'.join(f'{x:.2f}' for x in after)}; `make bench` took {wall}. The machine is "
        "shared with other work: latencies and wall times carry its load, CPU seconds "
        "much less."
    )


class Table:
    def __init__(self, title: str) -> None:
        self.title, self.rows, self.misses = title, [], []

    def row(
        self,
        figure: str,
        measured: str,
        budget: str = "-",
        met: bool | None = None,
        miss: str | None = None,
    ) -> None:
        verdict = "-" if met is None else ("yes" if met else "**no**")
        self.rows.append(f"| {figure} | {measured} | {budget} | {verdict} |")
        if met is False:
            self.misses.append((figure, miss or "No cause recorded."))

    def render(self) -> list[str]:
        return [
            f"## {self.title}",
            "",
            "| figure | measured | budget | met? |",
            "|---|---|---|---|",
            *self.rows,
            "",
        ]


def _ms(value: float | None) -> str:
    return NA if value is None else f"{value:.2f} ms"


def polling(folder: Path, misses: list[tuple[str, str]]) -> list[str]:
    daemon, calls = _load(folder, "daemon") or {}, _load(folder, "calls")
    nodes = daemon.get("nodes", {})
    seconds = next((n["seconds"] for n in nodes.values()), 0)
    hccn = ", simulated hccn_tool on" if daemon.get("hccn_tool_source") else ""
    t = Table(f"1. Polling (defaults, profiling on{hccn}, {seconds:.0f} s per node)")
    for chips in ("8", "16"):
        n = nodes.get(chips)
        if n is None:
            t.row(f"daemon CPU, {chips} chips", NA, "< 1 % of a core", False)
            continue
        cpu = n["own_cpu_percent"]
        t.row(
            f"daemon CPU (excl. children), {chips} chips, scraped every 15 s",
            f"{cpu:.2f} % of a core",
            "< 1 % of a core",
            cpu < 1.0,
            f"The daemon itself used {cpu:.2f} % of a core at {chips} chips. Its work per "
            "table interval is parsing npu-smi's (and hccn_tool's) text and rebuilding the "
            "snapshot in Python, plus one render of the exposition per scrape (OpenMetrics, "
            "gzip, as Prometheus asks), just before it is due; three daemons and their "
            "simulated npu-smi shared the 2 cores during the "
            "run, so the figure carries some contention. Profiled at 16 chips (py-spy --gil, "
            "one daemon, scraped every 15 s, 90 s: 1.17 % of a core in all, 0.65 % running "
            "Python): a third of the Python time is prometheus_client's OpenMetrics encoder "
            "(~35 ms per render of 3,180 samples, one render per scrape; it validates and "
            "escapes every label of every sample), the rest polling (~380 npu-smi and "
            "hccn_tool commands a minute, their parsing, the snapshot). Fix: a faster "
            "encoder for families whose names are checked at import, or fewer commands.",
        )
        t.row(
            f"children CPU (npu-smi, msprof simulators), {chips} chips",
            f"{n['children_cpu_percent']:.2f} % of a core",
            "reported apart (the real npu-smi's own cost)",
        )
        t.row(
            f"daemon RSS, {chips} chips",
            f"{n['rss_mb']:.1f} MB",
            "< 60 MB",
            n["rss_mb"] < 60,
            f"RSS {n['rss_mb']:.1f} MB at {chips} chips: the interpreter, pydantic, h11 "
            "and the exporters' modules. Fix: lazy imports of what only the worker needs.",
        )
        t.row(
            f"pandas loaded in the daemon, {chips} chips",
            "yes" if n["pandas_loaded"] else "no",
            "no",
            not n["pandas_loaded"],
            "pandas is mapped into the daemon: some import path reaches it outside the "
            "analysis worker. Fix: find it with -X importtime and make it lazy.",
        )
    if calls is None:
        t.row(
            "npu-smi / hccn_tool calls per minute",
            NA + " (bench/calls_bench.py absent: the network source had not landed on main)",
            "-",
        )
    else:
        for label, c in calls.items():
            t.row(f"npu-smi calls per minute, {label}", f"{c['npu_smi']:.1f}")
            t.row(f"hccn_tool calls per minute, {label}", f"{c['hccn_tool']:.1f}")
    for label, d in (_load(folder, "dcmi") or {}).items():  # bench/dcmi_bench.py
        # label: "<chips>, backend cli|dcmi"
        if label.endswith("dcmi"):
            t.row(
                f"npu-smi calls per minute between the hourly checks, {label}",
                f"{d['npu_smi_calls_per_minute']:.1f}",
                "0",
                d["npu_smi_calls_per_minute"] == 0,
                "A query DCMI answers still runs npu-smi. Fix: see by_query in dcmi.json.",
            )
            t.row(
                f"npu-smi calls in the first minute (cross-check, identity, links' check), {label}",
                f"{d['npu_smi_calls_first_minute']:.0f}",
            )
        else:
            t.row(f"npu-smi calls per minute, {label}", f"{d['npu_smi_calls_per_minute']:.1f}")
        t.row(
            f"daemon CPU without its children (in-process npu-smi stand-in), {label}",
            f"{d['daemon_cpu_percent']:.3f} % of a core",
        )
        if not label.endswith("dcmi"):
            continue
        t.row(
            f"DCMI helper CPU (fake libdcmi), {label}",
            f"{d['helper_cpu_percent']:.3f} % of a core",
            "< 0.2 % of a core",
            d["helper_cpu_percent"] < 0.2,
            "The helper spends more than its share per request. Fix: profile dcmi/child/helper.py.",
        )
    collect = _load(folder, "collect")  # bench/collect_bench.py
    if collect is not None:
        t.row(
            f"`npumon collect --once`, scenario {collect['scenario']} (16 chips, simulated "
            f"npu-smi and hccn_tool), median of {collect['runs']}",
            f"{collect['wall_s']:.1f} s wall; its steps' own times sum to "
            f"{collect['steps_sum_s']:.1f} s (npu-smi and hccn_tool side by side; load "
            f"average {collect['load_average']:.1f} at its end)",
        )
    misses += t.misses
    return t.render()


def scrapes(folder: Path, misses: list[tuple[str, str]]) -> list[str]:
    daemon = _load(folder, "daemon") or {}
    one, hundred = _load(folder, "load_1"), _load(folder, "load_100")
    t = Table("2. Scrapes")
    load = (_load(folder, "machine_before") or {}).get("load_average", [float("nan")])[0]
    hang_p99 = (one or {}).get("scenarios", {}).get("npu_smi_hang", {}).get("p99_ms")
    children = daemon.get("nodes", {}).get("16", {}).get("children_cpu_percent")
    note = (
        "The first scrape of each new snapshot renders it (daemon/rendercache.py; a "
        "collector's text is kept while the snapshot parts it reads are unchanged), later "
        "scrapes of the same snapshot reuse the bytes. The tail is those renders plus the "
        "machine: 2 cores shared with the simulators "
        "(npu-smi is a Python process per call; with msprof they took "
        + (f"{children:.1f} % of a core at 16 chips" if children is not None else "see section 1")
        + "), in the polling run the other daemons, and other work (load average "
        f"{load:.1f} at the start). The same client against a hung npu-smi (no new snapshots) "
        "stays at p99 " + (f"{hang_p99:.2f} ms" if hang_p99 is not None else "(not measured)") + "."
    )
    for chips, n in sorted(daemon.get("nodes", {}).items(), key=lambda kv: int(kv[0])):
        t.row(
            f"1 client, {chips} chips: size",
            f"{n['bytes']:,} bytes, {n['samples']:,} samples "
            f"({n['process_series']} process, {n['network_series']} network, "
            f"{n['profiling_series']} profiling)",
        )
        label = f"1 client, {chips} chips, plain: p50 / p99"
        t.row(
            label, f"{_ms(n['p50_ms'])} / {_ms(n['p99_ms'])}", "p99 < 5 ms", n["p99_ms"] < 5, note
        )
    hung = daemon.get("hung_16")
    if hung:
        label = "1 client, 16 chips, npu-smi hanging (in-process): p50 / p99"
        t.row(
            label,
            f"{_ms(hung['p50_ms'])} / {_ms(hung['p99_ms'])}",
            "p99 < 5 ms",
            hung["p99_ms"] < 5,
            note,
        )
    names = {
        "plain": "plain",
        "tls_auth": "TLS + basic auth",
        "npu_smi_hang": "npu-smi hanging",
        "default_40": "default --web.max-requests 40",
    }
    for data, clients in ((one, 1), (hundred, 100)):
        if data is None:
            t.row(f"{clients} client(s), 16 chips", NA, "-", False)
            continue
        for name, r in data["scenarios"].items():
            _load_rows(t, data, clients, name, names.get(name, name), r, load, note)
    misses += t.misses
    return t.render()


def _load_rows(
    t: Table,
    data: dict[str, Any],
    clients: int,
    name: str,
    title: str,
    r: dict[str, float],
    load: float,
    note: str,
) -> None:
    who = "1 client" if clients == 1 else f"{clients} clients"
    label = f"{who}, each every {1000 * data['interval_s']:.0f} ms, 16 chips, {title}"
    settled = r.get("rss_settled_mb", r["rss_after_mb"])
    growth = settled - r["rss_before_mb"]
    extra = (
        f" ({r['ok']:.0f} ok, {r['busy_503']:.0f} 503, {r['errors']:.0f} errors; RSS "
        f"{r['rss_before_mb']:.0f} -> {r['rss_after_mb']:.0f} MB at the end, "
        f"{settled:.0f} MB 5 s later)"
    )
    if clients == 1:
        budget, ok = "p99 < 5 ms, no errors", r["p99_ms"] < 5 and r["errors"] == 0
        why = note
        if name == "tls_auth":
            why += (
                " Under TLS + auth a new connection also pays a handshake and the first "
                "check of a credential one bcrypt (cost 10); checks are cached after that."
            )
    elif name == "default_40":  # beyond the limit a 503: no latency target for it
        budget = "no errors or timeouts"
        ok = r["errors"] == 0
        why = (
            f"{r['busy_503']:.0f} scrapes beyond --web.max-requests 40 got a 503, "
            f"{r['errors']:.0f} errors or timeouts."
        )
    elif name == "tls_auth":  # the latency target is for plain HTTP
        budget = "no errors, RSS growth < 20 MB (p99 < 50 ms is plain HTTP's)"
        ok = r["errors"] == 0 and growth < 20
    else:
        budget = "p99 < 50 ms, no errors, RSS growth < 20 MB"
        ok = r["p99_ms"] < 50 and r["errors"] == 0 and growth < 20
    if clients == 100 and name != "default_40":
        asked = data["scrapers"] / data["interval_s"]
        got = r["ok"] / data["seconds"]
        why = (
            f"{data['scrapers']} clients asking {asked:.0f} scrapes a second got {got:.0f} a "
            "second on 2 cores shared with the load generator (Python asyncio), the "
            "simulated npu-smi and other "
            f"work (load average {load:.1f} at the start); RSS grew {growth:.1f} MB (5 s "
            "after the load). The edge parses HTTP with h11 (pure Python)."
        )
    t.row(f"{label}: p50 / p99", f"{_ms(r['p50_ms'])} / {_ms(r['p99_ms'])}{extra}", budget, ok, why)


def readpath(folder: Path, misses: list[tuple[str, str]]) -> list[str]:
    """bench/readpath_bench.py: a real Prometheus against npumon and node_exporter."""
    r = _load(folder, "readpath")
    t = Table("2b. Read path (a real Prometheus, 16-chip simulated nodes, one daemon per interval)")
    if r is None:
        t.row("scrape_duration_seconds p99, 16 chips", NA, "< 10 ms and below node_exporter", False)
        misses += t.misses
        return t.render()
    contention = (
        "Prometheus' own figure, which includes parsing the body and appending every sample "
        "to its TSDB, on 2 cores shared with both daemons' simulated npu-smi and hccn_tool (a "
        "Python process per call) and other work; a scrape after a poll renders the families "
        "of the snapshot parts it changed (the network ones after hccn_tool)."
    )
    for interval in (5, 15):
        ours = r["p99_ms"].get(f"npumon_{interval}s")
        theirs = r["p99_ms"].get(f"node_exporter_{interval}s")
        fixed = r["p99_ms"].get(f"fixed_{interval}s")
        if ours is None:
            t.row(f"scrape p99 every {interval} s", NA, "< 10 ms", False)
            continue
        below = theirs is None or ours < theirs
        floor = (
            ""
            if fixed is None
            else f" The same body served as fixed bytes by a server that renders nothing had "
            f"p99 {fixed:.2f} ms from the same Prometheus (p50 "
            f"{_ms(r['p50_ms'].get(f'fixed_{interval}s'))}, npumon's p50 "
            f"{_ms(r['p50_ms'].get(f'npumon_{interval}s'))}): the floor for "
            f"{r.get('samples', {}).get(f'npumon_{interval}s', 0):.0f} samples on this machine."
        )
        job = f"npumon_{interval}s"
        if job in r.get("first_ms", {}):
            floor += (
                f" npumon's first scrape took {r['first_ms'][job]:.2f} ms (it added "
                f"{r['first_series_added'][job]:.0f} series to the TSDB); the p99 of its other "
                f"scrapes was {_ms(r['after_first_p99_ms'].get(job))}."
            )
        t.row(
            f"scrape_duration_seconds p99, every {interval} s: npumon / node_exporter",
            f"{_ms(ours)} / {_ms(theirs)}",
            "< 10 ms and below node_exporter",
            ours < 10 and below,
            f"npumon's p99 every {interval} s was {ours:.2f} ms, node_exporter's "
            f"{_ms(theirs)}. {contention}{floor}",
        )
        if fixed is not None:
            t.row(
                f"scrape_duration_seconds p99, every {interval} s: npumon's body as fixed bytes",
                _ms(fixed),
                "-",
                None,
            )
        jobs = (f"npumon_{interval}s", f"node_exporter_{interval}s", f"fixed_{interval}s")
        if all(job in r.get("first_ms", {}) for job in jobs):
            t.row(
                f"every {interval} s, the first scrape (series it adds): npumon / node_exporter"
                " / fixed bytes",
                " / ".join(
                    f"{_ms(r['first_ms'][j])} ({r['first_series_added'][j]:.0f})" for j in jobs
                ),
                "-",
                None,
            )
            t.row(
                f"every {interval} s, p99 of the other scrapes: npumon / node_exporter / fixed"
                " bytes",
                " / ".join(_ms(r["after_first_p99_ms"].get(j)) for j in jobs),
                "-",
                None,
            )
    lines = _load(folder, "network_render")
    for form in ("text", "openmetrics") if lines else ():
        f = lines[form]
        t.row(
            f"network + optical + interconnect render, {lines['scenario']} ({f['samples']}"
            f" samples), {form} (in-process, best of {lines['runs']})",
            _ms(f["rows"]),
            "-",
            None,
        )
    cpu = r["cpu_percent"]["npumon_15s"]
    share = 100 * r["render_seconds"].get("npumon_15s", 0.0) / r["seconds"]
    idle = r["cpu_percent"].get("idle_edge")
    serving = (
        ""
        if idle is None
        else f" npumon's HTTP edge alone, never asked, took {idle:.2f} % in the same window "
        "(its loop sleeps until a connection comes)."
    )
    t.row(
        "daemon CPU, 16 chips, scraped every 15 s (OpenMetrics, gzip; children apart)",
        f"{cpu:.2f} % of a core, rendering at most {share:.3f} %",
        "< 0.7 % of a core",
        cpu < 0.7,
        f"{cpu:.2f} % of a core, of which the renders took at most {share:.3f} %.{serving} "
        "The rest is polling: starting npu-smi and hccn_tool (a process per call with the "
        "cli backend the simulator runs; section 1 counts them), reading and parsing their "
        "output, the snapshot.",
    )
    if idle is not None:
        t.row(
            "npumon's HTTP edge alone, never asked (at rest)",
            f"{idle:.2f} % of a core",
            "-",
            None,
        )
    for job, rss in sorted(r["rss_mb"].items()):
        t.row(f"daemon RSS, 16 chips, {job}", f"{rss:.1f} MB", "< 60 MB", rss < 60)
    kept, new = r["kept_alive_ms"], r["new_connection_ms"]
    first = statistics.median(new)
    t.row(
        "ten requests on one kept-alive connection vs a first request on a new one",
        f"max {max(kept):.2f} ms vs median {first:.2f} ms",
        "each < 2x",
        max(kept) < 2 * first,
        f"The slowest of ten kept-alive requests took {max(kept):.2f} ms, a first request on "
        f"a new connection {first:.2f} ms: " + " ".join(f"{x:.2f}" for x in kept) + " ms.",
    )
    misses += t.misses
    return t.render()


def series(folder: Path, misses: list[tuple[str, str]]) -> list[str]:
    """bench/series_bench.py: samples per scrape of every simulator scenario."""
    data = _load(folder, "series")
    t = Table(SERIES_TITLE)
    if not data:
        t.row("samples per scrape, every scenario", NA, "700 (8 chips), 1,200 (16)", False)
        misses += t.misses
        return t.render()
    for name, r in sorted(data.items()):
        limit = r.get("budget")
        detail = r.get("detail")
        more = "" if detail is None else f"; {detail:,} with every detail collector"
        t.row(
            f"`{name}` ({r['chips']} chip{'' if r['chips'] == 1 else 's'}), default collectors",
            f"{r['default']:,}{more}",
            "-" if limit is None else f"<= {limit:,}",
            None if limit is None else r["default"] <= limit,
            f"`{name}` exports {r['default']:,} samples per scrape by default, over its "
            f"{limit} budget: a family added to a default collector (exporters/network.py "
            "DETAIL tables hold the per-link ones).",
        )
    misses += t.misses
    rendered = t.render()
    note = (
        "One `npumon collect --once` 30 s into each scenario, kubelet (npumon-sim-kubelet) and "
        "profiling on, with the two workloads of tests/fixtures/state; the detail collectors "
        "are `network_detail`, `optical_detail`, `interconnect_detail` "
        "(tests/fleet/test_series_count.py checks the budget)."
    )
    return [*rendered[:2], note, "", *rendered[2:]]


SERIES_TITLE = "2c. Samples per scrape (every simulator scenario)"
IMAGE_TITLE = "2e. Image variants: the Python layer each installs"


def image(folder: Path, misses: list[tuple[str, str]]) -> list[str]:
    """bench/image_bench.py: the size of each lock file's install (the images are not built)."""
    data = _load(folder, "image") or {}
    lines = [f"## {IMAGE_TITLE}", ""]
    lines += [
        "Each lock file installed into an empty folder as the Dockerfile's runtime stage does "
        "(`pip install --require-hashes --no-deps -r <lock>`, then npumon's wheel), for this "
        "machine's platform, and measured with `du -sb`: the layer each variant adds to the "
        "`python:3.11-slim-bookworm` base. The images themselves were not built (no Docker "
        "daemon); `make image` prints their sizes where there is one.",
        "",
        "| variant | lock | installed | largest packages |",
        "|---|---|---|---|",
    ]
    for variant in ("default", "profiling"):
        r = data.get(variant)
        if not r:
            lines.append(f"| {variant} | - | {NA} | - |")
            misses.append((f"image layer, {variant}", "bench/image_bench.py wrote nothing"))
            continue
        largest = ", ".join(f"{n} {b / 1e6:.1f} MB" for n, b in r["largest"].items())
        lines.append(f"| {variant} | `{r['lock']}` | {r['bytes'] / 1e6:.1f} MB | {largest} |")
    return [*lines, ""]


EDGE_TITLE = "2d. The HTTP edge at rest and under floods (npumon and node_exporter in one run)"
FLOOD_NAMES = {
    "held": "connections that send nothing",
    "trickled_body": "GET / declaring a 100 kB body, sent a byte a second",
    "trickled_metrics_body": "POST /metrics declaring a 100 kB body, sent a byte a second",
    "stuffed": "63 kB of headers, never finished",
    "slow_tls": "a ClientHello never finished (TLS on)",
    "stalled_tls": "a whole ClientHello, then nothing (TLS on)",
    "pipelining": "GET /metrics pipelined as fast as taken, never read",
    "http10_unread": "one HTTP/1.0 GET /metrics, never read",
    "http10_unread_netns": "one HTTP/1.0 GET /metrics, never read, across a veth of MTU 1500",
}


def edge(folder: Path, misses: list[tuple[str, str]]) -> list[str]:
    data = _load(folder, "flood")
    t = Table(EDGE_TITLE)
    idle = None if data is None else data.get("idle_edge_cpu_percent")
    t.row(
        "npumon's HTTP edge alone, never asked"
        + ("" if data is None else f" ({data['idle_seconds']:g} s)"),
        NA if idle is None else f"{max(0.0, idle):.3f} % of a core",  # never "-0.000"
        "< 0.05 % of a core",
        idle is not None and idle < 0.05,
        "The edge costs CPU at rest: something in exporters/web/http.py runs without a connection "
        "(a timer or a polling thread).",
    )
    for kind, by in ({} if data is None else data["floods"]).items():
        ours, theirs = by.get("npumon"), by.get("node_exporter")
        if ours is None or theirs is None:
            continue
        share = {n: f["ok"] / f["asked"] if f["asked"] else 0.0 for n, f in by.items()}
        t.row(
            f"{kind}: {ours['connections']:,} x {FLOOD_NAMES.get(kind, kind)}; scrapes answered "
            "200, npumon / node_exporter",
            f"{ours['ok']}/{ours['asked']} ({100 * share['npumon']:.0f} %) / "
            f"{theirs['ok']}/{theirs['asked']} ({100 * share['node_exporter']:.0f} %)",
            "npumon >= node_exporter",
            share["npumon"] >= share["node_exporter"],
            f"Under the {kind} flood npumon answered {100 * share['npumon']:.0f} % of the "
            f"scrapes, node_exporter {100 * share['node_exporter']:.0f} %.",
        )
        if "rss_peak_mb" in ours:
            # docs/privileges.md: a connection holds at most ~330 KiB while answering; TLS ones,
            # at most a quarter of the cap, ~320 KiB each
            held, per_kib = (256, 360) if kind.endswith("_tls") else (1024, 330)
            t.row(
                f"{kind}: RSS before -> peak, npumon / node_exporter",
                f"{ours['rss_before_mb']} -> {ours['rss_peak_mb']} MB / "
                f"{theirs['rss_before_mb']} -> {theirs['rss_peak_mb']} MB",
                f"npumon's peak < {held:,} x {per_kib} KiB + its idle RSS",
                ours["rss_peak_mb"] < ours["rss_before_mb"] + held * per_kib * 1024 / 1e6,
                f"Under the {kind} flood npumon's RSS went past docs/privileges.md's bound."
                + (
                    " A TLS transport holds ~320 KiB (asyncio's 256 KiB read buffer and "
                    "OpenSSL's state) and at most 256 are open; the rest is glibc keeping the "
                    "buffers of the connections shed and reopened (a buffer over the mmap "
                    "threshold goes to the heap once the threshold has risen). In one process "
                    "with 1,000 stalled ClientHellos: 43 -> 166 MB, 134 MB with "
                    "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072 (docs/privileges.md)."
                    if kind.endswith("_tls")
                    else ""
                ),
            )
    half = {} if data is None else data.get("half_close", {})
    if "npumon" in half and "node_exporter" in half:
        t.row(
            "half_close: GET /metrics then the write side shut; answered, npumon / node_exporter",
            f"{half['npumon']}/20 / {half['node_exporter']}/20",
            "npumon >= node_exporter",
            half["npumon"] >= half["node_exporter"],
            "Clients that half-close after their request go unanswered.",
        )
    fuzz = _load(folder, "fuzz")
    if fuzz is not None:
        t.row(
            f"the edge's fuzz (tests/exporters/test_edge_fuzz.py): 2 properties x "
            f"{fuzz['examples_per_property']:,} examples",
            f"{'no finding' if fuzz['passed'] else 'a finding'} ({fuzz['seconds']:g} s)",
            "no finding",
            fuzz["passed"],
            "bench/fuzz_edge_bench.py found a crash, a smuggled response or a leaked connection.",
        )
    misses += t.misses
    rendered = t.render()
    note = (
        "bench/flood_bench.py: per flood, each server in turn, an attacker process holds the "
        "connections (reopening any that is closed) while a scraper asks GET /metrics on a new "
        "connection every 0.5 s with a 10 s timeout. npumon is `npumon run` at its defaults "
        "(1,024 connections, 10 s request deadline); node_exporter is Debian's, collectors "
        "loadavg and meminfo, the same web-config.yml. Go's server reads an unread request "
        "body inside the handler before a response of more than 2 kB, so POST /metrics "
        "tricklers hold node_exporter's 40 in-flight slots; npumon answers and closes."
    )
    return [*rendered[:2], note, "", *rendered[2:]]


def replace_section(text: str, title: str, lines: list[str]) -> str:
    """``text`` with the section headed ``## title`` replaced by ``lines`` (put where main()
    puts it, before section 3, when it has none)."""
    head = f"## {title}"
    out = text.split("\n")
    if head in out:
        start = out.index(head)
        end = next((i for i in range(start + 1, len(out)) if out[i].startswith("## ")), len(out))
    else:
        start = end = next((i for i, line in enumerate(out) if line.startswith("## 3. ")), len(out))
    return "\n".join([*out[:start], *lines, *out[end:]])


def analysis(folder: Path, misses: list[tuple[str, str]]) -> list[str]:
    data, advisor = _load(folder, "analysis"), _load(folder, "advisor")
    t = Table("3. Analysis (npumon vs a naive pandas.read_csv + groupby)")
    out = []
    if data is None:
        t.row("analysis", NA, "< 1 s, < 600 MB, >= 3x", False)
    else:
        top = max(c["rows"] for c in data["cases"])
        for c in data["cases"]:
            figure = f"{c['case']}, {c['rows']:,} rows (median of {data['runs']}, alternated)"
            measured = (
                f"npumon {c['npumon_s']:.2f} s / {c['npumon_mb']:.0f} MB; naive "
                f"{c['naive_s']:.2f} s / {c['naive_mb']:.0f} MB; {c['speedup']:.1f}x"
            )
            if c["rows"] == top:
                ok = c["npumon_s"] < 1 and c["npumon_mb"] < 600 and c["speedup"] >= 3
                t.row(
                    figure,
                    measured,
                    "< 1 s, < 600 MB, >= 3x naive",
                    ok,
                    f"{c['case']} at {c['rows']:,} rows: {c['npumon_s']:.2f} s, "
                    f"{c['npumon_mb']:.0f} MB, {c['speedup']:.1f}x the naive baseline "
                    f"({c['detail']}). npumon reads only the columns it uses (usecols, "
                    "pandas' C parser) and splits each large file into byte ranges across "
                    "worker processes; "
                    + (
                        "with 4 ranks that happens once per rank's file, one after another, "
                        "each with a fresh process pool (fork, dispatch, frames pickled back), "
                        "so the fixed cost is paid four times. Fix: read the ranks' files in "
                        "one pool pass (a file or range per worker, all ranks at once). "
                        if "rank" in c["case"]
                        else "on 2 cores shared with other work the C parser's throughput is the "
                        "floor (it still tokenizes every field of the 47-column rows). Fix: a "
                        "multi-threaded, column-pruned reader (pyarrow's CSV reader). "
                    )
                    + "Affected by the machine's load.",
                )
            else:
                t.row(figure, measured)
    out += t.render()
    if advisor is None:
        out += ["msprof-analyze comparison: " + NA, ""]
    else:
        table = advisor["table"]
        out += [
            f"msprof-analyze (`advisor all`) on the same directories: {advisor['runs']} "
            f"alternated run(s), timeout {advisor['timeout_s']:g} s each, wall / peak RSS:",
            "",
            "| " + " | ".join(table[0]) + " |",
            "|" + "---|" * len(table[0]),
            *("| " + " | ".join(r) + " |" for r in table[1:]),
            "",
            "Findings are each tool's kinds (msprof-analyze's advisor rows mapped to npumon's "
            'names in bench/advisor_bench.py); "npumon misses" lists msprof-analyze\'s findings '
            "no npumon finding answers, and says why where one of its findings is not real.",
            "",
        ]
        small = advisor.get("packets", [])
        if len(small) > 1:
            out += [
                "Small packets, the advisor's figure beside npumon's: npumon judges every rank "
                "and leaves out the Total Op Info entries (a step's collective and p2p sums), "
                "which the advisor counts as ops; counted its way, the same rank gives the "
                "advisor's share.",
                "",
                "| " + " | ".join(small[0]) + " |",
                "|" + "---|" * len(small[0]),
                *("| " + " | ".join(r) + " |" for r in small[1:]),
                "",
            ]
    misses += t.misses
    return out


ALIGN_TITLE = "2f. Aligned captures: how many steps apart one job's nodes start"


def align(folder: Path, misses: list[tuple[str, str]]) -> list[str]:
    data = _load(folder, "align")
    if data is None:
        return [f"## {ALIGN_TITLE}", "", "Not measured in this run.", ""]
    lines = [
        f"## {ALIGN_TITLE}",
        "",
        "| clock error (sd) | step time | slots whose nodes all capture the same steps "
        "| largest spread |",
        "|---|---|---|---|",
    ]
    for r in data["rows"]:
        lines.append(
            f"| {r['skew_ms']:g} ms | {r['step_s']:g} s | {100 * r['same']:.1f} % "
            f"| {r['max']} step(s) |"
        )
    return [
        *lines,
        "",
        f"bench/align_bench.py: {data['nodes']} simulated nodes of one synchronous job, "
        f"{data['runs']} slots per row, each node's clock off the true time by a normal error "
        f"of the given sd and its step start by up to {data['jitter_ms']:g} ms; the daemon's "
        "slot (align.py) and trigger file, the simulator's reading of it at each step start. "
        "Nodes disagree only when a step boundary falls within the clocks' error of the slot, "
        "and then by the steps that error spans, out of the capture's 50 (docs/profiling.md, "
        '"Aligned captures", states the assumption).',
        "",
    ]


def duty(folder: Path, misses: list[tuple[str, str]]) -> list[str]:
    daemon = _load(folder, "daemon") or {}
    interval = daemon.get("profiling_interval_s", 600.0)
    t = Table(f"4. Duty cycle (profiling.interval {interval:g} s, the default)")
    t.row(
        "configured: profiling.duration / interval (msprof_attach)",
        f"{daemon.get('profiling_duration_s', 5.0):g} s / {interval:g} s = "
        f"{100 * daemon.get('profiling_duration_s', 5.0) / interval:.2f} %",
    )
    for chips, n in sorted(daemon.get("nodes", {}).items(), key=lambda kv: int(kv[0])):
        if n.get("capture_seconds") is None:
            t.row(
                f"measured, workload of the {chips}-chip daemon",
                "no capture finished within the run",
            )
            continue
        t.row(
            f"measured, workload {n['capture_workload']} ({chips}-chip daemon, simulated msprof)",
            f"{n['capture_seconds']:.2f} s / {interval:g} s = "
            f"{100 * n['capture_seconds'] / interval:.2f} %",
        )
    misses += t.misses
    return [
        *t.render(),
        "The measured share uses npumon_capture_duration_seconds, the wall "
        "time of the workload's last successful capture with the simulated msprof, analysis "
        "included: an upper bound on the time the job itself spends under the profiler, "
        "which is the configured window (profiling.duration) plus msprof's start and stop.",
        "",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "RESULTS.md")
    parser.add_argument(
        "--section",
        choices=["series", "edge", "image", "align"],
        help="rewrite only this section",
    )
    args = parser.parse_args()
    misses: list[tuple[str, str]] = []
    if args.section is not None:
        title, write = {
            "series": (SERIES_TITLE, series),
            "edge": (EDGE_TITLE, edge),
            "image": (IMAGE_TITLE, image),
            "align": (ALIGN_TITLE, align),
        }[args.section]
        lines = write(args.folder, misses)
        args.output.write_text(replace_section(args.output.read_text(), title, lines))
        print(f"wrote section {title!r} of {args.output} ({len(misses)} miss(es))")
        return 0
    body = [
        *polling(args.folder, misses),
        *scrapes(args.folder, misses),
        *readpath(args.folder, misses),
        *series(args.folder, misses),
        *edge(args.folder, misses),
        *image(args.folder, misses),
        *align(args.folder, misses),
        *analysis(args.folder, misses),
        *duty(args.folder, misses),
    ]
    lines = [
        "# npumon: what it costs the node",
        "",
        "Written by `make bench` (bench/results.py) from one run of every bench script on "
        "the simulator, loopback only. Do not edit by hand.",
        "",
        f"**Machine:** {machine(args.folder)}",
        "",
        "For comparison: Huawei's npu-exporter DaemonSet reserves 1 CPU and 1 GiB "
        "(its manifest's requests); dcgm-exporter and npu-exporter both have CPU and memory "
        "bug reports. Those are published figures, not measured here.",
        "",
        *body,
        "## 5. Figures that miss their budget",
        "",
    ]
    if not misses:
        lines += ["None.", ""]
    for figure, text in misses:
        lines += [f"**{figure}.** {text}", ""]
    args.output.write_text("\n".join(lines))
    print(f"wrote {args.output} ({len(misses)} miss(es))")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
