"""small_packets: msprof-analyze's packet rule, per rank: communication ops that move less than a
transport's small-packet size (readers/comm.py says how its counts differ from msprof-analyze's)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from npumon.daemon.analysis.evidence import PACKET_LINKS, Evidence, PacketSizes
from npumon.daemon.analysis.findings import finding, transfer_tier
from npumon.daemon.model.profile import Bottleneck, Thresholds

KIND = "small_packets"
ORDER = 150
ADVICE = (
    "Many communication operations move small messages, so launch and "
    "handshake costs dominate and the host may become the bottleneck. In data parallelism "
    "increase the batch size or gradient accumulation (fewer, larger all-reduces; bigger "
    "gradient buckets); with ZeRO-3 use ZeRO-2/1 if memory allows; use fused (affinity) "
    "optimizers, which issue fewer collectives."
)

RANKS_NAMED = 3  # ranks per transport the small_packets finding names


@dataclass(frozen=True, slots=True)
class PacketStat:
    """A rank's op entries over a transport, and those of them that moved less than its
    small-packet size."""

    rank: str
    link_type: str
    ops: int
    small_ops: int
    small_ms: float  # transit time of the small ones
    min_mb: float


def packet_stat(p: PacketSizes, t: Thresholds) -> PacketStat:
    """The op entries of ``p`` under the transport's small-packet size (small_packet_sdma_mb,
    small_packet_rdma_mb)."""
    min_mb = t.small_packet_sdma_mb if p.link_type == "SDMA" else t.small_packet_rdma_mb
    small = 0
    small_ms = 0.0
    for mb, ms in p.sizes:
        if mb < min_mb:
            small += 1
            small_ms += ms
    return PacketStat(p.rank, p.link_type, len(p.sizes), small, small_ms, min_mb)


def _small_packets(
    packets: Sequence[PacketStat], t: Thresholds, tier: str = ""
) -> tuple[Bottleneck, ...]:
    """msprof-analyze's packet rule, per rank: over small_packet_ratio of a rank's ops over a
    transport move less than its minimum size (SDMA 16 MB, RDMA 1 MB); one finding naming, per
    transport, the ranks over it (the worst RANKS_NAMED)."""
    over = [p for p in packets if p.ops and p.small_ops / p.ops > t.small_packet_ratio]
    if not over:
        return ()
    parts = []
    for link in PACKET_LINKS:
        judged = [p for p in packets if p.link_type == link and p.ops]
        bad = sorted(
            (p for p in over if p.link_type == link),
            key=lambda p: (-p.small_ops / p.ops, p.rank),
        )
        if not bad:
            continue
        named = "; ".join(
            f"{p.rank}: {p.small_ops} of {p.ops} ({p.small_ops / p.ops:.0%}), "
            f"{p.small_ms:.2f} ms of transfer"
            for p in bad[:RANKS_NAMED]
        )
        parts.append(
            f"{link} transfers under {bad[0].min_mb:g} MB in {len(bad)} of {len(judged)} "
            f"rank(s), worst: {named}"
        )
    worst = max(p.small_ops / p.ops for p in over)
    return (
        finding(
            ADVICE,
            KIND,
            ". ".join(parts) + f" (threshold {t.small_packet_ratio:.0%} of a rank's ops over "
            "its captured steps; msprof-analyze judges one rank, the one of the lowest SDMA "
            "bandwidth, and counts the Total Op Info entries, sums of a step's ops, as ops)" + tier,
            worst,
            t.small_packet_ratio,
        ),
    )


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    c = e.communication
    if c is None:
        return ()
    stats = [packet_stat(p, t) for p in c.packets]
    return _small_packets(stats, t, transfer_tier(e.transfer_ratio, t))
