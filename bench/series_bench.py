"""Samples per scrape of every simulator scenario, with the kubelet and profiling on, in the
default collectors and with every detail collector on (the per-node series budget, issue 29).

Each scenario is one `npumon collect --once` 30 s into it (before its scripted faults): the
simulated npu-smi and hccn_tool (which answers "not supported" on boards without NICs, as the
real tool does), npumon-sim-kubelet serving the scenario's pods, and profiling on with the
workloads a previous run left (tests/fixtures/state: a real 4-rank torch_npu summary and a
small one), so the profile families are counted too.

    .venv/bin/python bench/series_bench.py [--scenario NAME ...] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SCENARIOS = ROOT / "simulator" / "scenarios"
STATE = ROOT / "tests" / "fixtures" / "state" / "profiling-state-v0.1.0.json"
DETAIL = ("network_detail", "optical_detail", "interconnect_detail")
SIM_TIME = "30"  # seconds into each scenario: before its scripted faults


def budget(chips: int) -> int | None:
    """Samples per scrape a node may export by default: 700 up to 8 chips (an 8 x 910B node),
    1,200 up to 16 (an A3 node with 16 dies); None: no budget stated."""
    return 700 if chips <= 8 else 1200 if chips <= 16 else None


def scenarios() -> list[str]:
    return sorted(p.stem for p in SCENARIOS.glob("*.yaml"))


def _kubelet(scenario: str, folder: Path) -> tuple[subprocess.Popen[bytes] | None, Path]:
    """npumon-sim-kubelet on a socket in ``folder`` when the scenario has pods."""
    socket = folder / "kubelet.sock"
    if "kubernetes" not in (yaml.safe_load((SCENARIOS / f"{scenario}.yaml").read_text()) or {}):
        return None, socket
    kubelet = subprocess.Popen(
        [str(BIN / "npumon-sim-kubelet"), "--scenario", scenario, "--socket", str(socket)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "NPUMON_SIM_TIME": SIM_TIME},  # the pods present 30 s in
    )
    return kubelet, socket


def _wait_for_socket(socket: Path, kubelet: subprocess.Popen[bytes]) -> None:
    """Until the fake kubelet listens (it binds before serving) or has exited."""
    deadline = time.monotonic() + 30
    while not socket.exists() and kubelet.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)


@contextlib.contextmanager
def node(scenario: str, enabled: tuple[str, ...] = ()) -> Iterator[dict[str, Any]]:
    """The npumon config of one scenario's node, in a scratch folder (its state directory holds
    the profiling fixture) with npumon-sim-kubelet serving its pods, for as long as it is open."""
    with tempfile.TemporaryDirectory(prefix=f"series-{scenario}-") as tmp:
        folder = Path(tmp)
        (folder / "state" / "profiling").mkdir(parents=True)
        shutil.copy(STATE, folder / "state" / "profiling" / "profiling-state.json")
        kubelet, socket = _kubelet(scenario, folder)
        try:
            if kubelet is not None:
                _wait_for_socket(socket, kubelet)
            yield {
                "npu_smi": {"command": [str(BIN / "npumon-sim-npu-smi"), "--scenario", scenario]},
                "chips": {"backend": "cli", "timeout": "5s"},
                "hccn_tool": {
                    "command": [str(BIN / "npumon-sim-hccn-tool"), "--scenario", scenario]
                },
                "kubernetes": {"pod_resources_socket": str(socket)},
                "profiling": {"enabled": True},
                "collectors": {"enabled": list(enabled)},
                "state_directory": str(folder / "state"),
            }
        finally:
            if kubelet is not None:
                kubelet.terminate()
                try:
                    kubelet.wait(10)
                except subprocess.TimeoutExpired:  # gRPC's shutdown can outlast it when busy
                    kubelet.kill()
                    kubelet.wait()


def counted(exposition: str) -> dict[str, int]:
    """{"samples": per scrape, "chips": the node's chips} of one exposition."""
    lines = [line for line in exposition.splitlines() if line and not line.startswith("#")]
    chips = next(
        (int(float(line.split()[-1])) for line in lines if line.startswith("npumon_chips")), 0
    )
    return {"samples": len(lines), "chips": chips}


def samples_per_scrape(scenario: str, enabled: tuple[str, ...] = ()) -> dict[str, int]:
    """``counted`` of one `npumon collect --once` of the scenario's node."""
    with node(scenario, enabled) as config, tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "npumon.yaml"
        path.write_text(yaml.safe_dump(config))
        done = subprocess.run(
            [str(BIN / "npumon"), "collect", "--once", "--config", str(path)],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "NPUMON_SIM_TIME": SIM_TIME},
        )
    # a source that fails (dcmi-fail) makes the exit status 1; the exposition is still printed
    if "npumon_build_info" not in done.stdout:
        raise RuntimeError(f"{scenario}: collect --once printed nothing: {done.stderr[-2000:]}")
    return counted(done.stdout)


def measure(names: list[str], detail: bool = True) -> dict[str, dict[str, int | None]]:
    """Per scenario: chips, default samples, the budget, and (``detail``) the samples with every
    detail collector on."""

    def one(name: str) -> tuple[str, dict[str, int | None]]:
        default = samples_per_scrape(name)
        chips = default["chips"]
        row: dict[str, int | None] = {
            "chips": chips,
            "default": default["samples"],
            "budget": budget(chips),
        }
        if detail:
            row["detail"] = samples_per_scrape(name, DETAIL)["samples"]
        return name, row

    with ThreadPoolExecutor(max_workers=2) as pool:  # each collect waits on its simulators
        return dict(pool.map(one, names))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", action="append", help="one scenario (default: all)")
    parser.add_argument("--no-detail", action="store_true", help="the default collectors only")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = measure(args.scenario or scenarios(), detail=not args.no_detail)
    for name, r in result.items():
        more = "" if r.get("detail") is None else f", {r['detail']:5} with every detail collector"
        print(
            f"{name:10} {r['chips']:3} chips: {r['default']:5} samples per scrape "
            f"(budget {r['budget']}){more}"
        )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
