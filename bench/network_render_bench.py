"""In-process render time of the network, optical and interconnect collectors on one snapshot of
a simulated node (default a3-8x2: 16 dies), both formats: what a scrape after an hccn_tool or
interconnect poll re-renders (issue 19), their family rows written by exporters/spec.py.

    .venv/bin/python bench/network_render_bench.py [--scenario a3-8x2] [--runs 200] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
from pathlib import Path

from npumon.daemon.app import Agent
from npumon.daemon.config import parse_config
from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.collector import COLLECTORS

BIN = Path(sys.executable).parent
MEASURED = ("network", "optical", "interconnect")


def snapshot(scenario: str) -> NodeSnapshot:
    """The snapshot after one poll of every source of the simulated node."""
    settings = {
        "npu_smi": {"command": [str(BIN / "npumon-sim-npu-smi"), "--scenario", scenario]},
        "chips": {"backend": "cli"},
        "hccn_tool": {"command": [str(BIN / "npumon-sim-hccn-tool"), "--scenario", scenario]},
        "kubernetes": {"pod_resources_socket": "/nonexistent/kubelet.sock"},
    }
    agent = Agent(parse_config(settings), proc_root=Path("/nonexistent"))
    agent.collect_once()
    return agent.store.latest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="a3-8x2")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result: dict[str, object] = {"scenario": args.scenario, "runs": args.runs}
    snap = snapshot(args.scenario)
    collectors = [c for c in COLLECTORS if c.name in MEASURED]
    for openmetrics in (False, True):

        def rows(openmetrics: bool = openmetrics) -> list[bytes]:
            return [c.render(snap, openmetrics) for c in collectors]

        body = b"".join(rows())
        samples = sum(1 for line in body.splitlines() if line[:1] != b"#")
        best = min(timeit.repeat(rows, number=1, repeat=args.runs)) * 1e3
        print(
            f"{'openmetrics' if openmetrics else 'text':11}: {samples} samples, {len(body)} bytes:"
            f" {best:.2f} ms (best of {args.runs})"
        )
        result["openmetrics" if openmetrics else "text"] = {"samples": samples, "rows": best}
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
