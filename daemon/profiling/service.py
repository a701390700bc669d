"""The profiler of one node: which workload is due, one capture at a time, ingest, state."""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from npumon.daemon import nofollow
from npumon.daemon.config import REPORTS, Config
from npumon.daemon.model.capture_info import CaptureInfo
from npumon.daemon.model.chips import ChipId
from npumon.daemon.model.profile import (
    CAPTURE_RESULTS,
    ProfileSummary,
    ProfilingView,
    WorkloadProfile,
)
from npumon.daemon.profiling import capture_msprof, ingest, steplog
from npumon.daemon.profiling.align import GRACE_SECONDS, LEAD_SECONDS, slot_start
from npumon.daemon.profiling.capture import (
    CaptureOutcome,
    Capturer,
    Host,
    export_within_quota,
    private_dir,
)
from npumon.daemon.profiling.captureerror import CaptureError
from npumon.daemon.profiling.diskquota import make_room, prune_reports, tree_bytes
from npumon.daemon.profiling.gate import TOO_SHORT
from npumon.daemon.profiling.identity import LAUNCHER_SOURCES
from npumon.daemon.profiling.launch import analyse
from npumon.daemon.profiling.state import ProfileState
from npumon.daemon.profiling.window import WindowSampler
from npumon.daemon.profiling.workloads import ProcessProbe, Workload, discover
from npumon.daemon.runner import run_command
from npumon.daemon.store import SnapshotStore

log = logging.getLogger(__name__)

ACCEPT_DIR = "accept"  # under state_directory/profiling: `npumon baseline accept`'s requests


def request_accept(state_directory: Path, workload: str) -> Path:
    """Ask the daemon (the state file's one writer) to accept ``workload``'s current pace as its
    baseline: an empty file it takes at its next profiling pass."""
    directory = state_directory / "profiling" / ACCEPT_DIR
    directory.mkdir(parents=True, exist_ok=True)
    request = directory / workload
    request.touch()
    return request


class Profiler:
    """``tick`` (captures) and ``ingest_once`` run on the scheduler's profiling job, never on
    the scrape or npu-smi path; both take the node-wide capture lock."""

    def __init__(
        self,
        config: Config,
        store: SnapshotStore,
        host: Host | None = None,
        probe: ProcessProbe | None = None,
        poll_now: Callable[[], None] | None = None,
    ) -> None:
        """``poll_now`` asks for the counter polls at once (window.COUNTER_SOURCES), so a
        capture's hardware join compares its counters with a poll right after it."""
        self.config = config
        self.settings = config.profiling
        self.store = store
        self.probe = probe or ProcessProbe()
        self.host = _stoppable(host or Host(self.probe.alive, self.probe.all, store.set_capturing))
        self.children = self.host.children
        root = config.state_directory
        self.state = ProfileState(
            root / "profiling",
            self.settings.baseline.captures,
            self.settings.baseline.min_captures,
            self.host.clock,
            self.settings.thresholds,
            self.settings.max_workloads,
            accept_after=self.settings.baseline.accept_regression_after,
        )
        self.captures_dir = root / "captures"
        self.reports_dir = root / REPORTS  # the last analysis per workload, .json and .html
        self.capturer = Capturer(
            self.settings,
            self.captures_dir,
            self.host,
            self.reports_dir,
            self.next_baseline,
            self.attach_seconds,
            self.reference,
            lambda: WindowSampler(
                store.latest,
                poll_now=poll_now,
                # the polls asked for at the stop: an npu-smi and an hccn_tool call at most
                settle=config.chips.timeout + config.hccn_tool.timeout if poll_now else 0.0,
                clock=self.host.clock,
                cancelled=self.children.stopped,
            ),
            config.throttle,
        )
        self.counts: Counter[str] = Counter()
        self._last_attempt: dict[str, float] = {}  # monotonic: a wall-clock step moves none
        # persisted successes are wall times: placed on the monotonic clock once, at start
        self._wall_to_monotonic = self.host.monotonic() - self.host.clock()
        self._last_result: dict[str, str] = {}  # per workload: log a result when it changes
        self._regressed: set[str] = set()
        self._too_short: set[str] = set()  # workloads whose latest capture could not vote
        self._discovered: dict[str, Workload] = {}  # the latest discovery: source, ranks' chips
        self._slot_taken: dict[str, float] = {}  # per aligned workload: the last slot attempted
        self._lock = threading.Lock()  # one capture (or ingest analysis) per node at a time
        self.step_log: dict[str, steplog.Inflation] = {}  # per workload: its last capture's
        self.step_log_reads: Counter[str] = Counter()

    def start(self) -> None:
        """Load what the previous run left, so a restart serves the last results at once."""
        self.state.load()
        self.publish()

    def stop(self, timeout: float = 3.0) -> bool:
        """From any thread: kill the capture's children (msprof prompt and export, analysis
        worker), end its waits, start nothing new, and save the state. True when the capture
        in flight (if any) finished within ``timeout`` and the state was saved."""
        self.children.stop()
        if not self._lock.acquire(timeout=timeout):
            log.warning("event=profiler_stop_timeout seconds=%.1f", timeout)
            return False
        try:
            saved = self.state.save()
        finally:
            self._lock.release()
        log.debug("event=profiler_stopped state_saved=%s", saved)
        return saved

    def workloads(self) -> tuple[Workload, ...]:
        table = self.store.table()
        found = discover(
            table.processes if table else (),
            self.settings.targets,
            self.probe.info,
            self.probe.all,
            discover_unmatched=self.settings.discover,
            max_workloads=self.settings.max_workloads,
            table_chips=[(c.npu, c.chip) for c in table.chips] if table else (),
            pod_of=self._pod_of,
        )
        before = self._named()
        self._discovered = {w.name: w for w in found}
        if self._named() != before:  # a job listed (npu_workload_info) before its first capture
            self.publish()
        return found

    def _named(self) -> set[tuple[str, str, tuple[tuple[int, ChipId], ...]]]:
        return {(w.name, w.source, w.ranks) for w in self._discovered.values()}

    def _pod_of(self, pid: int) -> tuple[str, str] | None:
        """The pod holding a process on a chip (attribution: its cgroup's pod UID), if known."""
        for chip in self.store.latest().chips:
            for process in chip.processes:
                owner = process.owner
                if process.pid == pid and owner.namespace is not None and owner.pod is not None:
                    return owner.namespace, owner.pod
        return None

    def due(self, workloads: tuple[Workload, ...], now: float) -> Workload | None:
        """The most overdue workload at ``now`` (monotonic); before its first attempt in this
        process, its last success (persisted) counts as one. A job named alike on all its nodes
        is due only around its slot (align.py), and then by the same measure, so a node whose
        captures outlast the interval takes its jobs in turn."""
        best: tuple[float, Workload] | None = None
        for w in workloads:
            interval = w.interval_seconds or self.settings.interval
            last = self._last_attempt.get(w.name)
            if last is None:
                saved = self.state.workloads.get(w.name)
                last = (saved.last_success or 0.0 if saved else 0.0) + self._wall_to_monotonic
            late = now - (last + interval)
            if _aligned(w):
                slotted = self._slotted(w, interval, now - self._wall_to_monotonic)
                if slotted is None:
                    continue
                w, late = slotted, max(late, 0.0)
            elif late < 0:
                continue
            if best is None or late > best[0]:
                best = (late, w)
        return best[1] if best else None

    def _slotted(self, w: Workload, interval: float, wall: float) -> Workload | None:
        """A job named the same on all its nodes: due in its slot, from LEAD_SECONDS before it
        to GRACE_SECONDS after, once per slot; the workload with its slot."""
        slot = slot_start(w.name, interval, wall + LEAD_SECONDS)
        saved = self.state.workloads.get(w.name)
        taken = self._slot_taken.get(w.name)
        if taken is None and saved is not None and saved.last_success is not None:
            taken = slot if saved.last_success >= slot else None
        if taken is not None and taken >= slot or wall - slot > GRACE_SECONDS:
            return None
        return replace(w, slot=slot)

    def _write_capture_meta(self, info: CaptureInfo, w: Workload) -> None:
        """reports/<workload>.capture.json: the capture's job, slot and global steps (to
        compare with the job's other nodes), the interval each telemetry source's counters
        cover, and each rank's chip and ports in the window."""
        meta = {
            **dataclasses.asdict(info),
            "hardware": [
                {**dataclasses.asdict(h), "said": h.said()}
                for h in self.capturer.hardware.get(w.name, ())
            ],
            **({"step_log": self.step_log[w.name].said()} if w.name in self.step_log else {}),
        }
        try:
            private_dir(self.reports_dir)
            nofollow.write_in(
                self.reports_dir,
                f"{w.name}.capture.json",
                json.dumps(meta, indent=1, sort_keys=True).encode(),
            )
        except OSError as error:
            log.warning("event=capture_meta_failed workload=%s error=%r", w.name, str(error))

    def tick(self) -> CaptureOutcome | None:
        """Capture the most overdue workload, if any (the scheduler calls this often); then
        the next job whose slot comes within LEAD_SECONDS, so a capture that ran past the
        scheduler's next tick does not make the node miss or start late on a slot."""
        if not self.settings.enabled or self.children.stopped.is_set():
            return None
        outcome = None
        with self._lock:
            self._take_accepts()
            workloads = self.workloads()
            for _ in workloads:  # each at most once a tick
                workload = self.due(workloads, self.host.monotonic())
                if workload is None or self.children.stopped.is_set():
                    break
                if outcome is not None and workload.slot is None:
                    break  # unaligned ones wait for the next tick, as before
                outcome = self.capture(workload)
        return outcome

    def capture(self, workload: Workload) -> CaptureOutcome:
        if workload.slot is not None:  # the job's other nodes start at the slot too
            self._slot_taken[workload.name] = workload.slot
            early = workload.slot - self.host.clock()
            if early > 0:
                self.host.wait(early)
        self._last_attempt[workload.name] = self.host.monotonic()
        outcome = self.capturer.capture(workload)
        info = outcome.report.capture_info if outcome.report is not None else None
        if outcome.result == "ok" and self.settings.step_log.enabled and info is not None:
            self._read_step_log(workload, info.window)
        if info is not None and info.slot is not None:
            log.info(
                "event=capture_aligned workload=%s slot=%.0f first_step=%s last_step=%s",
                workload.name,
                info.slot,
                info.first_step,
                info.last_step,
            )
        if info is not None and (
            workload.ranks or info.slot is not None or workload.name in self.step_log
        ):
            self._write_capture_meta(info, workload)
        self._record(outcome)
        return outcome

    def _read_step_log(self, w: Workload, window: tuple[float, float] | None) -> None:
        """The capture's inflation from the job's own log (steplog.py) over the interval the
        job was profiled, before the capture is recorded: the workload's previous success
        bounds the uncaptured lines."""
        if window is None:
            return
        saved = self.state.workloads.get(w.name)
        settings = self.settings.step_log
        found = steplog.measure(
            settings.root,
            steplog.pods_of(w.pids, self.store.latest().chips, self.store.table()),
            int(settings.tail_bytes),
            *window,
            saved.last_success if saved is not None else None,
        )
        self.step_log[w.name] = found
        self.step_log_reads[found.result] += 1
        log.info(
            "event=step_log workload=%s result=%s ratio=%s captured_lines=%d "
            "uncaptured_lines=%d skipped=%s",
            w.name,
            found.result,
            "-" if found.ratio is None else f"{found.ratio:.4f}",
            found.captured_lines,
            found.uncaptured_lines,
            ",".join(f"{k}:{v}" for k, v in found.skipped) or "-",
        )

    def ingest_once(self) -> list[CaptureOutcome]:
        """Analyse the finished profile dirs under profiling.ingest.paths not analysed yet, of
        at most profiling.max_workloads workloads a pass (the others wait for the next)."""
        paths = self.settings.ingest.paths
        if not paths or self.children.stopped.is_set():
            return []
        outcomes = []
        with self._lock:
            self._take_accepts()
            self.state.prune_ingested(paths)
            groups = ingest.find_new(
                paths,
                self.state.ingested,
                self.host.clock(),
                self.settings.ingest.settle,
                self.state.ingested_before,
            )
            taken: set[str] = set()
            for group in groups:
                if self.children.stopped.is_set():
                    break
                if group.workload not in taken and len(taken) >= self.settings.max_workloads:
                    continue  # not marked ingested: found again next pass
                taken.add(group.workload)
                outcomes.append(self._ingest(group))
        return outcomes

    def _ingest(self, group: ingest.IngestGroup) -> CaptureOutcome:
        started = self.host.monotonic()
        scratch: Path | None = None
        try:
            path, trusted = group.path, group.root
            if any(_needs_export(Path(m)) for m, _ in group.members):
                scratch = self._copy_for_export(group)
                path, trusted = scratch, None  # our own copy
            report = analyse(
                path,
                group.workload,
                self.settings,
                self.host.runner,
                self.reports_dir,
                self.next_baseline(group.workload),
                group.path,  # the job's own directory: never changed, there to open
                confine=trusted,
                reference=self.reference(group.workload),
            )
            outcome = CaptureOutcome(group.workload, "ok", "", report)
        except CaptureError as error:
            outcome = CaptureOutcome(group.workload, error.result, error.message)
        except OSError as error:
            outcome = CaptureOutcome(group.workload, "failed", f"{type(error).__name__}: {error}")
        finally:
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
            prune_reports(self.reports_dir, self.settings.max_workloads)
        # analysed (or found unusable): not again until it changes
        self.state.ingested.update(dict(group.members))
        outcome = CaptureOutcome(
            outcome.workload,
            outcome.result,
            outcome.message,
            outcome.report,
            self.host.monotonic() - started,
            self.host.clock(),
        )
        log.info(
            "event=ingest workload=%s path=%s result=%s report=%s message=%r",
            group.workload,
            group.path,
            outcome.result,
            self.reports_dir / f"{group.workload}.html" if outcome.report else "-",
            outcome.message,
        )
        self._record(outcome)
        return outcome

    def next_baseline(self, workload: str) -> float | None:
        """The baseline the workload's next capture is judged against (its page draws it)."""
        baseline = self.state.next_baseline(workload)
        return None if baseline is None else baseline.median_seconds

    def attach_seconds(self, workload: str) -> float:
        """How long msprof attach profiles the workload next: long enough for the gate's steps
        at the pace its previous capture measured (capture_msprof.attach_duration)."""
        s = self.settings
        state = self.state.workloads.get(workload)
        if state is None:
            return s.duration
        return capture_msprof.attach_duration(
            state.summary.step if state.summary is not None else None,
            state.attach_seconds,
            s.duration,
            s.max_duration,
            s.thresholds,
        )

    def reference(self, workload: str) -> tuple[ProfileSummary | None, str | None]:
        """The workload's reference capture: its summary, and its raw directory while kept."""
        state = self.state.workloads.get(workload)
        if state is None or state.reference is None:
            return None, None
        path = state.reference_path
        return state.reference, path if path is not None and Path(path).is_dir() else None

    def _copy_for_export(self, group: ingest.IngestGroup) -> Path:
        """Export writes into the PROF dir: do it on our copy, never in the user's."""
        scratch = self.captures_dir / f"ingest-{datetime.now(UTC):%Y%m%dT%H%M%S%fZ}"
        private_dir(self.captures_dir)
        scratch.mkdir(0o700)
        for member, _ in group.members:  # no link below the ingest path followed
            root = group.root or Path(member).parent
            nofollow.copy_tree(Path(member), scratch / Path(member).name, root)
        quota = int(self.settings.disk_quota)
        if not make_room(self.captures_dir, 0, quota, keep=scratch):
            raise CaptureError(
                "disk_quota", f"the copy to export, {tree_bytes(scratch)} bytes, is over {quota}"
            )
        export_within_quota(self.settings, self.captures_dir, scratch, self.host)
        return scratch

    def _record(self, outcome: CaptureOutcome) -> None:
        self.counts[outcome.result] += 1
        self._log_change(outcome)
        report = outcome.report
        if outcome.result == "ok" and report is not None:
            self._last_attempt[outcome.workload] = self.host.monotonic()  # captured or ingested
            summary = report.summary
            verdict = self.state.record(
                summary,
                outcome.ended_at,
                outcome.seconds,
                outcome.raw,
                outcome.attach_seconds,
                report.comparison,
            )
            name = summary.workload
            short = verdict.status == TOO_SHORT
            if short and name not in self._too_short:  # said once, until a capture can vote
                log.info(
                    "event=step_capture_too_short workload=%s steps=%d min_steps=%d message=%r",
                    name,
                    verdict.steps,
                    self.settings.thresholds.regression_min_steps,
                    "the regression gate needs more steps: raise profiling.steps "
                    "(torch_npu_config); msprof attach lengthens the next capture to the "
                    "job's pace, up to profiling.max_duration",
                )
            (self._too_short.add if short else self._too_short.discard)(name)
            regressed = verdict.regressed is True
            if regressed and name not in self._regressed and verdict.baseline is not None:
                log.warning(
                    "event=step_regression workload=%s median_seconds=%.6f "
                    "baseline_seconds=%.6f band_ratio=%.4f steps=%d",
                    name,
                    verdict.median_seconds or 0.0,
                    verdict.baseline.median_seconds,
                    verdict.baseline.band_ratio,
                    verdict.steps,
                )
            (self._regressed.add if regressed else self._regressed.discard)(name)
        self.state.save()
        self.publish()

    def _take_accepts(self) -> None:
        """Carry out `npumon baseline accept WORKLOAD` requests; each is taken once."""
        directory = self.state.path.parent / ACCEPT_DIR
        try:
            requests = sorted(p for p in directory.iterdir() if p.is_file())
        except OSError:
            return
        for request in requests:
            known = self.state.accept(request.name)
            request.unlink(missing_ok=True)
            log.warning(
                "event=baseline_accepted workload=%s known=%s", request.name, str(known).lower()
            )
            self._regressed.discard(request.name)
        if requests:
            self.state.save()
            self.publish()

    def _log_change(self, outcome: CaptureOutcome) -> None:
        """One line when a workload's capture result changes, not one per capture."""
        before = self._last_result.get(outcome.workload)
        self._last_result[outcome.workload] = outcome.result
        if outcome.result == before:
            return
        good = outcome.result in ("ok", "skipped_busy")
        if good and before is None:
            return  # the first capture went fine: nothing to tell
        log.log(
            logging.INFO if good else logging.WARNING,
            "event=capture_result_changed workload=%s result=%s before=%s message=%r",
            outcome.workload,
            outcome.result,
            before,
            outcome.message,
        )

    def view(self) -> ProfilingView:
        profiles = []
        for name, s in sorted(self.state.workloads.items()):
            verdict = self.state.verdict(name)
            baseline = verdict.baseline
            found = self._discovered.get(name)
            profiles.append(
                WorkloadProfile(
                    name,
                    s.summary,
                    baseline.median_seconds if baseline else None,
                    s.last_success,
                    s.capture_seconds,
                    band_ratio=baseline.band_ratio if baseline else None,
                    judged=None if verdict.median_seconds is None else verdict.judged,
                    regressed=verdict.regressed,
                    comparison=s.comparison,
                    source=found.source if found else None,
                    rank_npus=tuple((r, c[0]) for r, c in found.ranks) if found else (),
                    hardware=self.capturer.hardware.get(name, ()),
                    capture_inflation_ratio=(
                        self.step_log[name].ratio if name in self.step_log else None
                    ),
                )
            )
        # discovered, not captured yet: named (npu_workload_info, npu_rank_npu_info) so a job
        # is listed from its discovery; within profiling.max_workloads, the captured first
        room = self.settings.max_workloads - len(profiles)
        waiting = sorted(set(self._discovered) - set(self.state.workloads))[: max(room, 0)]
        for name in waiting:
            found = self._discovered[name]
            profiles.append(
                WorkloadProfile(
                    name,
                    source=found.source,
                    rank_npus=tuple((r, c[0]) for r, c in found.ranks),
                )
            )
        return ProfilingView(
            workloads=tuple(sorted(profiles, key=lambda p: p.workload)),
            captures=tuple((r, self.counts[r]) for r in CAPTURE_RESULTS),
            state_errors=tuple(sorted(self.state.errors.items())),
            step_log_reads=(
                tuple((r, self.step_log_reads[r]) for r in steplog.READ_RESULTS)
                if self.settings.step_log.enabled
                else ()
            ),
        )

    def publish(self) -> None:
        self.store.set_profiles(self.view())


def _aligned(w: Workload) -> bool:
    """Named by its launcher or pod: the same name on every node of the job, so aligned."""
    return w.source in LAUNCHER_SOURCES or w.source == "pod"


def _needs_export(path: Path) -> bool:
    return path.name.startswith("PROF_") and capture_msprof.needs_export(path)


def _stoppable(host: Host) -> Host:
    """The real runner and sleep, swapped for ones that stop() reaches (injected ones stay)."""
    if host.runner is run_command:
        host = replace(host, runner=host.children.run)
    if host.wait is time.sleep:
        host = replace(host, wait=host.children.sleep)
    return host
