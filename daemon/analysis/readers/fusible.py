"""Operator windows of one rank's kernel table, measured for the fusible_ops rule
(rules/fusible_ops.py, msprof-analyze's fusible operator rule).

A window is a run of 3 to 10 consecutive compute tasks in launch order (a communication or AI CPU
task ends a run); per window: its tasks' time (busy), its wall time (first start to last end),
its memory-transfer time (max(aic_mte2, aiv_mte2) + max(aic_fixpipe, aiv_mte3) per task), its
AI Core time (aicore_time, msprof-analyze's denominator) and its operators (name, input and
output shapes) as a key.

It reads the same head of the kernel table as operator_pmu (readers.read_pmu); the tables
without PMU time columns are not measured, as msprof-analyze skips them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npumon.daemon.analysis.evidence import OpWindows, WindowSet

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

SHORTEST, LONGEST = 3, 10  # tasks in a window (msprof-analyze's min_length 2 counts from 0)
_NOT_COMPUTE = ("HCCL", "COMMUNICATION", "AI_CPU")
_COMM_PREFIXES = ("hcom", "lccl", "lcoc")
_PRIME = 1_000_003


def _time(frame: pd.DataFrame, column: str) -> np.ndarray:
    import numpy as np

    if column in frame:
        return frame[column].fillna(0.0).to_numpy(dtype="float64")
    return np.zeros(len(frame))


def _prefix(values: np.ndarray) -> np.ndarray:
    """Prefix sums with a leading 0: the sum of values[i:j] is p[j] - p[i]."""
    import numpy as np

    return np.concatenate((np.zeros(1), np.cumsum(values, dtype="float64")))


def windows(rank: str, frame: pd.DataFrame) -> OpWindows | None:
    """Every window of SHORTEST to LONGEST consecutive compute tasks of one rank's kernel rows
    (read_pmu's frame, table order), measured; None without start times or PMU time columns."""
    import numpy as np
    import pandas as pd

    needed = ("start_us", "aicore_us", "aic_mte2_us", "aiv_mte2_us")
    if len(frame) < SHORTEST or any(c not in frame for c in needed):
        return None
    start = frame["start_us"].to_numpy(dtype="float64")
    dur = frame["duration_us"].fillna(0.0).to_numpy(dtype="float64")
    if np.isnan(start).any():
        return None
    core = frame["core_type"].astype("object").astype(str).str.upper()
    names = frame["name"].astype("object").astype(str)
    comm = core.isin(_NOT_COMPUTE) | names.str.lower().str.startswith(_COMM_PREFIXES)
    blocked = comm.to_numpy()
    mte = np.maximum(_time(frame, "aic_mte2_us"), _time(frame, "aiv_mte2_us")) + np.maximum(
        _time(frame, "aic_fixpipe_us"), _time(frame, "aiv_mte3_us")
    )
    core_us = _time(frame, "aicore_us")  # msprof-analyze's denominator: AI Core (cube) time only
    keys = (
        names
        + "\x00"
        + frame["input_shapes"].astype("object").astype(str)
        + "\x00"
        + frame["output_shapes"].astype("object").astype(str)
    )
    ids = pd.factorize(keys)[0].astype("uint64")  # a missing key (-1) is one more id
    span = float((start + dur).max() - start.min())
    n = len(frame)
    # per window length: sums by prefix sums, a rolling hash of the operator ids as its key
    c_dur, c_mte, c_core = _prefix(dur), _prefix(mte), _prefix(core_us)
    c_block = _prefix(blocked.astype("float64"))
    sets = []
    key = ids.copy()
    for length in range(2, LONGEST + 1):
        m = n - length + 1
        if m <= 0:
            break
        key = key[:m] * np.uint64(_PRIME) + ids[length - 1 : length - 1 + m]
        if length < SHORTEST:
            continue
        i = np.arange(m)
        j = i + length
        clean = np.nonzero((c_block[j] - c_block[i]) == 0)[0]  # no communication or AI CPU task
        i, j = i[clean], j[clean]
        sets.append(
            WindowSet(
                length,
                i,
                key[clean],
                c_dur[j] - c_dur[i],
                start[j - 1] + dur[j - 1] - start[i],
                c_mte[j] - c_mte[i],
                c_core[j] - c_core[i],
            )
        )
    return OpWindows(rank, span, start, dur, names.to_numpy(), ids, tuple(sets))
