"""Step-aligned captures without a coordinator: every node running ranks of one job captures in
the same wall-clock slot, derived from the job's identity and the capture interval alone.

The slot of a job starts at ``k * interval + offset``, ``offset`` a stable hash of the job's
name modulo the interval: one job's nodes agree (same name, same interval), different jobs
spread over the interval. Each node's capture begins at the first step after the slot and runs
the same number of steps. Assumed: the nodes' clocks agree (NTP, within a fraction of a step) and
the training is synchronous (every rank runs step k at about the same time), so the captures of
all nodes cover the same global steps; bench/align_bench.py measures the spread.
"""

from __future__ import annotations

import hashlib
import math

# A node that reaches a slot later than this (another capture held the node-wide lock) skips
# it rather than capture other steps than the job's other nodes: a late start of d seconds
# captures d / step time steps later than they do.
GRACE_SECONDS = 0.5
# How far ahead a slot is taken: the daemon's capture tick (app.CAPTURE_TICK_SECONDS); a slot
# starting within it is waited for, so the nodes start together, not at their own ticks.
LEAD_SECONDS = 15.0


def slot_offset(job: str, interval: float) -> float:
    """Seconds into each interval at which ``job``'s slot starts (0 <= offset < interval)."""
    digest = int.from_bytes(hashlib.sha256(job.encode()).digest()[:8], "big")
    return float(digest % max(1, int(interval)))


def slot_start(job: str, interval: float, wall: float) -> float:
    """The start (Unix seconds) of ``job``'s latest slot at or before ``wall``."""
    offset = slot_offset(job, interval)
    return math.floor((wall - offset) / interval) * interval + offset
