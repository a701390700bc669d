"""slow_rank: one rank of a data-parallel group (its replicas: readers/replicas.py) computes
longer than the others, or reaches the collectives later than them.

A slow rank shows two ways: it computes longer than its replicas, or (msprof-analyze's
"communication" slow rank) its replicas compute alike but spend longer in communication than it
does: they wait in the collectives for the rank that reaches them last.

With the daemon's telemetry of the rank's chip and ports over the capture window
(``Evidence.hardware``), the finding says what they did (throttled, errors, retransmissions), or
that this node saw nothing there.
"""

from __future__ import annotations

from collections.abc import Sequence

from npumon.daemon.analysis.evidence import Evidence
from npumon.daemon.analysis.findings import finding
from npumon.daemon.model.profile import Bottleneck, RankBreakdown, RankSpread, Thresholds
from npumon.daemon.model.rank_hardware import RankHardware

KIND = "slow_rank"
ORDER = 120
ADVICE = (
    "One rank computes longer than the ranks doing the same work (its data-parallel "
    "peers), or reaches the collectives later than them, and the others wait for it in "
    "communication. If it computes longer, compare its kernels with a fast peer's (msprof-analyze "
    "compare) and check its chip (clocks, temperature, ECC); if it only arrives late, check its "
    "host (CPU binding, other processes, host syncs, its data loader) and the timeline around the "
    "first collective of the step. Either way check its share of the data (uneven sequence "
    "lengths)."
)


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    """Over the widest compute spread of any group; else each group's late rank."""
    found = [
        _slow_rank(s, e.hardware)
        for s in e.rank_spread
        if s.phase in ("computing", "fp_bp") and s.flagged
    ]
    if found:
        return tuple(found)
    by_name = {r.rank: r for r in e.ranks}
    late = (
        _late_rank([by_name[n] for n in group], spreads, t, e.hardware)
        for group, spreads in zip(e.replica_groups, e.group_spreads, strict=True)
    )
    return tuple(f for f in late if f is not None)


def explained(rank: str, hardware: Sequence[RankHardware]) -> str:
    """What the rank's own chip and ports did in the window ("; rank 3 on NPU 5: throttled by
    power 31 % of the window; ..."), or that the node saw nothing; empty without telemetry."""
    if not hardware:
        return ""
    mine = next((h for h in hardware if f"rank{h.rank}" == rank), None)
    if mine is None:
        return f"; {rank}: not on a chip of this node the daemon could tie to it"
    return f"; {mine.said()}"


def _slow_rank(s: RankSpread, hardware: Sequence[RankHardware] = ()) -> Bottleneck:
    return finding(
        ADVICE,
        KIND,
        f"{s.slowest_rank} computes {s.spread_ratio:.0%} of the step longer than its fastest "
        f"data-parallel peer {s.fastest_rank}; the peers wait for it"
        + explained(s.slowest_rank, hardware),
        s.spread_ratio,
        0.0,
    )


def _late_rank(
    group: Sequence[RankBreakdown],
    spreads: Sequence[RankSpread],
    t: Thresholds,
    hardware: Sequence[RankHardware] = (),
) -> Bottleneck | None:
    """msprof-analyze's slow rank by communication: replicas that compute alike but one spends far
    longer in communication, i.e. waits in the collectives for the replica that spends the least
    there (it reaches them late for a reason outside its compute: host, input, step start)."""
    by_phase = {s.phase: s for s in spreads}
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
        ADVICE,
        KIND,
        f"{comm.fastest_rank} reaches the collectives late: its data-parallel peer "
        f"{comm.slowest_rank} spends {gap * 1e3:.1f} ms more per step in communication "
        f"({comm.spread_ratio:.0%} of the step, threshold {t.rank_spread_ratio:.0%}){alike}, "
        f"waiting for it; the delay lies outside {comm.fastest_rank}'s device compute (host "
        "launch, input, the start of its step)" + explained(comm.fastest_rank, hardware),
        comm.spread_ratio,
        t.rank_spread_ratio,
    )
