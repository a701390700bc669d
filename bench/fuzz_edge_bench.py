"""The edge's property-based fuzz (tests/exporters/test_edge_fuzz.py) at length: the same two
properties with ``--examples`` examples each instead of make test's 25. Prints and writes (with
``--json``) the examples run, the outcome and the wall time; a finding fails the run and is
printed with hypothesis' shrunk example, to become a regression test.

Usage: python bench/fuzz_edge_bench.py [--examples 2000] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = "tests/exporters/test_edge_fuzz.py"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    env = {**os.environ, "NPUMON_FUZZ_EXAMPLES": str(args.examples)}
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", TARGET],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.monotonic() - started
    passed = run.returncode == 0
    print(run.stdout[-4000:] if not passed else run.stdout.strip().splitlines()[-1])
    result = {
        "examples_per_property": args.examples,
        "properties": 2,
        "passed": passed,
        "seconds": round(seconds, 1),
    }
    print(
        f"== edge fuzz: 2 properties x {args.examples} examples, "
        f"{'no finding' if passed else 'FINDING'}, {seconds:.0f} s"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
