"""The capture's inflation, measured from the job's own training log.

Megatron-LM and MindSpeed print one line per ``--log-interval`` iterations with the mean time of
the iterations since the previous line (``elapsed time per iteration (ms): 812.4``). In a pod
that line reaches the kubelet's CRI log file, each line prefixed with the time the runtime read
it (``<RFC3339Nano> stdout F <message>``). After a capture, the tail of the workload's container
log is read and each iteration line is placed by its span, from the previous line's time to its
own: inside the capture window (captured) or wholly outside it, after the workload's previous
capture (uncaptured). The ratio of the two medians is the capture's inflation; with fewer than
MIN_LINES on either side there is no figure.

Formats (tests/fixtures/steplog/SOURCES.md): Megatron-LM megatron/training/training.py
``training_log``; MindSpeed-LLM mindspeed_llm/training/training.py and its fsdp2 trainer; the
kubelet's pkg/kubelet/kuberuntime/logs/logs.go ``parseCRILog`` and helpers.go
``BuildContainerLogsDirectory`` (``<root>/<namespace>_<pod>_<uid>/<container>/<restarts>.log``).
"""

from __future__ import annotations

import errno
import logging
import math
import os
import re
import stat
import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from npumon.daemon import nofollow
from npumon.daemon.model.chips import InfoTable
from npumon.daemon.model.reading import ChipReading

log = logging.getLogger(__name__)

MIN_LINES = 5  # iteration lines each side needs for its median
MAX_FILES = 16  # container logs read per capture (one per pod and container of the workload)

# the outcome of one read, the values of npumon_step_log_reads_total's result
READ_RESULTS = (
    "ok",  # a figure
    "no_pod",  # the workload's processes are in no pod npumon knows
    "no_log",  # no container log file under the root for its pod
    "ambiguous",  # several pod directories match and the pod UID is unknown
    "refused",  # a link, or not a regular file, where a log or its folders should be
    "unreadable",  # the log could not be opened or read
    "no_steps",  # the log's tail holds no iteration line
    "too_few_captured",  # fewer than MIN_LINES iteration lines inside the capture window
    "too_few_uncaptured",  # fewer than MIN_LINES outside it
)

# "iteration  <n>/<total> |" (Megatron-LM, MindSpeed-LLM) or "iteration: <n> |" (fsdp2 trainer)
_ITERATION = re.compile(
    r"\biteration:?\s+(\d+)(?:\s*/\s*\d+)?\s*\|.*?"
    r"\belapsed time per iteration \(ms\):\s*([0-9]+(?:\.[0-9]+)?)\s*\|"
)
_ELAPSED = "elapsed time per iteration (ms)"
_LOG_FILE = re.compile(r"(\d+)\.log")  # <restartCount>.log; rotated <n>.log.<time>[.gz] left out


@dataclass(frozen=True, slots=True)
class LogStep:
    """One iteration line: when the runtime logged it (Unix seconds), the iteration it ends
    and its mean time per iteration in seconds."""

    at: float
    iteration: int
    seconds: float


@dataclass
class Lines:
    """A log tail's iteration lines and what was left out of it, by reason."""

    steps: list[LogStep] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True, slots=True)
class Inflation:
    """A capture's step time against the job's own around it, from its log."""

    result: str  # a value of READ_RESULTS
    captured_lines: int = 0
    uncaptured_lines: int = 0
    captured_seconds: float | None = None  # median mean-iteration time inside the window
    uncaptured_seconds: float | None = None  # and outside it
    skipped: tuple[tuple[str, int], ...] = ()  # lines left out, by reason

    @property
    def ratio(self) -> float | None:
        """Captured over uncaptured median; None unless both sides have MIN_LINES."""
        if self.result != "ok" or not self.captured_seconds or not self.uncaptured_seconds:
            return None
        return self.captured_seconds / self.uncaptured_seconds

    def said(self) -> dict[str, object]:
        """For the capture's JSON."""
        return {
            "result": self.result,
            "ratio": self.ratio,
            "captured_lines": self.captured_lines,
            "uncaptured_lines": self.uncaptured_lines,
            "captured_seconds": self.captured_seconds,
            "uncaptured_seconds": self.uncaptured_seconds,
            "min_lines": MIN_LINES,
            "skipped": dict(self.skipped),
        }


def cri_time(text: str) -> float | None:
    """An RFC3339Nano time (the runtime's, any offset) as Unix seconds, to the microsecond;
    None if it is not one."""
    if not text or text[0] not in "0123456789":
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        return None  # CRI times carry their offset; a bare one is no CRI line
    return when.timestamp()


def parse(data: bytes, whole: bool) -> Lines:
    """The iteration lines of a CRI log tail. ``whole``: ``data`` starts at the file's start;
    otherwise its first line is cut by the read and left out. A partial (``P``) line is a
    message the runtime split; its pieces are joined until the ``F`` line that ends it."""
    out = Lines()
    lines = data.split(b"\n")
    if lines and lines[-1]:
        out.skipped["unterminated"] += 1  # being written as we read
    lines = lines[:-1]
    if not whole and lines:
        lines = lines[1:]
        out.skipped["cut"] += 1
    pending: dict[str, list[str]] = {}  # stream: pieces of a split message
    for raw in lines:
        text = raw.decode("utf-8", errors="replace")
        fields = text.split(" ", 3)
        if len(fields) < 3 or fields[1] not in ("stdout", "stderr"):
            out.skipped["not_cri"] += 1
            continue
        at = cri_time(fields[0])
        tag = fields[2].split(":")[0]
        if at is None or tag not in ("F", "P"):
            out.skipped["not_cri"] += 1
            continue
        message = fields[3] if len(fields) == 4 else ""
        if tag == "P":
            pending.setdefault(fields[1], []).append(message)
            continue
        message = "".join(pending.pop(fields[1], [])) + message
        found = _ITERATION.search(message)
        if found is None:
            if _ELAPSED in message:
                out.skipped["bad_value"] += 1  # nan, inf, or a line cut by the job
            continue  # otherwise the job's other output
        seconds = float(found[2]) / 1000.0
        if not math.isfinite(seconds) or seconds <= 0:
            out.skipped["bad_value"] += 1
            continue
        out.steps.append(LogStep(at, int(found[1]), seconds))
    out.skipped["partial"] += sum(len(p) for p in pending.values())  # never finished
    out.skipped = +out.skipped  # only the reasons that occurred
    return out


def compare(
    files: Iterable[Lines], start: float, end: float, since: float | None = None
) -> Inflation:
    """Place each iteration line by its span (the previous line's time to its own, both of the
    same file and run): captured when it lies within [start, end], uncaptured when it ends by
    ``start`` or begins at ``end`` or later, and begins after ``since`` (the workload's
    previous capture). Lines that straddle an edge are left out."""
    captured: list[float] = []
    uncaptured: list[float] = []
    skipped: Counter[str] = Counter()
    any_steps = False
    for lines in files:
        skipped.update(lines.skipped)
        previous: LogStep | None = None
        for step in lines.steps:
            any_steps = True
            if previous is None or step.iteration <= previous.iteration or step.at < previous.at:
                skipped["no_previous" if previous is None else "restart"] += 1
                previous = step  # a new run: its first line has no span
                continue
            began = previous.at
            previous = step
            if began >= start and step.at <= end:
                captured.append(step.seconds)
            elif step.at <= start or began >= end:
                if since is not None and began < since:
                    skipped["previous_capture"] += 1
                else:
                    uncaptured.append(step.seconds)
            else:
                skipped["edge"] += 1
    counts = tuple(sorted(skipped.items()))
    if not any_steps:
        return Inflation("no_steps", skipped=counts)
    if len(captured) < MIN_LINES:
        result = "too_few_captured"
    elif len(uncaptured) < MIN_LINES:
        result = "too_few_uncaptured"
    else:
        result = "ok"
    return Inflation(
        result,
        len(captured),
        len(uncaptured),
        statistics.median(captured) if captured else None,
        statistics.median(uncaptured) if uncaptured else None,
        counts,
    )


class Refused(OSError):
    """A link or a file that is not regular where a container log should be."""


def read_tail(root: Path, path: Path, tail_bytes: int) -> tuple[bytes, bool]:
    """At most the last ``tail_bytes`` of ``path`` (below ``root``), no link followed; and
    whether they start at the file's start."""
    try:
        fd = nofollow.open_below(root, path, nofollow.FILE_FLAGS)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):  # a link, or a link as a folder
            raise Refused(error.errno, "a link in the log's path", str(path)) from error
        raise
    with open(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Refused(0, "not a regular file", str(path))
        offset = max(0, info.st_size - tail_bytes)
        f.seek(offset)
        return f.read(tail_bytes), offset == 0


def container_logs(
    root: Path, namespace: str, pod: str, uid: str | None, container: str | None
) -> list[Path]:
    """The current log file (the highest ``<restarts>.log``) of the pod's container, or of each
    of its containers when the container is unknown. ValueError when several pod directories
    match and ``uid`` is unknown (a pod deleted and made again under the same name)."""
    prefix = f"{namespace}_{pod}_"
    if uid is not None:
        pods = [root / f"{prefix}{uid}"]
    else:
        try:
            pods = [p for p in root.iterdir() if p.name.startswith(prefix)]
        except OSError:
            return []
        if len(pods) > 1:
            raise ValueError(f"{len(pods)} pod log directories for {namespace}/{pod}")
    found = []
    for pod_dir in pods:
        try:
            containers = (
                [pod_dir / container] if container is not None else sorted(pod_dir.iterdir())
            )
        except OSError:
            continue
        for directory in containers:
            try:
                numbered = [
                    (int(m[1]), e.name)
                    for e in os.scandir(directory)
                    if (m := _LOG_FILE.fullmatch(e.name))
                ]
            except OSError:
                continue
            if numbered:
                found.append(directory / max(numbered)[1])
    return sorted(found)[:MAX_FILES]


def measure(
    root: Path,
    pods: Iterable[tuple[str, str, str | None, str | None]],
    tail_bytes: int,
    start: float,
    end: float,
    since: float | None,
) -> Inflation:
    """The inflation of the capture over [start, end] from the logs of ``pods`` ((namespace,
    pod, uid, container) of the workload's processes)."""
    pods = sorted(set(pods), key=str)
    if not pods:
        return Inflation("no_pod")
    paths: set[Path] = set()
    try:
        for namespace, pod, uid, container in pods:
            paths.update(container_logs(root, namespace, pod, uid, container))
    except ValueError as error:
        log.info("event=step_log_ambiguous message=%r", str(error))
        return Inflation("ambiguous")
    if not paths:
        return Inflation("no_log")
    files = []
    for path in sorted(paths)[:MAX_FILES]:
        try:
            data, whole = read_tail(root, path, tail_bytes)
        except Refused as error:
            log.warning("event=step_log_refused path=%s error=%r", path, str(error))
            return Inflation("refused")
        except OSError as error:
            log.info("event=step_log_unreadable path=%s error=%r", path, str(error))
            return Inflation("unreadable")
        files.append(parse(data, whole))
    return compare(files, start, end, since)


def pods_of(
    pids: Iterable[int], chips: Iterable[ChipReading], table: InfoTable | None
) -> list[tuple[str, str, str | None, str | None]]:
    """(namespace, pod, uid, container) of each of ``pids`` that runs on a chip in a pod: the
    pod and container from the chip's attribution, the UID from the process's cgroup."""
    wanted = set(pids)
    uids = {p.pid: p.pod_uid for p in table.processes} if table is not None else {}
    found = set()
    for chip in chips:
        for process in chip.processes:
            owner = process.owner
            if process.pid in wanted and owner.namespace and owner.pod:
                found.add((owner.namespace, owner.pod, uids.get(process.pid), owner.container))
    return sorted(found, key=str)
