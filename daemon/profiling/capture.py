"""One capture of one workload: checks, profiler phase, export, analysis, cleanup."""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from npumon.daemon.config import Profiling, Throttle
from npumon.daemon.model.capture_info import CaptureInfo
from npumon.daemon.model.profile import AnalysisReport, ProfileSummary
from npumon.daemon.model.rank_hardware import RankHardware
from npumon.daemon.model.snapshot import ChipId
from npumon.daemon.profiling import capture_msprof
from npumon.daemon.profiling.busy import other_profiler
from npumon.daemon.profiling.capture_torch import torch_config_capture
from npumon.daemon.profiling.captureerror import CaptureError
from npumon.daemon.profiling.children import Children
from npumon.daemon.profiling.diskquota import make_room, prune_reports, tree_bytes
from npumon.daemon.profiling.launch import analyse
from npumon.daemon.profiling.window import WindowSampler, measure
from npumon.daemon.profiling.workloads import ProcessInfo, Workload
from npumon.daemon.runner import CommandRunner, run_command

log = logging.getLogger(__name__)

EXPORT_WATCH_SECONDS = 0.25  # how often the captures are measured while msprof exports


@dataclass(frozen=True, slots=True)
class CaptureOutcome:
    workload: str
    result: str  # a value of status.CAPTURE_RESULTS
    message: str
    report: AnalysisReport | None = None
    seconds: float = 0.0
    ended_at: float = 0.0
    raw: str | None = None  # the raw capture directory, when kept
    attach_seconds: float | None = None  # msprof attach: seconds between start and stop


@dataclass(frozen=True, slots=True)
class Host:
    """The capture's view of the machine, injectable for tests."""

    alive: Callable[[int], bool]
    processes: Callable[[], Iterable[ProcessInfo]]
    set_capturing: Callable[[frozenset[ChipId]], None]
    runner: CommandRunner = run_command
    wait: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic
    children: Children = field(default_factory=Children)  # what Profiler.stop() kills


def _no_baseline(workload: str) -> float | None:
    return None


def _nothing_known(workload: str) -> None:
    return None


def _no_reference(workload: str) -> tuple[ProfileSummary | None, str | None]:
    return None, None


class Capturer:
    """Runs captures one at a time (the caller holds the node-wide capture lock)."""

    def __init__(
        self,
        settings: Profiling,
        captures_dir: Path,
        host: Host,
        reports_dir: Path | None = None,
        baseline: Callable[[str], float | None] = _no_baseline,
        attach_seconds: Callable[[str], float | None] = _nothing_known,
        reference: Callable[[str], tuple[ProfileSummary | None, str | None]] = _no_reference,
        window: Callable[[], WindowSampler] | None = None,
        throttle: Throttle | None = None,
    ) -> None:
        self.settings = settings
        self.window = window  # a sampler of the node's snapshots while a capture runs
        self.throttle = throttle or Throttle()
        self.hardware: dict[str, tuple[RankHardware, ...]] = {}  # per workload: its last window
        self.captures = captures_dir
        self.reports = reports_dir  # each analysis's <workload>.json and .html
        self.baseline = baseline  # a workload's step-time baseline, drawn on its page
        self.attach_seconds = (
            attach_seconds  # msprof attach's length for a workload (None: duration)
        )
        # a workload's reference capture (summary, raw directory): compared with, kept by keep_raw
        self.reference = reference
        self.host = host
        self._expected_bytes = 0  # size of the previous raw capture: room to make beforehand

    def capture(self, w: Workload) -> CaptureOutcome:
        """The capture error boundary: every outcome is a result label and one log line."""
        started = self.host.monotonic()
        out: Path | None = None
        outcome: CaptureOutcome | None = None
        try:
            self._preflight(w)
            out = self.captures / capture_dir_name(w.name, datetime.now(UTC))
            private_dir(self.captures)  # raw profiles: npumon's user only, whatever is above
            out.mkdir(mode=0o700)
            attach = None
            if w.mode != "torch_npu_config":
                attach = self.attach_seconds(w.name) or self.settings.duration
            report = self._capture_into(w, out, attach or 0.0)
            raw = None if self.settings.keep_raw == "none" else str(out)
            outcome = CaptureOutcome(w.name, "ok", "", report, raw=raw, attach_seconds=attach)
        except CaptureError as error:
            outcome = CaptureOutcome(w.name, error.result, error.message)
        except OSError as error:  # the state directory itself: full, read-only, permissions
            outcome = CaptureOutcome(w.name, "failed", f"{type(error).__name__}: {error}")
        except Exception as error:  # a bug must cost one capture, not the profiling job
            log.exception("event=capture_error workload=%s", w.name)
            outcome = CaptureOutcome(w.name, "failed", f"{type(error).__name__}: {error}")
        finally:
            if out is not None:
                self._keep_or_drop(w.name, out, outcome)
        return _finish(outcome, self.host.monotonic() - started, self.host.clock())

    def _keep_or_drop(self, workload: str, out: Path, outcome: CaptureOutcome | None) -> None:
        """profiling.keep_raw: "none" drops every capture once analysed, "last" keeps an
        analysed one and the workload's reference capture and drops its older ones, "all" keeps
        every capture; over the quota, the capture goes whatever keep_raw says."""
        keep = self.settings.keep_raw
        if self.reports is not None:
            prune_reports(self.reports, self.settings.max_workloads)
        result = "failed" if outcome is None else outcome.result
        if result == "disk_quota" or keep == "none" or (keep == "last" and result != "ok"):
            shutil.rmtree(out, ignore_errors=True)
            return
        if keep == "last":
            reference = self.reference(workload)[1]
            for older in own_captures(self.captures, workload):
                if older != out and str(older) != reference:
                    log.info("event=capture_cleanup path=%s reason=keep_raw_last", older)
                    shutil.rmtree(older, ignore_errors=True)
        page = None if self.reports is None else self.reports / f"{workload}.html"
        log.info(
            "event=capture_kept workload=%s path=%s result=%s report=%s",
            workload,
            out,
            result,
            page if page is not None and page.is_file() else "-",
        )

    def _preflight(self, w: Workload) -> None:
        busy = other_profiler(w.pids, self.host.processes(), own=(os.getpid(),))
        if busy is not None:
            raise CaptureError("skipped_busy", busy)
        if w.mode == "msprof_attach" and w.attachable is False:
            raise CaptureError(
                "skipped_not_attachable",
                f"pid {','.join(map(str, w.pids))} was not started with PROFILING_MODE=dynamic, "
                "so msprof cannot attach; start the job with it, or configure a "
                "torch_npu_config target or profiling.ingest.paths for it",
            )
        quota = int(self.settings.disk_quota)
        if not make_room(self.captures, self._expected_bytes, quota):
            raise CaptureError(
                "disk_quota",
                f"{self.captures} cannot hold another capture of "
                f"~{self._expected_bytes} bytes within {quota}",
            )

    def _capture_into(self, w: Workload, out: Path, attach_seconds: float) -> AnalysisReport:
        s = self.settings
        sampler = self.window() if self.window is not None and w.ranks else None
        if sampler is not None:
            sampler.start()
        started = self.host.clock()
        profiled = None  # msprof: from its acknowledged start to the stop sent
        self.host.set_capturing(w.chips)
        try:
            if w.mode == "torch_npu_config":
                assert w.config_dir is not None  # the config validator requires it
                torch_config_capture(
                    w.config_dir,
                    out,
                    w.pids,
                    steps=s.steps,
                    timeout=s.timeouts.start + s.timeouts.stop,
                    wait=self.host.wait,
                    alive=self.host.alive,
                    monotonic=self.host.monotonic,
                )
            else:
                profiled = capture_msprof.msprof_attach(
                    s.msprof.command,
                    w.pids,
                    out,
                    duration=attach_seconds,
                    start_timeout=s.timeouts.start,
                    stop_timeout=s.timeouts.stop,
                    wait=self.host.wait,
                    alive=self.host.alive,
                    clock=self.host.clock,
                    children=self.host.children,
                )
        finally:
            stopped = self.host.clock()
            self.host.set_capturing(frozenset())
            if sampler is not None:
                self.hardware[w.name] = measure(w.ranks, sampler.stop(), self.throttle)
        info = CaptureInfo(
            w.name,
            w.source,
            w.interval_seconds or s.interval,
            w.slot,
            window=profiled or (started, stopped),
            telemetry=sampler.telemetry() if sampler is not None else {},
        )
        self._check_size(out)
        try:
            export_within_quota(s, self.captures, out, self.host)
        finally:  # the room the next capture makes beforehand: raw data and export
            self._expected_bytes = tree_bytes(out)
        kept = None if s.keep_raw == "none" else out
        return analyse(
            out,
            w.name,
            s,
            self.host.runner,
            self.reports,
            self.baseline(w.name),
            kept,
            self._ranks(w),
            reference=self.reference(w.name),
            hardware=self.hardware.get(w.name, ()) if sampler is not None else (),
            capture_info=info,
        )

    def _ranks(self, w: Workload) -> tuple[tuple[int, int], ...]:
        """(pid, rank) of the workload's processes whose environment names their rank."""
        pids = set(w.pids)
        return tuple(
            sorted(
                (p.pid, p.rank)
                for p in self.host.processes()
                if p.pid in pids and p.rank is not None
            )
        )

    def _check_size(self, out: Path) -> None:
        size = tree_bytes(out)
        self._expected_bytes = size
        if not make_room(self.captures, 0, int(self.settings.disk_quota), keep=out):
            raise CaptureError(
                "disk_quota",
                f"the capture wrote {size} bytes, over the "
                f"quota of {int(self.settings.disk_quota)}",
            )


def export_within_quota(settings: Profiling, captures: Path, out: Path, host: Host) -> None:
    """``msprof --export`` of the PROF dirs in ``out`` (a folder of ``captures``) within the disk
    quota: while it runs the captures are measured every EXPORT_WATCH_SECONDS (older ones deleted
    to make room, as before a capture) and once ``out`` alone is over, the export's process
    group is killed; after it, measured again. CaptureError disk_quota when over: the caller
    drops ``out``. The kill reaches a runner that ``host.children`` tracks (the service's)."""
    quota = int(settings.disk_quota)
    over, done = threading.Event(), threading.Event()

    def watch() -> None:
        while not done.wait(EXPORT_WATCH_SECONDS):
            if not make_room(captures, 0, quota, keep=out):
                over.set()
                host.children.kill_running()
                return

    watcher = threading.Thread(target=watch, name="npumon-export-quota", daemon=True)
    watcher.start()
    try:
        capture_msprof.export_pending(
            settings.msprof.command, out, settings.timeouts.export, host.runner
        )
    except CaptureError:
        if not over.is_set():
            raise
    finally:
        done.set()
        watcher.join()
    if over.is_set() or not make_room(captures, 0, quota, keep=out):
        raise CaptureError(
            "disk_quota",
            f"the export of {out.name} took it to {tree_bytes(out)} bytes, over the quota of "
            f"{quota}{' (stopped while it ran)' if over.is_set() else ''}",
        )


def capture_dir_name(workload: str, when: datetime) -> str:
    return f"{workload}-{when:%Y%m%dT%H%M%S%fZ}"


def own_captures(captures: Path, workload: str) -> list[Path]:
    """The capture directories of ``workload`` (named by capture_dir_name), links left out."""
    name = re.compile(rf"{re.escape(workload)}-\d{{8}}T\d{{12}}Z")
    try:
        entries = list(captures.iterdir())
    except OSError:
        return []
    return [e for e in entries if name.fullmatch(e.name) and e.is_dir() and not e.is_symlink()]


def _finish(outcome: CaptureOutcome, seconds: float, now: float) -> CaptureOutcome:
    # debug: the profiler logs a workload's result when it changes, not every capture
    log.debug(
        "event=capture workload=%s result=%s seconds=%.3f message=%r",
        outcome.workload,
        outcome.result,
        seconds,
        outcome.message,
    )
    return CaptureOutcome(
        outcome.workload,
        outcome.result,
        outcome.message,
        outcome.report,
        seconds,
        now,
        outcome.raw,
        outcome.attach_seconds,
    )


def private_dir(path: Path) -> None:
    """``path`` a directory only its owner can enter (made, or tightened if it exists); a
    symlink is left alone (the disk quota refuses it)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not path.is_symlink() and stat.S_IMODE(path.stat().st_mode) != 0o700:
        path.chmod(0o700)
