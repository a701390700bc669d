"""`npumon bundle`: one node's raw answers in one bounded archive, for a bug report.

The bundle runs one collect as the daemon runs it (the same Agent, sources and queries, through
the configured npu-smi and hccn_tool) with a runner that records every command: argv, exit code,
raw stdout and stderr. It also records the kubelet's pod-resources `List` as JSON, `npu-smi -v`
and the driver, firmware and CANN version files, the effective config and web config with their
secrets removed (daemon/redact.py), the /metrics exposition of that collect and the last lines of
a log file if one is given. `npumon replay` (daemon/replay.py) answers the same queries from it.

Bounds: every command under the runner's deadline (chips.timeout, hccn_tool.timeout) and
the bundle's overall deadline, whichever ends first; the recorded output under a byte cap (a
command that would pass it is cut by the runner's output limit; once it is spent, commands are
not started); a log tail and a version file at most ``TAIL_BYTES`` each. What was cut is said
in the manifest.

The DCMI backend's answers are not recorded one by one: the manifest records which backend
served the chips (npumon_backend_info), and the exposition shows what it answered; a replay
serves npu-smi's answers (backend cli).
"""

from __future__ import annotations

import io
import json
import os
import socket
import tarfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from npumon.daemon import __version__
from npumon.daemon.config import Config
from npumon.daemon.redact import Pseudonyms, scrub, scrub_argv
from npumon.daemon.runner import (
    DEFAULT_MAX_OUTPUT_BYTES,
    CommandResult,
    resolve_command,
    run_command,
)
from npumon.daemon.sources.query import Runner
from npumon.daemon.sources.wrapper import SourceFailure

FORMAT = 1
TOP = "npumon-bundle"  # every member is under this folder
DEFAULT_DEADLINE = 120.0
DEFAULT_MAX_BYTES = 32 * 1024 * 1024
TAIL_BYTES = 256 * 1024
NPU_SMI, HCCN_TOOL = "npu-smi", "hccn_tool"
# where Ascend's installers write their versions (each read if present)
VERSION_FILES = (
    Path("/usr/local/Ascend/driver/version.info"),
    Path("/usr/local/Ascend/firmware/version.info"),
    Path("/usr/local/Ascend/ascend-toolkit/latest/version.cfg"),
    Path("/usr/local/Ascend/ascend-toolkit/latest/compiler/version.info"),
)


@dataclass
class Recorded:
    """One command as the node answered it (``args``: argv after the tool's configured command)."""

    tool: str
    args: list[str]
    argv: list[str]
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    not_found: bool = False
    output_too_large: bool = False
    skipped: str | None = None  # "deadline" or "max_bytes": never started


@dataclass
class Limits:
    deadline: float = DEFAULT_DEADLINE
    max_bytes: int = DEFAULT_MAX_BYTES
    started: float = field(default_factory=time.monotonic)
    used: int = 0
    cut: list[str] = field(default_factory=list)

    def remaining(self) -> float:
        return self.started + self.deadline - time.monotonic()


class RecordingRunner:
    """run_command, each call bounded by the bundle's limits and recorded."""

    def __init__(
        self, tools: dict[str, tuple[str, ...]], limits: Limits, run: Runner = run_command
    ) -> None:
        self.tools = tools
        self._run = run
        self.limits = limits
        self.calls: list[Recorded] = []

    def _tool(self, argv: tuple[str, ...]) -> tuple[str, list[str]]:
        for name, prefix in self.tools.items():
            if argv[: len(prefix)] == prefix:
                return name, list(argv[len(prefix) :])
        return "other", list(argv)

    def __call__(
        self,
        argv: Sequence[str],
        timeout: float,
        *,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    ) -> CommandResult:
        argv = tuple(argv)
        tool, args = self._tool(argv)
        left, room = self.limits.remaining(), self.limits.max_bytes - self.limits.used
        if left <= 0 or room <= 0:
            why = "deadline" if left <= 0 else "max_bytes"
            self.limits.cut.append(f"{' '.join(argv)}: not run ({why})")
            self.calls.append(Recorded(tool, args, list(argv), None, "", "", skipped=why))
            if left <= 0:
                return CommandResult(argv, "", "", None, 0.0, timed_out=True)
            return CommandResult(argv, "", "", None, 0.0, output_too_large=True)
        result = self._run(argv, min(timeout, left), max_output_bytes=min(max_output_bytes, room))
        self.limits.used += len(result.stdout.encode()) + len(result.stderr.encode())
        if result.output_too_large:
            self.limits.cut.append(f"{' '.join(argv)}: output over the cap, dropped")
        self.calls.append(
            Recorded(
                tool,
                args,
                list(argv),
                result.exit_code,
                result.stdout,
                result.stderr,
                timed_out=result.timed_out,
                not_found=result.not_found,
                output_too_large=result.output_too_large,
            )
        )
        return result


def _tail(path: Path, limit: int = TAIL_BYTES) -> str:
    """The last ``limit`` bytes of a file, from a line start; or why it cannot be read."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            data = f.read(limit)
    except OSError as error:
        return f"<unreadable: {error.strerror}>\n"
    if size > limit and b"\n" in data:
        data = data[data.index(b"\n") + 1 :]
    return data.decode("utf-8", errors="replace")


def _web_config(path: Path | None) -> Any:
    if path is None:
        return None
    try:
        with path.open("rb") as f:
            return scrub(yaml.safe_load(f.read(TAIL_BYTES)))
    except (OSError, yaml.YAMLError) as error:
        # the error's own text may quote the file: only its kind is kept
        return {"<unreadable>": type(error).__name__}


def _pod_lister(calls: dict[str, Any], limits: Limits) -> Callable[[Path, float], list[Any]]:
    def listed(sock: Path, timeout: float) -> list[Any]:
        from google.protobuf.json_format import MessageToDict

        from npumon.daemon.sources.kubelet_client import device_rows, list_response

        try:
            answer = list_response(sock, max(0.1, min(timeout, limits.remaining())))
        except SourceFailure as failure:
            calls["error"] = {"reason": failure.reason, "message": str(failure)}
            raise
        calls["response"] = MessageToDict(answer, preserving_proto_field_name=True)
        return device_rows(answer)

    return listed


def take(
    config: Config,
    *,
    redact: bool = True,
    deadline: float = DEFAULT_DEADLINE,
    max_bytes: int = DEFAULT_MAX_BYTES,
    log_file: Path | None = None,
    version_files: Sequence[Path] = VERSION_FILES,
    runner: Runner = run_command,
) -> tuple[bytes, dict[str, Any]]:
    """The bundle's tar.gz bytes and its manifest; ``runner`` starts the commands."""
    from npumon.daemon.app import Agent

    limits = Limits(deadline, max_bytes)
    tools = {
        NPU_SMI: resolve_command(config.npu_smi.command),
        HCCN_TOOL: resolve_command(config.hccn_tool.command),
    }
    runner = RecordingRunner(tools, limits, runner)
    pods: dict[str, Any] = {}
    # the raw answers are what the bundle is for: no capture, no textfile, no state written
    data = config.model_dump(mode="json")
    data["profiling"].update(enabled=False, ingest={"paths": []})
    data["textfile"] = {"path": None}
    agent = Agent(Config.model_validate(data), runner=runner, pod_lister=_pod_lister(pods, limits))
    try:
        metrics = agent.collect_once().decode()
        backend = agent.store.latest().backend
    finally:
        agent.chip_backend.close()
    runner((*tools[NPU_SMI], "-v"), config.chips.timeout)
    versions = {str(p): _tail(p, TAIL_BYTES) for p in version_files if p.exists()}
    texts: dict[str, str] = {"metrics.prom": metrics}
    if log_file is not None:
        texts["log-tail.txt"] = _tail(log_file)
    for name in ("metrics.prom", "log-tail.txt"):
        size = len(texts.get(name, "").encode())
        if limits.used + size > max_bytes:
            texts[name] = ""
            limits.cut.append(f"{name}: over the cap, dropped")
        limits.used += size
    documents: dict[str, Any] = {
        "commands.json": [asdict(c) | {"argv": scrub_argv(c.argv)} for c in runner.calls],
        "config.json": scrub(config.model_dump(mode="json")),
        "web-config.json": _web_config(config.web.config_file),
        "versions.json": versions,
        **({"pod-resources.json": pods} if pods else {}),
    }
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "npumon_version": __version__,
        "taken_at": time.time(),
        "redacted": redact,
        "backend": None if backend is None else repr(backend),
        "limits": {"deadline_seconds": deadline, "max_bytes": max_bytes},
        "cut": limits.cut,
        "commands": len(runner.calls),
        "pod_resources": "error" if "error" in pods else ("response" if pods else "not asked"),
    }
    if redact:
        pseudonyms = _pseudonyms(runner.calls, pods)
        # a fixed order, so the same node gives the same pseudonyms
        documents = {name: pseudonyms.apply_all(documents[name]) for name in sorted(documents)}
        texts = {name: pseudonyms.apply(texts[name]) for name in sorted(texts)}
    texts |= {name: json.dumps(doc, indent=2) for name, doc in documents.items()}
    texts["manifest.json"] = json.dumps(manifest, indent=2)
    return _archive(texts), manifest


def _pseudonyms(calls: list[Recorded], pods: dict[str, Any]) -> Pseudonyms:
    names = [p.get("name", "") for p in pods.get("response", {}).get("pod_resources", [])]
    hosts = {socket.gethostname(), socket.getfqdn()}
    pseudonyms = Pseudonyms(hostnames=hosts - {"localhost", "localhost.localdomain"}, pods=names)
    for call in calls:
        pseudonyms.learn(call.stdout)
    return pseudonyms


def _archive(texts: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name in sorted(texts):
            data = texts[name].encode()
            info = tarfile.TarInfo(f"{TOP}/{name}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def write(path: Path, archive: bytes) -> None:
    """Write the archive beside its final name first, so no half bundle is left."""
    part = path.with_name(path.name + ".part")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(archive)
    os.replace(part, path)
