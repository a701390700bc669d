"""In-process render time of the network, optical and interconnect collectors on one snapshot of
a simulated node (default a3-8x2: 16 dies), both formats: what a scrape after an hccn_tool or
interconnect poll re-renders (issue 19).

    .venv/bin/python bench/network_render_bench.py [--scenario a3-8x2] [--runs 200] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
from collections.abc import Callable, Iterable
from pathlib import Path

from prometheus_client.core import Metric

from npumon.daemon.app import Agent
from npumon.daemon.config import parse_config
from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters import writer
from npumon.exporters.network import render_interconnect, render_network, render_optical

BIN = Path(sys.executable).parent
Encode = Callable[[Iterable[Metric]], bytes]


def snapshot(scenario: str) -> NodeSnapshot:
    """The snapshot after one poll of every source of the simulated node."""
    settings = {
        "npu_smi": {
            "command": [str(BIN / "npumon-sim-npu-smi"), "--scenario", scenario],
            "backend": "cli",
        },
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
    renderers = (render_network, render_optical, render_interconnect)
    for openmetrics in (False, True):
        encode = writer.openmetrics if openmetrics else writer.text

        def metrics(encode: Encode = encode) -> list[bytes]:  # Metric families, then writer.py
            return [encode([f for f in r(snap) if f.samples]) for r in renderers]

        def lines(openmetrics: bool = openmetrics) -> list[bytes]:  # straight from the model
            return [r.write(snap, openmetrics) for r in renderers]

        body = b"".join(lines())
        assert body == b"".join(metrics()), "the two paths disagree"
        samples = sum(1 for line in body.splitlines() if line[:1] != b"#")
        best = {
            path.__name__: min(timeit.repeat(path, number=1, repeat=args.runs)) * 1e3
            for path in (metrics, lines)
        }
        print(
            f"{'openmetrics' if openmetrics else 'text':11}: {samples} samples, {len(body)} bytes:"
            f" Metric path {best['metrics']:.2f} ms, lines {best['lines']:.2f} ms"
            f" (best of {args.runs})"
        )
        result["openmetrics" if openmetrics else "text"] = {"samples": samples, **best}
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
