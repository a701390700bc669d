"""fusible_ops: msprof-analyze's fusible operator rule, on the operator windows readers/fusible.py
measured: the rank whose reported sequences cover the largest share of its kernel table's span.

msprof-analyze's "Fusible Operator Analysis" (advisor/analyzer/schedule/fusible_ops, rules
fusible_operator.yaml) walks one rank's kernel table in launch order. A window (3 to 10
consecutive compute tasks) is host-bound when its tasks are busy less than fusible_host_ratio
(40 %) of its wall time (the device waits for launches between them) and MTE-bound when its
tasks' memory-transfer time is over fusible_mte_ratio (80 %) of their aicore_time
(msprof-analyze's arithmetic: a vector-only window, aicore_time 0, is never MTE-bound). Windows of
the same operators (name, input and output shapes) make one sequence; a sequence is reported when
it recurs more than fusible_min_count (5) times and either is MTE-bound or its windows' wall time
is over fusible_min_share (1 %) of the rank's span (first task's start to last task's end).

What differs, on purpose, is the counting. msprof-analyze adds up the wall time of every window it
reports, and its windows overlap (a sequence, its prefixes, the same tasks one position on), so
its total exceeds the capture (Qwen3, pp2dp2_level2 rank 0: 75 sequences, 2,943 ms, on a rank
whose kernel table spans 810 ms). Here the reported windows' intervals are merged and that union,
as a share of the span, is the finding's figure; a sequence found inside a longer reported one
is not counted apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from npumon.daemon.analysis.evidence import Evidence, OpWindows
from npumon.daemon.analysis.findings import finding
from npumon.daemon.model.profile import Bottleneck, Thresholds

if TYPE_CHECKING:
    import numpy as np

KIND = "fusible_ops"
ORDER = 110
OPERATOR_TABLE = True  # judges the operator tables: withheld when they cover too little
ADVICE = (
    "The same short runs of operators recur many times and either leave the device "
    "waiting between launches (host-bound) or spend their time moving data (MTE-bound) "
    "(msprof-analyze's fusible operator analysis). Find the model code that launches them "
    "(a capture with with_stack=True), check that it uses the NPU-affine APIs (affinity_api), "
    "then fuse the run: a fused torch_npu operator where one exists (npu_rms_norm, "
    "npu_rotary_mul, npu_fusion_attention, npu_swiglu), graph mode (torchair), or ask the "
    "operator developers for a fused kernel."
)


NAMED = 3  # sequences named in the finding


@dataclass(frozen=True, slots=True)
class Sequence_:
    ops: tuple[str, ...]  # operator names, launch order
    ids: tuple[int, ...]  # the operators (name and shapes) as ids, for containment
    count: int  # windows of it reported
    wall_us: float  # their wall time, summed (msprof-analyze's figure)
    busy_us: float  # their tasks' time
    host_bound: bool
    mte_bound: bool


@dataclass(frozen=True, slots=True)
class RankSequences:
    """One rank's reported sequences and what their windows cover, counted once."""

    rank: str
    span_us: float
    union_us: float  # the reported windows' intervals merged
    sequences: tuple[Sequence_, ...]  # longest wall time first


def sequences(w: OpWindows, t: Thresholds) -> RankSequences:
    """The sequences of one rank's windows msprof-analyze's rule reports."""
    import numpy as np

    found: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    stats: dict[tuple[int, int], tuple[float, bool, bool]] = {}
    for ws in w.sets:
        busy, wall = ws.busy_us, ws.wall_us
        host = (wall > 0) & (busy < t.fusible_host_ratio * wall)
        mte_b = (ws.core_us > 0) & (ws.mte_us > t.fusible_mte_ratio * ws.core_us)
        keep = np.nonzero(host | mte_b)[0]
        if not len(keep):
            continue
        keep = keep[np.argsort(ws.key[keep], kind="stable")]
        groups, firsts, counts = np.unique(ws.key[keep], return_index=True, return_counts=True)
        for k, at, count in zip(groups, firsts, counts, strict=True):
            if count <= t.fusible_min_count:
                continue
            pick = keep[at : at + count]
            walls = wall[pick]
            mte_any = bool(mte_b[pick].any())
            if not mte_any and walls.sum() <= t.fusible_min_share * w.span_us:
                continue
            found[(ws.length, int(k))] = (ws.first[pick], walls)
            stats[(ws.length, int(k))] = (float(busy[pick].sum()), bool(host[pick].any()), mte_any)
    if not found:
        return RankSequences(w.rank, w.span_us, 0.0, ())
    start, dur = w.start_us, w.duration_us
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
    reported = []
    for (length, k), (picks, walls) in found.items():
        p = int(picks[0])
        busy_us, host_any, mte_any = stats[(length, k)]
        reported.append(
            Sequence_(
                tuple(str(x) for x in w.names[p : p + length]),
                tuple(int(x) for x in w.ids[p : p + length]),
                len(picks),
                float(walls.sum()),
                busy_us,
                host_any,
                mte_any,
            )
        )
    return RankSequences(w.rank, w.span_us, union, _outermost(reported, w.sets[0].length))


def _outermost(found: list[Sequence_], shortest: int) -> tuple[Sequence_, ...]:
    """The sequences not found inside a longer reported one, longest wall time first."""
    kept: list[Sequence_] = []
    inner: set[tuple[int, ...]] = set()  # every shorter run inside a kept sequence
    for s in sorted(found, key=lambda s: -len(s.ids)):
        if s.ids in inner:
            continue
        kept.append(s)
        n = len(s.ids)
        inner.update(s.ids[i:j] for i in range(n) for j in range(i + shortest, n + 1))
    return tuple(sorted(kept, key=lambda s: (-s.wall_us, s.ops)))


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    """The rank whose reported sequences
    cover the largest share of its kernel table's span, over fusible_ops_ratio."""
    judged = [r for w in e.windows if (r := sequences(w, t)).span_us > 0 and r.sequences]
    if not judged:
        return ()
    worst = max(judged, key=lambda r: (r.union_us / r.span_us, r.rank))
    share = worst.union_us / worst.span_us
    if share < t.fusible_ops_ratio:
        return ()
    named = "; ".join(
        f"{len(s.ops)} ops {s.ops[0]} ... {s.ops[-1]} x{s.count}, {s.wall_us / 1e3:.3f} ms "
        f"({'host' if s.host_bound else 'MTE'}-bound)"
        for s in worst.sequences[:NAMED]
    )
    advisor_ms = sum(s.wall_us for s in worst.sequences) / 1e3
    return (
        finding(
            ADVICE,
            KIND,
            f"{worst.rank}: {len(worst.sequences)} operator sequence(s) of 3-10 compute tasks, "
            f"each recurring over {t.fusible_min_count} times host-bound (busy under "
            f"{t.fusible_host_ratio:.0%} of its wall time) or MTE-bound (MTE over "
            f"{t.fusible_mte_ratio:.0%} of aicore time), cover {worst.union_us / 1e3:.3f} ms, "
            f"{share:.0%} of its kernel table's {worst.span_us / 1e3:.3f} ms (counted once; "
            f"threshold {t.fusible_ops_ratio:.0%}; {len(judged)} rank(s) with such sequences; "
            "msprof-analyze's rule adds up the overlapping windows: "
            f"{advisor_ms:.3f} ms). Longest: " + named,
            share,
            t.fusible_ops_ratio,
        ),
    )
