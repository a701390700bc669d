"""byte_alignment: msprof-analyze's byte alignment rule: communication ops whose SDMA transfers
are not a multiple of byte_alignment_bytes, when they lose bandwidth: moved slower than the
aligned transfers of the same capture (with no aligned transfer to compare with, or none lost,
the capture cannot show a cost and the rule does not fire)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from npumon.daemon.analysis.evidence import Evidence, OpTransfers
from npumon.daemon.analysis.findings import finding
from npumon.daemon.model.profile import Bottleneck, Thresholds

KIND = "byte_alignment"
ORDER = 160
ADVICE = (
    "Collectives move transfers whose size is not a multiple of 512 bytes, "
    "which SDMA copies less efficiently (msprof-analyze's byte alignment analysis). Make the "
    "communicated tensors' sizes multiples of 512 bytes: pad the gradient buckets or flattened "
    "buffers (DDP bucket_cap_mb, Megatron/DeepSpeed contiguous gradient buffers) and hidden "
    "sizes, or ask the HCCL engineers about the operator's data layout."
)
EXAMPLES_NAMED = 3  # unaligned transfers the finding names


@dataclass(frozen=True, slots=True)
class AlignStat:
    """SDMA transfers over the alignment size (every op entry, step and rank): those whose size
    is not a multiple of it, and the ops that made them."""

    ops: int  # op entries with such transfers
    unaligned_ops: int
    unaligned_bytes: float
    unaligned_ms: float
    aligned_bytes: float
    aligned_ms: float
    examples: tuple[tuple[str, int, float], ...]  # (op, size B, ms), longest first


def align_stat(entries: Sequence[OpTransfers], t: Thresholds) -> AlignStat | None:
    """The transfers over byte_alignment_bytes, split by whether their size is a multiple of
    it; None when no op moved one."""
    ops = unaligned_ops = 0
    sums = [0.0, 0.0, 0.0, 0.0]  # unaligned bytes, ms; aligned bytes, ms
    examples: list[tuple[str, int, float]] = []
    base = t.byte_alignment_bytes
    for entry in entries:
        judged = off = False
        for size, count, ms in entry.transfers:
            if size <= base:
                continue
            judged = True
            if size % base:
                off = True
                sums[0] += size * count
                sums[1] += ms
                examples.append((entry.op, size, ms))
            else:
                sums[2] += size * count
                sums[3] += ms
        ops += judged
        unaligned_ops += off
    if not ops:
        return None
    examples.sort(key=lambda e: (-e[2], e[0], e[1]))
    return AlignStat(
        ops, unaligned_ops, sums[0], sums[1], sums[2], sums[3], tuple(examples[:EXAMPLES_NAMED])
    )


def _slower(stat: AlignStat) -> bool:
    """The unaligned transfers moved fewer bytes per second than the aligned ones; False when
    either bandwidth is unknown."""
    if stat.unaligned_ms <= 0 or stat.aligned_ms <= 0 or stat.aligned_bytes <= 0:
        return False
    return stat.unaligned_bytes / stat.unaligned_ms < stat.aligned_bytes / stat.aligned_ms


def _gbps(size: float, ms: float) -> str:
    return f"{size / ms / 1e6:.1f} GB/s" if ms > 0 else "unknown"


def _byte_alignment(stat: AlignStat | None, t: Thresholds) -> tuple[Bottleneck, ...]:
    """msprof-analyze's byte alignment rule: communication ops whose SDMA transfers over
    byte_alignment_bytes are not a multiple of it; their time and bandwidth against the
    aligned ones'."""
    if stat is None or stat.unaligned_ops < t.byte_alignment_min_ops:
        return ()
    if not _slower(stat):
        return ()  # no bandwidth lost (or no aligned transfer to tell): nothing at stake
    named = ", ".join(f"{op} {size:,} B ({ms:.3f} ms)" for op, size, ms in stat.examples)
    detail = (
        f"{stat.unaligned_ops} of {stat.ops} communication ops (per step and rank) move SDMA "
        f"transfers whose size is not a multiple of "
        f"{t.byte_alignment_bytes} B: {stat.unaligned_ms:.3f} ms of transfer, "
        f"{stat.unaligned_bytes / 1e6:.1f} MB at {_gbps(stat.unaligned_bytes, stat.unaligned_ms)}"
        f" (aligned transfers: {stat.aligned_bytes / 1e6:.1f} MB at "
        f"{_gbps(stat.aligned_bytes, stat.aligned_ms)}); longest: {named} (rule: msprof-analyze's"
        f" byte alignment check, at least {t.byte_alignment_min_ops} such op)"
    )
    return (
        finding(ADVICE, KIND, detail, float(stat.unaligned_ops), float(t.byte_alignment_min_ops)),
    )


def cannot_judge(e: Evidence, t: Thresholds) -> str | None:
    """Enough unaligned transfers, but no aligned one of the same capture to weigh their
    bandwidth against."""
    stat = align_stat(e.communication.transfers, t) if e.communication is not None else None
    if stat is None or stat.unaligned_ops < t.byte_alignment_min_ops:
        return None
    if stat.aligned_ms > 0 and stat.aligned_bytes > 0 and stat.unaligned_ms > 0:
        return None
    return (
        f"{stat.unaligned_ops} communication ops move SDMA transfers that are not a multiple of "
        f"{t.byte_alignment_bytes} B, but the capture has no aligned transfer to compare their "
        "bandwidth with, so what they cost is unknown"
    )


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    if e.communication is None:
        return ()
    return _byte_alignment(align_stat(e.communication.transfers, t), t)
