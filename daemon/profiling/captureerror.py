"""The one exception of a capture phase: it carries the `npumon_captures_total` result label."""

from __future__ import annotations


class CaptureError(Exception):
    def __init__(self, result: str, message: str) -> None:
        self.result = result
        self.message = message
        super().__init__(f"{result}: {message}")
