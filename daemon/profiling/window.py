"""A capture window joined with the telemetry the daemon holds for each rank's chip and ports.

While a capture runs, ``WindowSampler`` keeps every snapshot the store publishes (the chip and
network polls go on meanwhile); ``measure`` turns them into one ``RankHardware`` per rank: the
share of the window its chip was clocked down and why, its clock and temperature, and what its
error counters (HBM ECC, HCCS and SIO CRC) and its NIC ports' (RoCE retransmissions, PFC, CNP,
carrier drops) added. The window is bracketed: its first snapshot is the latest at the start
(the polls before it), and at the stop the sampler asks for the counter polls at once and keeps
sampling until each counter source that had answered has answered again since the stop, so a
capture shorter than the poll interval still compares its counters across it. ``telemetry``
says the interval each source's counters cover. HBM ECC and HCCS/SIO CRC are read by the full
health pass (chips.intervals.health), not asked for at the stop: they move only with such a
pass between the two polls.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from npumon.daemon.config import Throttle
from npumon.daemon.model.chips import ChipId
from npumon.daemon.model.network_view import PortReading
from npumon.daemon.model.rank_hardware import ERROR_KINDS, RankHardware
from npumon.daemon.model.reading import NOT_THROTTLED, THROTTLE_REASONS, ChipReading
from npumon.daemon.model.snapshot import NodeSnapshot

PERIOD_SECONDS = 1.0  # how often the sampler looks for a new snapshot
# The sources whose counters a window compares and that a poll refreshes whole: the chip table
# and detail (clocks, power, temperature: the throttle judgment) and hccn_tool (RoCE, PFC, CNP,
# carrier). The full health pass (HBM ECC, HCCS/SIO CRC) runs on its own interval.
COUNTER_SOURCES = ("npu_smi_table", "npu_smi_detail", "hccn_tool")


class WindowSampler:
    """The snapshots published from ``start()`` to ``stop()``, the latest at start first, up
    to the first in which the counter sources have answered since the stop (or ``settle``
    seconds after it). ``poll_now`` asks for those sources' polls at once (the scheduler's
    run_now); ``clock`` is the wall clock the sources stamp their successes with; ``cancelled``
    (the profiler's stop) ends that wait."""

    def __init__(
        self,
        latest: Callable[[], NodeSnapshot],
        period: float = PERIOD_SECONDS,
        poll_now: Callable[[], None] | None = None,
        settle: float = 0.0,
        clock: Callable[[], float] = time.time,
        cancelled: threading.Event | None = None,
    ):
        self._latest = latest
        self._period = period
        self._poll_now = poll_now
        self._settle = settle
        self._clock = clock
        self._cancelled = cancelled or threading.Event()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self.snapshots: list[NodeSnapshot] = []

    def _take(self) -> None:
        snap = self._latest()
        if not self.snapshots or snap is not self.snapshots[-1]:
            self.snapshots.append(snap)

    def start(self) -> None:
        self._take()
        self._thread = threading.Thread(target=self._run, name="capture-window", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(self._period):
            self._take()

    def stop(self) -> list[NodeSnapshot]:
        stopped = self._clock()
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        if self._poll_now is not None:
            self._poll_now()
        deadline = time.monotonic() + self._settle
        while not self._answered_since(stopped):
            left = deadline - time.monotonic()
            if left <= 0 or self._cancelled.wait(min(self._period, left)):
                break
        self._take()
        return self.snapshots

    def _answered_since(self, stopped: float) -> bool:
        self._take()
        last = _successes(self.snapshots[-1])
        return all(last.get(name, 0.0) >= stopped for name in _successes(self.snapshots[0]))

    def telemetry(self) -> dict[str, tuple[float, float]]:
        """Per counter source: the Unix times of the polls the window's counters are compared
        between (the last before the start, the latest when the sampling ended)."""
        if not self.snapshots:
            return {}
        first, last = _successes(self.snapshots[0]), _successes(self.snapshots[-1])
        return {name: (at, last.get(name, at)) for name, at in sorted(first.items())}


def _successes(snap: NodeSnapshot) -> dict[str, float]:
    """The counter sources' last successful polls in ``snap``."""
    return {
        s.source: s.last_success_timestamp
        for s in snap.sources
        if s.source in COUNTER_SOURCES and s.last_success_timestamp is not None
    }


def measure(
    ranks: Iterable[tuple[int, ChipId]], snapshots: Sequence[NodeSnapshot], throttle: Throttle
) -> tuple[RankHardware, ...]:
    """One RankHardware per (rank, chip), over the snapshots that had a chip table."""
    tabled = [s for s in snapshots if s.chips]
    return tuple(_rank(rank, chip, tabled, throttle) for rank, chip in ranks)


def _rank(rank: int, chip: ChipId, snaps: Sequence[NodeSnapshot], t: Throttle) -> RankHardware:
    readings = [r for s in snaps for r in s.chips if (r.npu, r.chip) == chip]
    judged = [j for j in (_throttle(r, t) for r in readings) if j is not None]
    reasons = Counter(j for j in judged if j != NOT_THROTTLED)
    clocks = [r.aicore_frequency_hertz for r in readings if r.aicore_frequency_hertz is not None]
    rated = [r.aicore_rated_frequency_hertz for r in readings if r.aicore_rated_frequency_hertz]
    temps = [r.temperature_celsius for r in readings if r.temperature_celsius is not None]
    counts = [_counters(s, chip) for s in snaps]
    errors = []
    for kind in ERROR_KINDS:
        values = [v for c in counts if (v := c.get(kind)) is not None]
        if len(values) >= 2 and values[-1] > values[0]:  # a lower value: a reset, not news
            errors.append((kind, values[-1] - values[0]))
    return RankHardware(
        rank=rank,
        npu=chip[0],
        chip=chip[1],
        samples=len(readings),
        throttled_share=sum(reasons.values()) / len(judged) if judged else None,
        throttle_reason=reasons.most_common(1)[0][0] if reasons else None,
        aicore_hertz=sum(clocks) / len(clocks) if clocks else None,
        rated_hertz=max(rated) if rated else None,
        temperature_max_celsius=max(temps) if temps else None,
        errors=tuple(errors),
    )


def _throttle(r: ChipReading, t: Throttle) -> str | None:
    """The reading's own judgment; during a capture (AI Core reads 0, so the reading leaves it
    unjudged) the same rule on the clock alone: the job is running, so the chip is loaded."""
    if r.throttle is not None:
        return r.throttle
    current, rated = r.aicore_frequency_hertz, r.aicore_rated_frequency_hertz
    if current is None or not rated or not r.capture_active:
        return None
    if current >= t.frequency_ratio * rated:
        return NOT_THROTTLED
    limits = t.limits_for(dict(r.identity or ()).get("name"))
    if r.temperature_celsius is not None and r.temperature_celsius >= limits.temperature_celsius:
        return "thermal"
    if r.power_watts is not None and r.power_watts >= limits.power_watts:
        return "power"
    return THROTTLE_REASONS[-1]  # unknown


def _counters(snap: NodeSnapshot, chip: ChipId) -> dict[str, int | None]:
    reading = next((r for r in snap.chips if (r.npu, r.chip) == chip), None)
    links = next((c for c in snap.network.chips if (c.npu, c.chip) == chip), None)
    ports = [p for p in snap.network.ports if (p.npu, p.chip) == chip]
    ecc = (
        None
        if reading is None
        else _sum([reading.hbm_ecc_single_bit_errors, reading.hbm_ecc_double_bit_errors])
    )
    return {
        "hbm_ecc": ecc,
        "hccs_crc": _sum([h.crc_errors for h in links.hccs]) if links else None,
        "sio_crc": _sum([n for _, n in links.sio_crc_errors]) if links else None,
        "retransmissions": _roce(ports, "retransmissions"),
        "pfc": _pfc(ports),
        "cnp": _roce(ports, "cnp_received"),
        "link_flaps": _sum([p.carrier_down_changes for p in ports]),
    }


def _sum(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _roce(ports: Sequence[PortReading], kind: str) -> int | None:
    return _sum([dict(p.roce_errors).get(kind) for p in ports])


def _pfc(ports: Sequence[PortReading]) -> int | None:
    per_port = []
    for p in ports:
        frames = [n for _, kind, n in p.pause_frames if kind == "pfc"]
        per_port.append(sum(frames) if frames else _sum(n for _, _, n in p.pfc_frames))
    return _sum(per_port)
