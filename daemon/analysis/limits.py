"""The analysis worker's limits: table size caps (checked before anything is read) and its own
address-space limit (set before pandas is imported)."""

from __future__ import annotations

import resource
from collections.abc import Iterable

from npumon.daemon.analysis.readers import layout
from npumon.daemon.model.profile import AnalysisLimits


class TooLarge(Exception):
    """A table over its cap: nothing of the profile is read (result skipped_too_large)."""


def _cap(kind: str, limits: AnalysisLimits) -> tuple[int, str]:
    if kind in (layout.KERNEL, layout.DB):
        return int(limits.kernel_table), "kernel_table"
    if kind == layout.OP_STATISTIC:
        return int(limits.op_statistic_table), "op_statistic_table"
    return int(limits.step_table), "step_table"


def check_sizes(units: Iterable[layout.ProfileUnit], limits: AnalysisLimits) -> None:
    """TooLarge when a unit's tables of one kind (slices summed) exceed that kind's cap.

    The apparent size counts: a sparse file costs no disk but would cost its size in memory."""
    for unit in units:
        for kind, files in unit.tables.items():
            size = sum(f.stat().st_size for f in files)
            cap, name = _cap(kind, limits)
            if size > cap:
                raise TooLarge(
                    f"{files[0]}{' (+ slices)' if len(files) > 1 else ''}: {size} "
                    f"bytes, over the {cap} byte cap for {kind} tables "
                    f"(profiling.limits.{name})"
                )


def limit_memory(limit_bytes: int) -> None:
    """RLIMIT_AS of this process (never raised above the hard limit it already has): a profile
    that needs more makes this worker fail with MemoryError, never the daemon or the node."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit_bytes = min(limit_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, hard))
