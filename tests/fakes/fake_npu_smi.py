#!/usr/bin/env python3
"""A test fake of npu-smi (and hccn_tool): replays real captures chosen by argv from a node
folder's node.yaml.

  fake_npu_smi.py --node DIR [--section NAME] [--commands FILE] [--hang-on ARGS --hang-seconds S]
                  [--fail-on ARGS --exit-code N] [--garbage-on ARGS]
                  [--flood-on ARGS --flood-bytes N]
                  [--linger-on ARGS --linger-seconds S --linger-pidfile FILE] info [...]

node.yaml maps an argv (``info -t usages -i {npu}``; ``{npu}``/``{chip}`` match a number) to a
fixture file relative to the node folder; ``--section hccn_tool`` reads the node's ``hccn_tool``
mapping instead (``-i {npu} -link -g``), where the first matching pattern answers. An argv
with no entry gets npu-smi's own "does not support" text and exit code 255. Not the simulator:
no state, no time, no layouts.

``--flood-on``: the fixture, then process rows until ``--flood-bytes`` were written (a driver
that loops). ``--linger-on``: the fixture and exit 0, but a helper started in its own session
(out of the fake's process group, so a group kill misses it) keeps stdout open for
``--linger-seconds``; its pid goes to ``--linger-pidfile`` so the test can end it.

``--commands`` names a JSON file of that mapping, written by the test process (tests/support.py):
then the fake needs only the standard library and runs as ``python -S``, at a third of the
start-up cost; the daemon calls it dozens of times per collection.
"""

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

FLOOD_ROW = (
    "| 1       0                 | 19341         | VLLMWorker_TP            "
    "| 58472                   |\n"
)


def _matches(pattern: str, argv: str) -> bool:
    regex = re.escape(pattern).replace(r"\{npu\}", r"\d+").replace(r"\{chip\}", r"\d+")
    return re.fullmatch(regex, argv) is not None


def _node_commands(node: Path, section: str) -> dict[str, str]:
    import yaml  # only without --commands: yaml is not importable under python -S

    commands: dict[str, str] = yaml.safe_load((node / "node.yaml").read_text())[section]
    return commands


def _flood(total: int) -> None:
    block = FLOOD_ROW * 1000
    written = 0
    while written < total:
        sys.stdout.write(block)
        written += len(block)
    sys.stdout.flush()


def _linger(seconds: float, pidfile: Path | None) -> None:
    helper = subprocess.Popen(
        [sys.executable, "-S", "-c", f"import time; time.sleep({seconds})"], start_new_session=True
    )  # inherits our stdout and stderr
    if pidfile is not None:  # whole when it appears: the test reads it as soon as it exists
        partial = pidfile.with_name(pidfile.name + ".partial")
        partial.write_text(str(helper.pid))
        partial.replace(pidfile)


def answer(node: Path, commands: dict[str, str], argv: str) -> tuple[str, int]:
    """What the fake prints for ``argv`` (the query, joined by spaces), and its exit code."""
    for pattern, fixture in commands.items():
        if _matches(pattern, argv):
            return (node / fixture).read_text(), 0
    return f"This device does not support querying {argv}.\n", 255


def parse(args: list[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    """(the fake's options, the query) of ``args`` (the command line when None)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--node", type=Path, required=True)
    parser.add_argument("--section", default="commands")
    parser.add_argument(
        "--commands", type=Path, default=None, help="a JSON file of node.yaml's commands"
    )
    parser.add_argument("--hang-on", default=None)
    parser.add_argument("--hang-seconds", type=float, default=3600.0)
    parser.add_argument("--fail-on", default=None)
    parser.add_argument("--exit-code", type=int, default=1)
    parser.add_argument("--garbage-on", default=None)
    parser.add_argument("--flood-on", default=None)
    parser.add_argument("--flood-bytes", type=int, default=50_000_000)
    parser.add_argument("--linger-on", default=None)
    parser.add_argument("--linger-seconds", type=float, default=3600.0)
    parser.add_argument("--linger-pidfile", type=Path, default=None)
    return parser.parse_known_args(args)


def main() -> int:
    options, rest = parse()
    argv = " ".join(rest)
    if options.hang_on is not None and _matches(options.hang_on, argv):
        time.sleep(options.hang_seconds)  # what a wedged driver does to npu-smi
    if options.fail_on is not None and _matches(options.fail_on, argv):
        print("dcmi module initialize failed. ret is -8005")
        return options.exit_code
    if options.garbage_on is not None and _matches(options.garbage_on, argv):
        sys.stdout.write("| \x00\x01 garbage || 12 / / NA |\n+==+\n| 0  x |\n")
        return 0
    commands = (
        json.loads(options.commands.read_text())
        if options.commands
        else _node_commands(options.node, options.section)
    )
    text, code = answer(options.node, commands, argv)
    sys.stdout.write(text)
    if code == 0 and options.flood_on is not None and _matches(options.flood_on, argv):
        _flood(options.flood_bytes)
    if code == 0 and options.linger_on is not None and _matches(options.linger_on, argv):
        sys.stdout.flush()
        _linger(options.linger_seconds, options.linger_pidfile)
    return code


if __name__ == "__main__":
    sys.exit(main())
