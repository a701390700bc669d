#!/usr/bin/env python3
"""A test fake of npu-smi: replays real captures chosen by argv from a node folder's node.yaml.

  fake_npu_smi.py --node DIR [--commands FILE] [--hang-on ARGS --hang-seconds S]
                  [--fail-on ARGS --exit-code N] [--garbage-on ARGS] info [...]

node.yaml maps an argv (``info -t usages -i {npu}``; ``{npu}``/``{chip}`` match a number) to a
fixture file relative to the node folder. An argv with no entry gets npu-smi's own
"does not support" text and exit code 255. Not the simulator: no state, no time, no layouts.

``--commands`` names a JSON file of that mapping, written by the test process (tests/support.py):
then the fake needs only the standard library and runs as ``python -S``, at a third of the
start-up cost; the daemon calls it dozens of times per collection.
"""

import argparse
import json
import re
import sys
import time
from pathlib import Path


def _matches(pattern: str, argv: str) -> bool:
    regex = re.escape(pattern).replace(r"\{npu\}", r"\d+").replace(r"\{chip\}", r"\d+")
    return re.fullmatch(regex, argv) is not None


def _node_commands(node: Path) -> dict[str, str]:
    import yaml  # only without --commands: yaml is not importable under python -S

    commands: dict[str, str] = yaml.safe_load((node / "node.yaml").read_text())["commands"]
    return commands


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--node", type=Path, required=True)
    parser.add_argument("--commands", type=Path, default=None,
                        help="a JSON file of node.yaml's commands")
    parser.add_argument("--hang-on", default=None)
    parser.add_argument("--hang-seconds", type=float, default=3600.0)
    parser.add_argument("--fail-on", default=None)
    parser.add_argument("--exit-code", type=int, default=1)
    parser.add_argument("--garbage-on", default=None)
    options, rest = parser.parse_known_args()
    argv = " ".join(rest)
    if options.hang_on is not None and _matches(options.hang_on, argv):
        time.sleep(options.hang_seconds)  # what a wedged driver does to npu-smi
    if options.fail_on is not None and _matches(options.fail_on, argv):
        print("dcmi module initialize failed. ret is -8005")
        return options.exit_code
    if options.garbage_on is not None and _matches(options.garbage_on, argv):
        sys.stdout.write("| \x00\x01 garbage || 12 / / NA |\n+==+\n| 0  x |\n")
        return 0
    commands = (json.loads(options.commands.read_text()) if options.commands
                else _node_commands(options.node))
    for pattern, fixture in commands.items():
        if _matches(pattern, argv):
            sys.stdout.write((options.node / fixture).read_text())
            return 0
    print(f"This device does not support querying {argv}.")
    return 255


if __name__ == "__main__":
    sys.exit(main())
