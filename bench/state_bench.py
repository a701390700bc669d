"""What a valid profiling state file costs the daemon to load: printed, never asserted.

Writes a state file that validates (the 0.1.0 fixture's workload copied under new names, each
with a long list of medians) of about ``--mb`` MB, then loads it with ``ProfileState.load`` (the
default settings: 16 workloads, a baseline window of 20) in a fresh Python process and prints
that process's RSS before the load, its peak (VmHWM) and its RSS after, and whether the file was
loaded or refused (moved aside) for its size.

Usage: python bench/state_bench.py [--mb 60] [--mb 6]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "tests/fixtures/state/profiling-state-v0.1.0.json"
MEDIANS = 20_000  # per workload: valid (the file's list is trimmed to the window after the load)

LOAD = """
import sys
from pathlib import Path
from npumon.daemon.profiling.state import ProfileState
def kb(key):
    line = next(l for l in open("/proc/self/status") if l.startswith(key + ":"))
    return int(line.split()[1]) // 1024
before = kb("VmRSS")
state = ProfileState(Path(sys.argv[1]), window=20, max_workloads=16)  # the defaults
state.load()
print(before, kb("VmHWM"), kb("VmRSS"), len(state.workloads), dict(state.errors))
"""


def write_state(path: Path, megabytes: float) -> int:
    """A valid state file of about ``megabytes`` MB; its size in bytes."""
    data = json.loads(FIXTURE.read_text())
    template = next(iter(data["workloads"].values()))
    template.pop("p99s", None)
    template["medians"] = [0.41 + i * 1e-9 for i in range(MEDIANS)]
    one = len(json.dumps(template))
    count = max(1, int(megabytes * 1e6 / one))
    data["workloads"] = {f"w{i}": template for i in range(count)}
    path.write_text(json.dumps(data))
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, action="append", help="file size, MB (repeatable)")
    args = parser.parse_args()
    for megabytes in args.mb or [60.0, 6.0, 1.0]:
        with tempfile.TemporaryDirectory() as folder:
            size = write_state(Path(folder) / "profiling-state.json", megabytes)
            out = subprocess.run(
                [sys.executable, "-c", LOAD, folder], capture_output=True, text=True, check=True
            ).stdout.split(maxsplit=4)
            before, peak, after, workloads, errors = out
            print(
                f"state file {size / 1e6:.1f} MB: RSS {before} MB before the load, peak {peak} MB,"
                f" {after} MB after; {workloads} workloads kept, errors {errors.strip()}"
            )


if __name__ == "__main__":
    main()
