"""Which ranks are replicas (do the same work): data-parallel groups from
profiler_metadata.json (the step-phase spreads within each group are stepstats.py's).

torch_npu writes ``profiler_metadata.json`` beside ``profiler_info_N.json``; Megatron / MindSpeed
jobs add ``parallel_group_info``: ``{"group_name_3": {"group_name": "dp", "global_ranks": [2, 3],
...}}``. Ranks of one ``dp`` group (``dp_cp`` with context parallelism) run the same layers on
other data: they are replicas. Ranks of different pipeline stages run other layers, so a gap
between them is a pipeline imbalance (rules/pipeline_imbalance.py), never a slow rank
(rules/slow_rank.py). Without metadata every rank is a replica of the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from npumon.daemon.model.profile import RankBreakdown

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


def replica_groups(
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


# END
