"""Wiring: config -> store, sources, scheduler, the collectors' exposition."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from npumon.daemon import __version__
from npumon.daemon.config import Config
from npumon.daemon.containers import ContainerResolver
from npumon.daemon.faults import load_fault_table
from npumon.daemon.model.snapshot import BackendInfo, SourceStatus
from npumon.daemon.profiling.launch import analysis_unavailable
from npumon.daemon.profiling.service import Profiler
from npumon.daemon.runner import run_command
from npumon.daemon.schedule import Clock, Scheduler
from npumon.daemon.sources.chips import ChipSources, Runner
from npumon.daemon.sources.dcmi.serving import ROOT_ONLY, TrustPolicy, open_chips
from npumon.daemon.sources.hccn_tool import HccnSources, HccnTool, nic_chips
from npumon.daemon.sources.kubelet import Lister, PodResourcesSource
from npumon.daemon.sources.npu_smi import NpuSmi
from npumon.daemon.sources.query import ChipBackend
from npumon.daemon.store import SnapshotStore
from npumon.daemon.textfile import write_textfile
from npumon.exporters.collector import NpuCollector

log = logging.getLogger(__name__)
Progress = Callable[[str, float], None]  # a collect step's name and the seconds it took
Job = tuple[Callable[[], object], float, float]  # function, every, first run after start
CAPTURE_TICK_SECONDS = 15.0
PROFILING = "profiling"  # npumon_source_*{source}
# npumon_source_*{source="profiling", reason}: why profiling is off while the config asks for it
BLOCKED, NO_PANDAS = "state_directory", "pandas_missing"


class Agent:
    """One node's agent. `collect_once` for the CLI; `start`/`stop` for the daemon."""

    sources: ChipSources
    hccn: HccnSources
    store: SnapshotStore

    def __init__(
        self,
        config: Config,
        *,
        runner: Runner = run_command,
        clock: Callable[[], float] = time.time,
        previous: Agent | None = None,
        proc_root: Path = Path("/proc"),
        dcmi_trust: TrustPolicy = ROOT_ONLY,
        scheduler_clock: Clock | None = None,
        blocked: str | None = None,
        pod_lister: Lister | None = None,
    ) -> None:
        """``previous``: the agent a reload replaces; its results are served until new ones.
        ``blocked``: why profiling cannot run (the state directory is not writable): it stays
        off, and source "profiling" reads down with that error while the config asks for it.
        ``proc_root``: where the owners of npu-smi's processes are read (tests: a fake one).
        ``dcmi_trust``: who must own libdcmi.so and its directories (tests: a temp dir).
        ``pod_lister``: who answers the kubelet's List (default: gRPC on the socket).
        ``clock`` stamps results (wall time); ``scheduler_clock`` times the polls (monotonic)."""
        self.config = config
        self.store = SnapshotStore(
            config.throttle,
            max_processes_per_chip=config.chips.max_processes_per_chip,
            cann_version=config.node.cann_version,
            fault_level=load_fault_table(config.faults.code_table).level_of,
            clock=clock,
        )
        if previous is not None:
            self.store.adopt(previous.store)
        chip_backend = build_chip_backend(
            config, runner, proc_root, dcmi_trust, self.store.set_backend
        )
        self.chip_backend = chip_backend
        self.sources = ChipSources(
            chip_backend,
            self.store.publish_chips,
            health_interval=config.chips.intervals.health,
            identity_due=self._identity_due,
            clock=clock,
            containers=ContainerResolver(proc_root),
            initial=previous.sources.results() if previous is not None else None,
            busy=previous.sources.busy if previous is not None else None,
        )
        # hccn_tool: RoCE NIC ports of the chips npu-smi lists (off where it is not installed)
        hccn = config.hccn_tool
        self.hccn = HccnSources(
            HccnTool(hccn.command, hccn.timeout, runner),
            self.store.publish_hccn_tool,
            lambda: nic_chips(self.sources.results()),
            clock=clock,
            identity_due=lambda: self._run_now(self.hccn.poll_hccn_tool_identity.__name__),
            busy=previous.hccn.busy if previous is not None else None,
            withdraw=self.store.withdraw_hccn_tool,
        )
        kube = config.kubernetes
        self.pod_resources = PodResourcesSource(
            kube.pod_resources_socket,
            kube.timeout,
            kube.resource_prefixes,
            self.store.publish_pod_resources,
            clock=clock,
            lister=pod_lister,
        )
        self.profiler: Profiler | None = None
        # pandas missing: no capture is taken that the worker could not analyse
        active = config.profiling.active()
        self.no_analysis = analysis_unavailable() if active and blocked is None else None
        if self.no_analysis is not None and (previous is None or not previous.no_analysis):
            log.warning("event=profiling_off reason=%s message=%r", NO_PANDAS, self.no_analysis)
        if active and blocked is None and self.no_analysis is None:
            self.profiler = Profiler(config, self.store, poll_now=self._poll_counters)
            self.profiler.start()  # last summaries and baselines from the state directory
        elif blocked is not None or self.no_analysis is not None:
            reason, why = (
                (BLOCKED, blocked) if blocked is not None else (NO_PANDAS, self.no_analysis)
            )
            off = SourceStatus(PROFILING, False, None, None, None, ((reason, 1),), why)
            self.store.set_status(PROFILING, off if active else None)
        # the profiles collector only when profiling is on: no empty collector otherwise
        disabled = {*config.collectors.disabled, *(() if self.profiler else ("profiles",))}
        enabled = (
            *config.collectors.enabled,
            *(("npu_exporter_compat",) if config.compat.npu_exporter_names else ()),
        )
        self.collector = NpuCollector(
            self.store.latest, __version__, disabled=disabled, enabled=enabled
        )
        self._scheduler_clock = scheduler_clock
        self._scheduler: Scheduler | None = None

    def _identity_due(self) -> None:
        """A new chip: run the identity job now rather than at its next hourly slot."""
        self._run_now(self.sources.poll_identity.__name__)

    def _poll_counters(self) -> None:
        """The polls a capture's hardware join compares its counters after (window.py)."""
        for poll in (self.sources.poll_table, self.sources.poll_detail, self.hccn.poll_hccn_tool):
            self._run_now(poll.__name__)

    def _run_now(self, job_id: str) -> None:
        scheduler = self._scheduler
        if scheduler is not None:
            scheduler.run_now(job_id)

    def collect_once(self, progress: Progress = lambda step, seconds: None) -> bytes:
        """Run every source once (and analyse what is under profiling.ingest.paths), each tool
        beside the others: npu-smi's steps one after another on one thread, hccn_tool's on
        another once npu-smi has told which chips have NICs (the table and the physical IDs of
        its identity step), the kubelet and the profile ingest on a third. ``progress`` hears
        each step's name and seconds as it ends, one call at a time."""
        said = threading.Lock()
        chips_known = threading.Event()

        def run(name: str, step: Callable[[], object]) -> None:
            started = time.monotonic()
            step()
            with said:
                progress(name, time.monotonic() - started)

        def npu_smi() -> None:
            try:
                run("npu_smi_table", self.sources.poll_table)
                run("npu_smi_identity", self.sources.poll_identity)
            finally:
                chips_known.set()  # hccn_tool then asks about the chips known so far
            run("npu_smi_detail", self.sources.poll_detail)
            run("npu_smi_health", self.sources.poll_health)

        def hccn_tool() -> None:
            chips_known.wait()
            run("hccn_tool_identity", self.hccn.poll_hccn_tool_identity)
            run("hccn_tool", self.hccn.poll_hccn_tool)

        def node() -> None:
            run("kubelet_pod_resources", self.pod_resources.poll)
            if self.profiler is not None:
                run("profiling_ingest", self.profiler.ingest_once)

        with ThreadPoolExecutor(3, thread_name_prefix="collect") as pool:
            lanes = [pool.submit(lane) for lane in (npu_smi, hccn_tool, node)]
            for lane in lanes:
                lane.result()  # a step's own exception, raised here
        return self.collector.exposition()

    def write_textfile(self) -> None:
        """The textfile output; a full disk is logged and retried on the next tick."""
        path = self.config.textfile.path
        if path is None:
            return
        try:
            write_textfile(self.collector.exposition(), path)
        except OSError as error:
            log.warning("event=textfile_failed path=%s error=%r", path, str(error))

    def all_sources_up(self) -> bool:
        return all(status.up for status in self.store.latest().sources)

    def schedule(self) -> list[Job]:
        """Every job the daemon runs: (function, interval, first run after start)."""
        intervals = self.config.chips.intervals
        jobs: list[Job] = [
            (self.sources.poll_table, intervals.table, 0.0),
            (self.sources.poll_identity, intervals.identity, 0.5),
            (self.sources.poll_detail, intervals.detail, 1.0),
            # health runs on the table clock; it queries every chip once per health interval
            # and chips the table shows as not OK on every tick.
            (self.sources.poll_health, intervals.table, 1.5),
        ]
        jobs += [  # hccn_tool: one call in flight across both jobs
            (self.hccn.poll_hccn_tool, self.config.hccn_tool.interval, 2.5),
            (self.hccn.poll_hccn_tool_identity, self.config.hccn_tool.identity_interval, 2.0),
        ]
        if self.config.textfile.path is not None:
            jobs.append((self.write_textfile, intervals.table, 2.0))
        # kubelet pod-resources: a stat per run while the socket is absent (grpc not loaded)
        jobs.append((self.pod_resources.poll, self.config.kubernetes.interval, 0.2))
        return [*jobs, *self._profiling_jobs()]

    def start(self) -> None:
        # a thread per job: captures and analyses never run on the npu-smi or scrape path
        scheduler = Scheduler(self._scheduler_clock)
        for func, every, offset in self.schedule():
            scheduler.add(func, every, offset)
        scheduler.start()
        self._scheduler = scheduler
        log.info("event=started version=%s npu_smi=%r", __version__, self.config.npu_smi.command)

    def _profiling_jobs(self) -> list[Job]:
        """The capture tick (which workload is due is decided inside) and the ingest scan."""
        settings = self.config.profiling
        jobs: list[Job] = []
        if self.profiler is None:
            return jobs
        if settings.enabled:
            intervals = [settings.interval, *(t.interval for t in settings.targets if t.interval)]
            jobs.append((self.profiler.tick, min(CAPTURE_TICK_SECONDS, *intervals), 10.0))
        if settings.ingest.paths:
            jobs.append((self.profiler.ingest_once, settings.ingest.interval, 5.0))
        return jobs

    def running(self) -> bool:
        return self._scheduler is not None and self._scheduler.running()

    def stop(self) -> None:
        """No more jobs; a capture in flight is killed and the profiling state saved."""
        if self._scheduler is not None:
            self._scheduler.stop()
            self._scheduler = None
        if self.profiler is not None:
            self.profiler.stop()
        self.chip_backend.close()


def build_chip_backend(
    config: Config,
    runner: Runner,
    proc_root: Path,
    trust: TrustPolicy,
    on_backend: Callable[[BackendInfo], None],
) -> ChipBackend:
    """npu-smi alone under backend cli; else npu-smi with what DCMI answers through the helper
    unless the library is refused (why is logged once and becomes npumon_backend_info's
    reason)."""
    settings = config.chips
    return open_chips(
        NpuSmi(config.npu_smi.command, settings.timeout, runner),
        mode=settings.backend,
        library=config.dcmi.library,
        trust=trust,
        on_backend=on_backend,
        proc_root=proc_root,
    )
