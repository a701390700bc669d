"""slow_link: a link type that moved at least slow_link_min_mb at under slow_link_ratio of its
expected bandwidth; the slowest rank pairs of communication_matrix.json are named."""

from __future__ import annotations

from collections.abc import Sequence

from npumon.daemon.analysis.evidence import Evidence, PairStat
from npumon.daemon.analysis.findings import finding, transfer_tier
from npumon.daemon.model.profile import Bottleneck, LinkStat, Thresholds

KIND = "slow_link"
ORDER = 140
ADVICE = (
    "A link type moves data well below its expected bandwidth. Check the link "
    "(hccn_tool -link / -net_health, HCCS errors), the message sizes (many small packets never "
    "reach full bandwidth: bucket them), and HCCL settings (HCCL_BUFFSIZE, algorithm)."
)

PAIRS_NAMED = 3  # slowest src-dst pairs the slow_link finding names


def slowest_pairs(pairs: Sequence[PairStat], link_type: str, t: Thresholds) -> tuple[PairStat, ...]:
    """The PAIRS_NAMED slowest src-dst pairs of a link type that moved at least
    slow_link_min_mb each (a pair that moved a few bytes is slow by nature)."""
    judged = [
        p
        for p in pairs
        if p.link_type == link_type
        and p.transit_bytes >= t.slow_link_min_mb * 1e6
        and p.bandwidth_bytes_per_second is not None
    ]
    judged.sort(key=lambda p: (p.bandwidth_bytes_per_second or 0.0, p.src, p.dst))
    return tuple(judged[:PAIRS_NAMED])


def _pairs_clause(slowest: Sequence[PairStat], of: int) -> str:
    if not slowest:
        return ""
    named = ", ".join(
        f"{p.src}->{p.dst} {(p.bandwidth_bytes_per_second or 0.0) / 1e9:.1f} GB/s" for p in slowest
    )
    return f"; slowest of its {of} rank pair(s) in communication_matrix.json: {named}"


def _slow_links(
    links: Sequence[LinkStat], t: Thresholds, pairs: Sequence[PairStat] = (), tier: str = ""
) -> tuple[Bottleneck, ...]:
    """A link type that moved at least slow_link_min_mb at under slow_link_ratio of its
    expected bandwidth (link_expected_gbps); the matrix's slowest pairs of it named, and
    ``tier`` (the data-transfer share of the step, findings.transfer_tier) appended."""
    found = []
    for link in links:
        expected = t.link_expected_gbps.get(link.link_type)
        if expected is None or link.bandwidth_bytes_per_second is None:
            continue
        if link.transit_bytes < t.slow_link_min_mb * 1e6:
            continue
        ratio = link.bandwidth_bytes_per_second / (expected * 1e9)
        if ratio < t.slow_link_ratio:
            of = sum(1 for p in pairs if p.link_type == link.link_type)
            found.append(
                finding(
                    ADVICE,
                    KIND,
                    f"{link.link_type} moved {link.transit_bytes / 1e6:.1f} MB at "
                    f"{link.bandwidth_bytes_per_second / 1e9:.1f} GB/s, "
                    f"{ratio:.0%} of the expected "
                    f"{expected:g} GB/s (threshold {t.slow_link_ratio:.0%})"
                    + _pairs_clause(slowest_pairs(pairs, link.link_type, t), of)
                    + tier,
                    ratio,
                    t.slow_link_ratio,
                )
            )
    return tuple(found)


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    c = e.communication
    if c is None:
        return ()
    return _slow_links(c.links, t, c.pairs, transfer_tier(e.transfer_ratio, t))
