"""Operator sequences worth fusing: msprof-analyze's fusible operator rule, restated per rank.

msprof-analyze's "Fusible Operator Analysis" (advisor/analyzer/schedule/fusible_ops, rules
fusible_operator.yaml) walks one rank's kernel table in launch order. Every run of 3 to 10
consecutive compute tasks (a communication or AI CPU task ends a run) is a window; a window is
host-bound when its tasks are busy less than fusible_host_ratio (40 %) of its wall time (first
start to last end: the device waits for launches between them) and MTE-bound when its tasks'
memory-transfer time (max(aic_mte2, aiv_mte2) + max(aic_fixpipe, aiv_mte3) per task) is over
fusible_mte_ratio (80 %) of their aicore_time (msprof-analyze's arithmetic: a vector-only window,
aicore_time 0, is never MTE-bound). Windows of the same operators (name, input and output
shapes) make one sequence; a sequence is reported when it recurs more than fusible_min_count (5)
times and either is MTE-bound or its windows' wall time is over fusible_min_share (1 %) of the
rank's span (first task's start to last task's end).

What differs, on purpose, is the counting. msprof-analyze adds up the wall time of every window it
reports, and its windows overlap (a sequence, its prefixes, the same tasks one position on), so
its total exceeds the capture (Qwen3, pp2dp2_level2 rank 0: 75 sequences, 2,943 ms, on a rank
whose kernel table spans 810 ms). Here the reported windows' intervals are merged and that union,
as a share of the span, is the finding's figure; a sequence found inside a longer reported one
is not counted apart.

It reads the same head of the kernel table as operator_pmu (readers.read_pmu); the tables
without PMU time columns are not judged, as msprof-analyze skips them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npumon.daemon.analysis.evidence import RankSequences, Sequence_
from npumon.daemon.model.profile import Thresholds

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

SHORTEST, LONGEST = 3, 10  # tasks in a window (msprof-analyze's min_length 2 counts from 0)
NAMED = 3  # sequences named in the finding
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


def find(rank: str, frame: pd.DataFrame, t: Thresholds) -> RankSequences | None:
    """The reported sequences of one rank's kernel rows (read_pmu's frame, table order); None
    without start times or PMU time columns."""
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
    found: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    stats: dict[tuple[int, int], tuple[float, bool, bool]] = {}
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
        clean = (c_block[j] - c_block[i]) == 0
        busy = c_dur[j] - c_dur[i]
        wall = start[j - 1] + dur[j - 1] - start[i]
        host = (wall > 0) & (busy < t.fusible_host_ratio * wall)
        core_sum = c_core[j] - c_core[i]
        mte_b = (core_sum > 0) & ((c_mte[j] - c_mte[i]) > t.fusible_mte_ratio * core_sum)
        keep = np.nonzero(clean & (host | mte_b))[0]
        if not len(keep):
            continue
        keep = keep[np.argsort(key[keep], kind="stable")]
        groups, firsts, counts = np.unique(key[keep], return_index=True, return_counts=True)
        for k, at, count in zip(groups, firsts, counts, strict=True):
            if count <= t.fusible_min_count:
                continue
            pick = keep[at : at + count]
            walls = wall[pick]
            mte_any = bool(mte_b[pick].any())
            if not mte_any and walls.sum() <= t.fusible_min_share * span:
                continue
            found[(length, int(k))] = (pick, walls)
            stats[(length, int(k))] = (float(busy[pick].sum()), bool(host[pick].any()), mte_any)
    if not found:
        return RankSequences(rank, span, 0.0, ())
    intervals = sorted(
        (float(start[p]), float(start[p + length - 1] + dur[p + length - 1]))
        for (length, _), (picks, _) in found.items()
        for p in picks
    )
    union, (lo, hi) = 0.0, intervals[0]
    for a, b in intervals[1:]:
        if a > hi:
            union, lo, hi = union + hi - lo, a, b
        else:
            hi = max(hi, b)
    union += hi - lo
    sequences = []
    for (length, k), (picks, walls) in found.items():
        p = int(picks[0])
        busy_us, host_any, mte_any = stats[(length, k)]
        sequences.append(
            Sequence_(
                tuple(str(x) for x in names.iloc[p : p + length]),
                tuple(int(x) for x in ids[p : p + length]),
                len(picks),
                float(walls.sum()),
                busy_us,
                host_any,
                mte_any,
            )
        )
    return RankSequences(rank, span, union, _outermost(sequences))


def _outermost(sequences: list[Sequence_]) -> tuple[Sequence_, ...]:
    """The sequences not found inside a longer reported one, longest wall time first."""
    kept: list[Sequence_] = []
    inner: set[tuple[int, ...]] = set()  # every shorter run inside a kept sequence
    for s in sorted(sequences, key=lambda s: -len(s.ids)):
        if s.ids in inner:
            continue
        kept.append(s)
        n = len(s.ids)
        inner.update(s.ids[i:j] for i in range(n) for j in range(i + SHORTEST, n + 1))
    return tuple(sorted(kept, key=lambda s: (-s.wall_us, s.ops)))
