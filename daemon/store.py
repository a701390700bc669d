"""SnapshotStore: each source publishes its results once per run; a scrape reads one snapshot."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TypeVar

from npumon.daemon.config import Throttle as ThrottleConfig
from npumon.daemon.model.attribution import Attribution, attribute
from npumon.daemon.model.chips import ChipResults, InfoTable
from npumon.daemon.model.kubelet import PodResourcesResults
from npumon.daemon.model.network import ChipInterconnect, HccnResults
from npumon.daemon.model.network_view import read_network
from npumon.daemon.model.profile import ProfilingView
from npumon.daemon.model.reading import (
    ChipReading,
    FaultLevel,
    ThrottleRule,
    lost_chips,
    read_chips,
)
from npumon.daemon.model.snapshot import (
    EMPTY_SNAPSHOT,
    BackendInfo,
    ChipId,
    NodeIdentity,
    NodeSnapshot,
    SourceStatus,
)

log = logging.getLogger(__name__)
_T = TypeVar("_T")
# the npu-smi source that reads the physical-ID mapping (a test keeps it equal to the sources')
IDENTITY_SOURCE = "npu_smi_identity"


class SnapshotStore:
    """Holds the last published results of each source; every publish builds one new snapshot.

    Readers take a reference to an immutable NodeSnapshot and never wait on a writer. Chip
    readings are merged (`daemon/model/reading.py`) only when npu-smi results or the set of profiled
    chips change; a source-status or profile update reuses them. A part of the new snapshot
    equal to the same part of the previous one is the previous object (``is``), so the exporter
    can keep what it rendered from it (the network families are most of an exposition and
    change only when hccn_tool or the interconnect queries run).
    """

    def __init__(
        self,
        throttle: ThrottleConfig,
        *,
        max_processes_per_chip: int = 8,
        cann_version: str | None = None,
        fault_level: FaultLevel = lambda code: "unknown",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._throttle = throttle
        self._max_processes = max_processes_per_chip
        self._cann_version = cann_version
        self._fault_level = fault_level
        self._clock = clock
        self._lock = threading.Lock()
        self._npu_smi = ChipResults()
        self._hccn = HccnResults()
        # what the network view was last read from: a publish that changed none of them (a
        # table poll) keeps that view rather than re-reading every port
        self._network_inputs: NetworkInputs | None = None
        self._pods: PodResourcesResults | None = None  # None: no pod-resources (or it failed)
        self._problems: Counter[str] = Counter()
        self._seen_problems: set[str] = set()
        self._capturing: frozenset[ChipId] = frozenset()
        self._sources: dict[str, SourceStatus] = {}
        self._backend: BackendInfo | None = None
        self._latest = EMPTY_SNAPSHOT

    def latest(self) -> NodeSnapshot:
        return self._latest  # a plain attribute read: atomic, never blocks on a writer

    def table(self) -> InfoTable | None:
        """The latest npu-smi table, processes uncapped (the profiler discovers jobs from it)."""
        return self._npu_smi.table

    def adopt(self, previous: SnapshotStore) -> None:
        """Start from another store's results and source states (a reload must not blank data).

        The readings are merged again under this store's own settings (throttle, process cap).
        """
        with self._lock:
            self._npu_smi = previous._npu_smi  # noqa: SLF001 (same class)
            self._hccn = previous._hccn  # noqa: SLF001
            self._pods = previous._pods  # noqa: SLF001
            self._sources = dict(previous._sources)  # noqa: SLF001
            self._backend = previous._backend  # noqa: SLF001
            self._publish(merge=True)

    def publish_chips(self, results: ChipResults, status: SourceStatus) -> None:
        """One npu-smi source run: its results (all tiers' latest) and its status, together."""
        with self._lock:
            self._npu_smi = results
            self._sources[status.source] = status
            self._publish(merge=True)

    def publish_hccn_tool(self, results: HccnResults, status: SourceStatus) -> None:
        """One hccn_tool run: every port's latest results and the run's status, together."""
        with self._lock:
            self._hccn = results
            self._sources[status.source] = status
            self._publish(merge=True)

    def withdraw_hccn_tool(self, sources: tuple[str, ...]) -> None:
        """hccn_tool is off (not installed, or a reload pointed it elsewhere): its ports and its
        sources' statuses leave the exposition, rather than staying at their last values."""
        with self._lock:
            self._hccn = HccnResults()
            for source in sources:
                self._sources.pop(source, None)
            self._publish(merge=True)

    def publish_pod_resources(
        self, results: PodResourcesResults | None, status: SourceStatus
    ) -> None:
        """One kubelet pod-resources run: who holds which devices (None: unknown) and status."""
        with self._lock:
            self._pods = results
            self._sources[status.source] = status
            self._publish(merge=True)

    def set_status(self, source: str, status: SourceStatus | None) -> None:
        """The status of a source that publishes no results (None: no such source now)."""
        with self._lock:
            if status is None:
                self._sources.pop(source, None)
            else:
                self._sources[source] = status
            self._publish(merge=False)

    def set_backend(self, backend: BackendInfo) -> None:
        """The backend now serving the npu-smi table (npumon_backend_info)."""
        with self._lock:
            self._backend = backend
            self._publish(merge=False)

    def set_capturing(self, chips: frozenset[ChipId]) -> None:
        """Chips under a profiler capture now (their AI Core reads 0, throttling unjudged)."""
        with self._lock:
            changed = chips != self._capturing
            self._capturing = chips
            self._publish(merge=changed)

    def set_profiles(self, view: ProfilingView | None) -> None:
        """Profile summaries and capture self-metrics (rendered by exporters' profiles group)."""
        with self._lock:
            self._latest = replace(self._latest, taken_at=self._clock(), profiles=view)

    def _publish(self, *, merge: bool) -> None:
        before = self._latest
        chips = before.chips
        if merge:
            owners = self._attribute()
            answering = read_chips(
                self._npu_smi,
                self._throttle_rule,
                max_processes=self._max_processes,
                capturing=self._capturing,
                fault_level=self._fault_level,
                owners=owners,
            )
            lost = lost_chips(
                self._npu_smi, before.chips, fault_level=self._fault_level, owners=owners
            )
            chips = answering if not lost else tuple(sorted((*answering, *lost), key=_chip_id))
        network = before.network
        inputs = (self._hccn, self._npu_smi.interconnect, [(c.npu, c.chip) for c in chips])
        if merge and not _unchanged(inputs, self._network_inputs):
            fresh = read_network(*inputs)
            network = replace(
                fresh,
                ports=_same(fresh.ports, network.ports),
                chips=_same(fresh.chips, network.chips),
            )
            self._network_inputs = inputs
        self._latest = replace(
            before,
            taken_at=self._clock(),
            node=_same(self._node_identity(), before.node),
            chips=_same(chips, before.chips),
            sources=_same(
                tuple(self._sources[name] for name in sorted(self._sources)), before.sources
            ),
            has_table=self._npu_smi.table is not None,
            network=_same(network, before.network),
            attribution_problems=tuple(sorted(self._problems.items())),
            backend=self._backend,
        )

    def _attribute(self) -> Attribution:
        """Owners of chips and processes; each new conflict or unmapped device logged once.

        A device is unmapped only once the chips' identities are known: until a table and an
        identity run (the `-m` mapping) are in, every device of a healthy start names no chip.
        """
        found = attribute(self._npu_smi, self._pods)
        problems = [("conflict", c) for c in found.conflicts]
        if self._npu_smi.table is not None and IDENTITY_SOURCE in self._sources:
            problems += [("unmapped_device", d) for d in found.unmapped]
        for kind, text in problems:
            if text not in self._seen_problems:
                if len(self._seen_problems) >= 10_000:  # bounded under endless pod churn
                    self._seen_problems.clear()
                self._seen_problems.add(text)
                self._problems[kind] += 1
                log.warning("event=attribution_%s detail=%s", kind, text)
        return found

    def _throttle_rule(self, model: str | None) -> ThrottleRule:
        limits = self._throttle.limits_for(model)
        return ThrottleRule(
            frequency_ratio=self._throttle.frequency_ratio,
            min_aicore_utilization=self._throttle.min_aicore_utilization,
            temperature_celsius=limits.temperature_celsius,
            power_watts=limits.power_watts,
        )

    def _node_identity(self) -> NodeIdentity:
        table = self._npu_smi.table
        return NodeIdentity(
            npu_smi_version=table.npu_smi_version if table else None,
            driver_version=table.version if table else None,
            cann_version=self._cann_version,
        )


NetworkInputs = tuple[HccnResults, Mapping[ChipId, ChipInterconnect], list[ChipId]]


def _unchanged(now: NetworkInputs, before: NetworkInputs | None) -> bool:
    """The same result objects (each source replaces its own on change) and the same chips."""
    return (
        before is not None and now[0] is before[0] and now[1] is before[1] and now[2] == before[2]
    )


def _same(new: _T, old: _T) -> _T:
    """``old`` when equal to ``new``: an unchanged part keeps its identity across publishes."""
    return old if new == old else new


def _chip_id(reading: ChipReading) -> tuple[int, int]:
    return reading.npu, reading.chip
