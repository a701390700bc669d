"""`npumon replay BUNDLE`: a node served back from its bundle (daemon/bundle.py).

Every command the daemon runs is answered from the bundle's recorded argv -> output map (a
command it did not record answers exit code 2 and says so on stderr, a recorded timeout times
out, a tool that was not installed is not found), and the kubelet's `List` from its recorded
answer. The daemon runs with the bundle's own config, but with backend cli (the DCMI answers
are not in a bundle), no web config, textfile, profiling or fault-code file of that node.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from npumon.daemon.bundle import FORMAT, HCCN_TOOL, NPU_SMI, TOP
from npumon.daemon.config import Config
from npumon.daemon.parsers.pod_resources import DeviceRow
from npumon.daemon.runner import DEFAULT_MAX_OUTPUT_BYTES, CommandResult
from npumon.daemon.sources.wrapper import SourceFailure

MAX_MEMBER_BYTES = 256 * 1024 * 1024
# the commands the replayed daemon is configured with; the runner knows them by name
COMMANDS = {NPU_SMI: "npumon-replay-npu-smi", HCCN_TOOL: "npumon-replay-hccn-tool"}


class BundleError(Exception):
    """Not a bundle npumon can read; the message says why."""


@dataclass(frozen=True)
class Bundle:
    path: Path
    manifest: dict[str, Any]
    commands: list[dict[str, Any]]
    pods: dict[str, Any] | None
    config: dict[str, Any]
    metrics: str

    def answers(self) -> dict[tuple[str, tuple[str, ...]], dict[str, Any]]:
        """(tool, args) -> the recorded call; the last one when a query was asked twice."""
        return {(c["tool"], tuple(c["args"])): c for c in self.commands}


def read(path: Path) -> Bundle:
    try:
        with tarfile.open(path, "r:gz") as tar:
            members: dict[str, str] = {}
            for member in tar.getmembers():
                if not member.isfile() or not member.name.startswith(f"{TOP}/"):
                    continue
                if member.size > MAX_MEMBER_BYTES:
                    raise BundleError(f"{path}: {member.name} is {member.size} bytes; too large")
                extracted = tar.extractfile(member)
                assert extracted is not None  # a regular file
                members[member.name[len(TOP) + 1 :]] = extracted.read().decode()
    except (OSError, tarfile.TarError, UnicodeDecodeError) as error:
        raise BundleError(f"{path}: not a readable npumon bundle ({error})") from None
    try:
        manifest = json.loads(members["manifest.json"])
        if manifest.get("format") != FORMAT:
            raise BundleError(f"{path}: bundle format {manifest.get('format')!r}, not {FORMAT}")
        pods = (
            json.loads(members["pod-resources.json"]) if "pod-resources.json" in members else None
        )
        return Bundle(
            path,
            manifest,
            json.loads(members["commands.json"]),
            pods,
            json.loads(members["config.json"]),
            members.get("metrics.prom", ""),
        )
    except (KeyError, ValueError) as error:
        raise BundleError(f"{path}: incomplete bundle ({error!r} missing or malformed)") from None


class ReplayRunner:
    """A Runner answering from the bundle's recorded commands."""

    def __init__(self, bundle: Bundle) -> None:
        self._answers = bundle.answers()
        self._tools = {command: tool for tool, command in COMMANDS.items()}

    def __call__(
        self,
        argv: Sequence[str],
        timeout: float,
        *,
        stdin: str | None = None,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    ) -> CommandResult:
        argv = tuple(argv)
        tool = self._tools.get(Path(argv[0]).name, "other")
        found = self._answers.get((tool, argv[1:]) if tool != "other" else (tool, argv))
        if found is None:
            said = f"npumon replay: `{' '.join(argv[1:])}` is not in the bundle\n"
            return CommandResult(argv, "", said, 2, 0.0)
        if found["not_found"]:
            return CommandResult(argv, "", found["stderr"], None, 0.0, not_found=True)
        if found["timed_out"] or found["skipped"] == "deadline":
            return CommandResult(argv, found["stdout"], found["stderr"], None, 0.0, timed_out=True)
        if found["output_too_large"] or found["skipped"] == "max_bytes":
            return CommandResult(argv, "", found["stderr"], None, 0.0, output_too_large=True)
        return CommandResult(argv, found["stdout"], found["stderr"], found["exit_code"], 0.0)


def pod_lister(bundle: Bundle) -> Any:
    def listed(_socket: Path, _timeout: float) -> list[DeviceRow]:
        pods = bundle.pods or {}
        if "error" in pods:
            raise SourceFailure(pods["error"]["reason"], pods["error"]["message"])
        return [
            (
                pod.get("namespace", ""),
                pod.get("name", ""),
                container.get("name", ""),
                devices.get("resource_name", ""),
                tuple(devices.get("device_ids", ())),
            )
            for pod in pods.get("response", {}).get("pod_resources", [])
            for container in pod.get("containers", [])
            for devices in container.get("devices", [])
        ]

    return listed


def replay_config(bundle: Bundle, state_directory: Path) -> Config:
    """The bundle's config, pointed at the bundle instead of the node's tools and files."""
    data = json.loads(json.dumps(bundle.config))
    data["npu_smi"] = {"command": [COMMANDS[NPU_SMI]]}
    data["hccn_tool"]["command"] = [COMMANDS[HCCN_TOOL]]
    data["chips"]["backend"] = "cli"
    data["dcmi"] = {"library": None}
    data["web"]["config_file"] = None
    data["textfile"] = {"path": None}
    data["faults"] = {"code_table": None}
    data["profiling"].update(enabled=False, ingest={"paths": []})
    data["state_directory"] = str(state_directory)
    # the source asks the lister only once its socket path exists: the bundle's own path does
    socket = bundle.path if bundle.pods else state_directory / "no-kubelet.sock"
    data["kubernetes"]["pod_resources_socket"] = str(socket.absolute())
    return Config.model_validate(data)


def agent_options(bundle: Bundle) -> dict[str, Any]:
    """What an Agent needs to ask the bundle rather than the node."""
    return {"runner": ReplayRunner(bundle), "pod_lister": pod_lister(bundle)}


def exposition(path: Path, state_directory: Path) -> bytes:
    """One collect of the replayed node: its /metrics."""
    from npumon.daemon.app import Agent

    bundle = read(path)
    agent = Agent(replay_config(bundle, state_directory), **agent_options(bundle))
    try:
        return agent.collect_once()
    finally:
        agent.chip_backend.close()
