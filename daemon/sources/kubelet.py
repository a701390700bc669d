"""The kubelet pod-resources source: which container holds which NPU device, on its own interval.

Off while the socket has never existed on this node: no status, no `npumon_source_*` series, and
grpc is not even imported. Once the socket has been seen, every run is reported: a missing
socket, a timeout or an error marks the source down (`npumon_source_up 0`) with its reason, and
the store then knows no owners (no stale ones), so allocation falls back to the memory rule. An
answer over the receive limit (`too_large`) also marks it down, but keeps the owners last read:
the kubelet is up and answered, only too much.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from npumon.daemon.model.kubelet import PodResourcesResults
from npumon.daemon.model.snapshot import SourceStatus
from npumon.daemon.parsers.pod_resources import DeviceRow, parse_pod_resources
from npumon.daemon.sources.wrapper import SourceFailure, SourceRun, SourceTracker

log = logging.getLogger(__name__)
SOURCE = "kubelet_pod_resources"
Publish = Callable[[PodResourcesResults | None, SourceStatus], None]
Lister = Callable[[Path, float], list[DeviceRow]]


def _grpc_lister(socket: Path, timeout: float) -> list[DeviceRow]:
    from npumon.daemon.sources.kubelet_client import list_devices  # grpc only when needed

    return list_devices(socket, timeout)


class PodResourcesSource:
    """One scheduler job (`poll`); never runs twice at once."""

    def __init__(
        self,
        socket: Path,
        timeout: float,
        prefixes: Iterable[str],
        publish: Publish,
        *,
        lister: Lister | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.socket = socket
        self._timeout = timeout
        self._prefixes = tuple(prefixes)
        self._publish = publish
        self._lister = lister or _grpc_lister  # None: gRPC on the socket
        self.tracker = SourceTracker(SOURCE, clock, monotonic)
        self.seen = False  # the socket existed once: from then on every run is reported
        self._busy = threading.Lock()
        self._malformed_logged: set[str] = set()
        self._last_good: PodResourcesResults | None = None

    def poll(self) -> None:
        if not self.seen and not self.socket.exists():
            return  # off: this node has no kubelet (yet)
        self.seen = True
        if not self._busy.acquire(blocking=False):
            return
        try:
            found: list[PodResourcesResults] = []
            status = self.tracker.run(lambda run: found.append(self._list(run)))
            if status.up:
                self._last_good = found[0]
            self._publish(found[0] if found else None, status)
        finally:
            self._busy.release()

    def _list(self, run: SourceRun) -> PodResourcesResults:
        if not self.socket.exists():
            raise SourceFailure("socket_missing", f"{self.socket} is gone; is the kubelet up?")
        try:
            rows = self._lister(self.socket, self._timeout)
        except SourceFailure as failure:
            if failure.reason != "too_large" or self._last_good is None:
                raise
            run.record(failure)  # down, and the owners last read stand
            return self._last_good
        results = parse_pod_resources(rows, self._prefixes)
        for device_id in results.malformed:
            run.refused(SourceFailure("malformed_device_id", device_id))
            if device_id not in self._malformed_logged and len(self._malformed_logged) < 1000:
                self._malformed_logged.add(device_id)
                log.warning("source=%s event=malformed_device_id device_id=%r", SOURCE, device_id)
        return results
