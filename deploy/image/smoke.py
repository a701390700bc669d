"""Run inside a built npumon image (deploy/image/test.sh mounts it): the image answers.

    python3 /smoke/smoke.py default|profiling

The host's npu-smi is what deploy/image/npu-smi stands for (mounted at /usr/local/bin/npu-smi,
as docs/install.md mounts the real one): the simulator's 910b-8 node, which the wheel carries.
1. `npumon collect --once` with the image's own config prints the chips' families.
2. `npumon run` serves /metrics on the loopback port it bound (port 0; waited for, bounded).
3. profiling: `npumon analyze` runs the analysis worker (pandas) over a simulated profile;
   default: pandas is absent, as the variant promises.
Exit 0 when all hold; each failure printed.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

CONFIG = "/etc/npumon/npumon.yaml"
# families that only a chip read through npu-smi yields, and the exporter's own
FAMILIES = ("npu_chip_info", "npu_temperature_celsius", "npumon_build_info")
SERVE_DEADLINE_S = 120.0
# what `npumon run` logs once it listens (tests/helpers/processes.py reads the same line)
LISTENING = re.compile(r"event=listening address=\S* port=(\d+)")


def check(ok: bool, what: str) -> bool:
    print(f"image-test: {'ok' if ok else 'FAILED'}: {what}", flush=True)
    return ok


def collect_once() -> bool:
    done = subprocess.run(
        ["npumon", "collect", "--once", "--config", CONFIG],
        capture_output=True,
        text=True,
        timeout=SERVE_DEADLINE_S,
    )
    missing = [f for f in FAMILIES if f"\n{f}" not in "\n" + done.stdout]
    if done.returncode or missing:
        sys.stderr.write(done.stderr[-2000:])
    lines = len(done.stdout.splitlines())
    return check(
        done.returncode == 0 and not missing,
        f"npumon collect --once: exit {done.returncode}, {lines} lines, missing {missing}",
    )


def serve() -> bool:
    """`npumon run` on port 0 (the port it logs), until /metrics has the chips' families."""
    with tempfile.TemporaryFile("w+") as log:
        daemon = subprocess.Popen(
            ["npumon", "run", "--config", CONFIG, "--web.listen-address", "127.0.0.1:0"],
            stdout=subprocess.DEVNULL,
            stderr=log,
            text=True,
        )
        url, body = "", ""
        deadline = time.monotonic() + SERVE_DEADLINE_S
        try:
            while daemon.poll() is None and time.monotonic() < deadline:
                log.seek(0)
                port = LISTENING.search(log.read())
                if port is not None:
                    url = f"http://127.0.0.1:{port[1]}/metrics"
                    try:
                        with urllib.request.urlopen(url, timeout=10) as answer:
                            body = answer.read().decode()
                    except OSError:
                        body = ""
                    if "npu_chip_info{" in body:
                        break
                time.sleep(0.5)
        finally:
            daemon.terminate()
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        if "npu_chip_info{" not in body:
            log.seek(0)
            sys.stderr.write(log.read()[-2000:])
    return check(
        "npu_chip_info{" in body,
        f"npumon run: GET {url or '(no port logged)'} -> {len(body.splitlines())} lines,"
        f" exit {daemon.returncode}",
    )


def analyze() -> bool:
    from npumon.simulator import prof_dir

    with tempfile.TemporaryDirectory() as tmp:
        now = time.time()
        meta = prof_dir.CaptureMeta("conversion_bound", 4242, 0, 0.05, now - 1, now, 40, 20, 7)
        prof = prof_dir.write_raw(Path(tmp), meta, 1)
        prof_dir.export(prof, now)
        done = subprocess.run(
            ["npumon", "analyze", str(prof), "--json"],
            capture_output=True,
            text=True,
            timeout=SERVE_DEADLINE_S,
        )
    if done.returncode:
        sys.stderr.write(done.stderr[-2000:])
    return check(
        done.returncode == 0 and '"bottlenecks"' in done.stdout,
        f"npumon analyze (the worker with pandas): exit {done.returncode}",
    )


def main() -> int:
    variant = sys.argv[1]
    results = [collect_once(), serve()]
    has_pandas = importlib.util.find_spec("pandas") is not None
    if variant == "profiling":
        results.append(check(has_pandas, "pandas importable"))
        results.append(analyze())
    else:
        results.append(check(not has_pandas, "pandas absent from the default variant"))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
