"""The NPU fault-code table: which handling level each health error code calls for.

The table is the Ascend device plugin's (see SOURCES.md): eight lists of upper-case hex codes,
one per level. Codes are compared as integers, so `8C03A000`, `8c03a000` and `0x8C03A000` match.
A code in several lists takes the most severe level; a code in none is ``unknown``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from npumon.daemon.model.chips import code_value

# most severe first (the device plugin's getMostSeriousFaultType order)
LEVELS = (
    "separate_npu",
    "pre_separate_npu",
    "restart_npu",
    "free_restart_npu",
    "restart_business",
    "restart_request",
    "sub_health",
    "not_handle",
)
UNKNOWN = "unknown"
_KEYS = {
    "SeparateNPUCodes": "separate_npu",
    "PreSeparateNPUCodes": "pre_separate_npu",
    "RestartNPUCodes": "restart_npu",
    "FreeRestartNPUCodes": "free_restart_npu",
    "RestartBusinessCodes": "restart_business",
    "RestartRequestCodes": "restart_request",
    "SubHealthFaultCodes": "sub_health",
    "NotHandleFaultCodes": "not_handle",
}


class FaultTableError(ValueError):
    """A fault table that cannot be read or is not in the device plugin's format."""


class FaultTable:
    """Code -> level lookups; ``level_of`` never raises."""

    def __init__(self, levels: Mapping[int, str]) -> None:
        self._levels = dict(levels)

    def __len__(self) -> int:
        return len(self._levels)

    def level_of(self, code: str) -> str:
        value = code_value(code)
        return self._levels.get(value, UNKNOWN) if value is not None else UNKNOWN

    @classmethod
    def from_json(cls, text: str, source: str) -> FaultTable:
        try:
            data = json.loads(text)
        except ValueError as error:
            raise FaultTableError(f"{source}: not JSON ({error})") from None
        if not isinstance(data, dict) or not set(data) & set(_KEYS):
            raise FaultTableError(
                f"{source}: expected the device plugin's faultCode.json "
                f"(an object with keys such as {', '.join(sorted(_KEYS)[:3])})"
            )
        levels: dict[int, str] = {}
        for key, level in sorted(_KEYS.items(), key=lambda kv: LEVELS.index(kv[1]), reverse=True):
            codes = data.get(key, [])
            if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
                raise FaultTableError(f"{source}: {key} must be a list of hex strings")
            for code in codes:
                value = code_value(code)
                if value is None:
                    raise FaultTableError(f"{source}: {key} holds {code!r}, which is not hex")
                levels[value] = level  # most severe last, so it wins
        return cls(levels)


def load_fault_table(path: Path | None = None) -> FaultTable:
    """The node's own table at ``path``, else the shipped default."""
    if path is None:
        text = resources.files(__name__).joinpath("fault-codes.json").read_text("utf-8")
        return FaultTable.from_json(text, "the shipped fault table")
    try:
        text = path.read_text("utf-8")
    except OSError as error:
        raise FaultTableError(f"{path}: cannot read ({error.strerror or error})") from None
    return FaultTable.from_json(text, str(path))
