"""export_type=db host side and collective sizes: what the diagnosis rules need from a profiler db.

PYTORCH_API holds torch_npu's host ranges (``enumerate(DataLoader)#...__next__`` is the data
loader's own time per step); CANN_API the CANN calls (``aclopCompileAndExecute``: an operator
compiled on line, then run); COMMUNICATION_OP each collective's element count and data type
(ENUM_HCCL_DATA_TYPE), so its size in bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from npumon.daemon.analysis.readers.sqlite_tables import select

DATALOADER_PREFIX = "enumerate(DataLoader)#"  # the top-level range: nested frames repeat it
COMPILE_API = "aclopCompileAndExecute"


@dataclass(frozen=True, slots=True)
class ApiTotal:
    """Calls of one kind of host range and their summed wall time."""

    count: int
    seconds: float


def _total(rows: list[tuple[object, ...]] | None) -> ApiTotal | None:
    if rows is None:
        return None
    ((count, ns),) = rows
    return ApiTotal(
        int(count) if isinstance(count, int) else 0,
        float(ns) / 1e9 if isinstance(ns, int | float) else 0.0,
    )


def dataloader_time(path: Path) -> ApiTotal | None:
    """The data loader's ``__next__`` ranges of PYTORCH_API; None without the table."""
    return _total(
        select(
            path,
            "PYTORCH_API",
            "SELECT COUNT(*), SUM(p.endNs - p.startNs) FROM PYTORCH_API p JOIN "
            "STRING_IDS s ON s.id = p.name WHERE substr(s.value, 1, ?) = ?",
            len(DATALOADER_PREFIX),
            DATALOADER_PREFIX,
        )
    )


def compile_calls(path: Path) -> ApiTotal | None:
    """CANN_API's aclopCompileAndExecute calls (on-line compilation); None without the table."""
    return _total(
        select(
            path,
            "CANN_API",
            "SELECT COUNT(*), SUM(c.endNs - c.startNs) FROM CANN_API c JOIN "
            "STRING_IDS s ON s.id = c.name WHERE s.value = ?",
            COMPILE_API,
        )
    )
