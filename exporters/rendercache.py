"""The last exposition per format, reused while the snapshot it was rendered from is unchanged."""

from __future__ import annotations

import threading
from collections.abc import Callable


class RenderCache:
    """The last exposition per (content type, gzip), reused while ``version()`` is unchanged.

    ``version`` returns the immutable snapshot the collector renders (compared with ``is``), so
    repeated scrapes of an unchanged snapshot (a hung npu-smi, several Prometheus replicas) cost
    a dictionary lookup instead of formatting every sample again.
    """

    def __init__(self, version: Callable[[], object]) -> None:
        self._version = version
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, bool], tuple[object, bytes]] = {}

    def peek(self, key: tuple[str, bool]) -> bytes | None:
        """The cached body when it is still current, else None (never renders)."""
        version = self._version()
        with self._lock:
            hit = self._entries.get(key)
        return hit[1] if hit is not None and hit[0] is version else None

    def get(self, key: tuple[str, bool], render: Callable[[], bytes]) -> bytes:
        """The cached body when current, else ``render()``'s, which is kept."""
        version = self._version()
        with self._lock:
            hit = self._entries.get(key)
        if hit is not None and hit[0] is version:
            return hit[1]
        body = render()
        with self._lock:
            self._entries[key] = (version, body)
        return body
