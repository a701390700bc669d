"""Paths and helpers shared by tests (importable as `tests.support`)."""

from __future__ import annotations

import atexit
import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
FAKE_NPU_SMI = ROOT / "tests" / "fakes" / "fake_npu_smi.py"
NODES = FIXTURES / "nodes"


@cache
def _scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="npumon-fake-npu-smi-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


@cache
def _commands_file(node: str, section: str = "commands") -> Path:
    commands = yaml.safe_load((NODES / node / "node.yaml").read_text())[section]
    path = _scratch() / f"{node}.{section}.json"
    path.write_text(json.dumps(commands))
    return path


def fake_npu_smi(node: str, *options: str) -> list[str]:
    """The npu_smi.command argv prefix that replays a fixture node.

    node.yaml is read here, once, and handed over as a JSON file: the fake then runs as
    `python -S` (no site-packages, no yaml), which makes the golden tests' many calls cheap.
    """
    return _fake(node, "commands", options)


def _fake(node: str, section: str, options: tuple[str, ...]) -> list[str]:
    return [
        sys.executable,
        "-S",
        str(FAKE_NPU_SMI),
        "--node",
        str(NODES / node),
        "--commands",
        str(_commands_file(node, section)),
        *options,
    ]


def has_hccn_tool(node: str) -> bool:
    """Does the fixture node replay hccn_tool too (a ``hccn_tool`` section in node.yaml)?"""
    return "hccn_tool" in yaml.safe_load((NODES / node / "node.yaml").read_text())


def fake_hccn_tool(node: str, *options: str) -> list[str]:
    """The hccn_tool.command argv prefix that replays the node's ``hccn_tool`` section."""
    return _fake(node, "hccn_tool", options)


def replay(argv: Sequence[str], timeout: float, **options: Any) -> Any:
    """The fake npu-smi's (or hccn_tool's) answer to ``argv`` from ``fake_npu_smi`` or
    ``fake_hccn_tool`` without options, computed in this process: a Runner for tests about
    parsing, merging and rendering. Any other command (a hccn_tool the node does not have)
    runs as a process. The process boundary (deadlines, process groups, output limits) is
    tested through the real fake and daemon/runner.py elsewhere."""
    from npumon.daemon.runner import CommandResult, run_command
    from tests.fakes.fake_npu_smi import answer, parse

    if str(FAKE_NPU_SMI) not in argv:
        return run_command(argv, timeout, **options)
    at = list(argv).index(str(FAKE_NPU_SMI))
    options, query = parse(list(argv[at + 1 :]))
    assert options.commands is not None, f"not a plain replay: {argv}"
    plain = {"hang_on", "fail_on", "garbage_on", "flood_on", "linger_on"}
    assert all(getattr(options, name) is None for name in plain), f"not a plain replay: {argv}"
    text, code = answer(options.node, _commands(options.commands), " ".join(query))
    return CommandResult(tuple(argv), text, "", code, 0.0)


@cache
def _commands(path: Path) -> dict[str, str]:
    found: dict[str, str] = json.loads(path.read_text())
    return found


FROZEN_TIME = 1_764_410_400.0  # 2025-11-29T10:00:00Z: the clock of fixture-node agents


def fixture_agent(node: str, enabled: tuple[str, ...] = (), runner: Any = replay) -> Any:
    """An Agent on a fixture node's captures (fake npu-smi, and hccn_tool where it has one), with
    a frozen clock, no kubelet and an empty /proc (the fixture's PIDs may be live here);
    ``enabled``: the default-off collectors to switch on (collectors.enabled). The fakes answer
    in this process (``replay``); ``runner=run_command`` runs them as processes."""
    from npumon.daemon.app import Agent
    from npumon.daemon.config import parse_config

    settings: dict[str, object] = {
        "npu_smi": {"command": fake_npu_smi(node)},
        "chips": {"timeout": "20s", "backend": "cli"},
        "kubernetes": {"pod_resources_socket": "/nonexistent/kubelet.sock"},
        "collectors": {"enabled": list(enabled)},
    }
    if has_hccn_tool(node):
        settings["hccn_tool"] = {"command": fake_hccn_tool(node), "timeout": "20s"}
    return Agent(
        parse_config(settings),
        runner=runner,
        clock=lambda: FROZEN_TIME,
        proc_root=NODES / "no-proc",
    )
