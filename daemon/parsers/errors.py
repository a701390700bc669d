"""The one exception every npu-smi parser raises."""

from __future__ import annotations


class ParseError(ValueError):
    """Text that does not have the shape its parser expects.

    ``line_no`` is 1-based; ``line`` is the offending line (or "" for whole-input problems).
    """

    def __init__(self, message: str, line_no: int = 0, line: str = "") -> None:
        self.reason = message
        self.line_no = line_no
        self.line = line
        where = f" at line {line_no}: {line.strip()[:120]!r}" if line_no else ""
        super().__init__(f"{message}{where}")
