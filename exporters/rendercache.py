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
        self._render_lock = threading.Lock()
        self._entries: dict[tuple[str, bool], tuple[object, bytes]] = {}

    def peek(self, key: tuple[str, bool]) -> bytes | None:
        """The cached body when it is still current, else None (never renders)."""
        return self._lookup(key, self._version())

    def get(self, key: tuple[str, bool], render: Callable[[], bytes]) -> bytes:
        """The cached body when current, else ``render()``'s, which is kept. One render at a
        time: scrapes that missed while another rendered the same snapshot reuse its body."""
        version = self._version()
        body = self._lookup(key, version)
        if body is not None:
            return body
        with self._render_lock:
            body = self._lookup(key, version)
            if body is None:
                body = render()
                with self._lock:
                    self._entries[key] = (version, body)
        return body

    def _lookup(self, key: tuple[str, bool], version: object) -> bytes | None:
        with self._lock:
            hit = self._entries.get(key)
        return hit[1] if hit is not None and hit[0] is version else None
