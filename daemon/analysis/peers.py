"""Which ranks do the same work: data-parallel groups from profiler_metadata.json, and the
slow-rank and pipeline-imbalance findings judged among them.

torch_npu writes ``profiler_metadata.json`` beside ``profiler_info_N.json``; Megatron / MindSpeed
jobs add ``parallel_group_info``: ``{"group_name_3": {"group_name": "dp", "global_ranks": [2, 3],
...}}``. Ranks of one ``dp`` group (``dp_cp`` with context parallelism) run the same layers on
other data: they are peers. Ranks of different pipeline stages run other layers, so a gap between
them is a pipeline imbalance, never a slow rank. Without metadata every rank is a peer.

A slow rank shows two ways: it computes longer than its peers, or (msprof-analyze's
"communication" slow rank) its peers compute alike but spend longer in communication than it does:
they wait in the collectives for the rank that reaches them last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from npumon.daemon.analysis.diagnosis import finding
from npumon.daemon.analysis.steptime import spread
from npumon.daemon.model.profile import Bottleneck, RankBreakdown, RankSpread, Thresholds

DP_GROUP_NAMES = ("dp_cp", "dp")  # first found wins: dp_cp spans dp x cp when cp > 1


def dp_ranks(data: Mapping[str, object] | None) -> tuple[int, ...] | None:
    """The global ranks of a unit's data-parallel group from its profiler_metadata.json
    (layout.metadata); None when the metadata lacks it."""
    groups = data.get("parallel_group_info") if data else None
    if not isinstance(groups, dict):
        return None
    by_name = {g.get("group_name"): g for g in groups.values() if isinstance(g, dict)}
    for name in DP_GROUP_NAMES:
        ranks = by_name.get(name, {}).get("global_ranks")
        if isinstance(ranks, list) and all(isinstance(r, int) for r in ranks):
            return tuple(sorted(ranks))
    return None


def peer_groups(
    ranks: Sequence[RankBreakdown], dp_of: dict[str, tuple[int, ...] | None]
) -> tuple[tuple[str, ...], ...]:
    """Rank names grouped by data-parallel group; one group of all when nothing is known."""
    names = [r.rank for r in ranks]
    if not any(dp_of.get(n) for n in names):
        return (tuple(names),) if names else ()
    groups: dict[object, list[str]] = {}
    for name in names:
        groups.setdefault(dp_of.get(name) or name, []).append(name)
    return tuple(tuple(g) for g in groups.values())


def _computing(rank: RankBreakdown) -> float | None:
    return next((p.seconds for p in rank.phases if p.phase in ("computing", "fp_bp")), None)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def judge(
    ranks: Sequence[RankBreakdown], groups: Sequence[Sequence[str]], t: Thresholds
) -> tuple[tuple[RankSpread, ...], tuple[Bottleneck, ...]]:
    """Spreads within peer groups (the widest per phase), slow_rank, pipeline_imbalance."""
    by_name = {r.rank: r for r in ranks}
    widest: dict[str, RankSpread] = {}
    for group in groups:
        for s in spread([by_name[n] for n in group], t):
            if s.phase not in widest or s.spread_ratio > widest[s.phase].spread_ratio:
                widest[s.phase] = s
    spreads = tuple(widest.values())
    found = [_slow_rank(s) for s in spreads if s.phase in ("computing", "fp_bp") and s.flagged]
    if not found:
        found = [f for group in groups if (f := _late_rank([by_name[n] for n in group], t))]
    imbalance = _pipeline(ranks, groups, by_name, t)
    return spreads, tuple(found) + ((imbalance,) if imbalance else ())


def _slow_rank(s: RankSpread) -> Bottleneck:
    return finding(
        "slow_rank",
        f"{s.slowest_rank} computes {s.spread_ratio:.0%} of the step longer than its fastest "
        f"data-parallel peer {s.fastest_rank}; the peers wait for it",
        s.spread_ratio,
        0.0,
    )


def _late_rank(group: Sequence[RankBreakdown], t: Thresholds) -> Bottleneck | None:
    """msprof-analyze's slow rank by communication: peers that compute alike but one spends far
    longer in communication, i.e. waits in the collectives for the peer that spends the least
    there (it reaches them late for a reason outside its compute: host, input, step start)."""
    by_phase = {s.phase: s for s in spread(group, t)}
    comm = by_phase.get("communication")
    if comm is None or not comm.flagged:
        return None
    compute = by_phase.get("computing") or by_phase.get("fp_bp")
    seconds = {r.rank: p.seconds for r in group for p in r.phases if p.phase == "communication"}
    gap = seconds[comm.slowest_rank] - seconds[comm.fastest_rank]
    alike = (
        ""
        if compute is None
        else f" while their compute differs by only {compute.spread_ratio:.1%} of the step"
    )
    return finding(
        "slow_rank",
        f"{comm.fastest_rank} reaches the collectives late: its data-parallel peer "
        f"{comm.slowest_rank} spends {gap * 1e3:.1f} ms more per step in communication "
        f"({comm.spread_ratio:.0%} of the step, threshold {t.rank_spread_ratio:.0%}){alike}, "
        f"waiting for it; the delay lies outside {comm.fastest_rank}'s device compute (host "
        "launch, input, the start of its step)",
        comm.spread_ratio,
        t.rank_spread_ratio,
    )


def _pipeline(
    ranks: Sequence[RankBreakdown],
    groups: Sequence[Sequence[str]],
    by_name: dict[str, RankBreakdown],
    t: Thresholds,
) -> Bottleneck | None:
    stages = []
    for group in groups:
        values = [v for n in group if (v := _computing(by_name[n])) is not None]
        if values:
            stages.append((_mean(values), group))
    if len(stages) < 2 or not ranks:
        return None
    step = _mean([r.step_seconds for r in ranks])
    (low, light), (high, heavy) = min(stages), max(stages)
    ratio = (high - low) / step if step > 0 else 0.0
    if ratio <= t.pipeline_imbalance_ratio:
        return None
    return finding(
        "pipeline_imbalance",
        f"data-parallel groups ({', '.join(heavy)}) compute {high * 1e3:.1f} ms per step, "
        f"({', '.join(light)}) {low * 1e3:.1f} ms: a gap of {ratio:.0%} of the step between "
        f"pipeline stages (threshold {t.pipeline_imbalance_ratio:.0%})",
        ratio,
        t.pipeline_imbalance_ratio,
    )
