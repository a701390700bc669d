"""What changed between two captures of a workload: per phase, operator type, collective and
rank, in seconds per step, the largest change first (msprof-analyze compare's question, asked of
two summaries). Pure Python on summaries: the daemon, the worker and `npumon analyze --against`
share it."""

from __future__ import annotations

from npumon.daemon.model.profile import Comparison, PartDelta, ProfileSummary

PART_KINDS = ("phase", "op_type", "collective", "rank")
COMPUTE_PHASES = ("computing", "fp_bp")  # torch_npu's and graph mode's compute part of the step


def parts(s: ProfileSummary) -> dict[tuple[str, str], float]:
    """Each part's seconds per step: a phase's mean; an operator type's share of operator time
    times the mean compute phase (the time operators run per step); a collective's task time
    over the step times the mean step; a rank's mean step."""
    found: dict[tuple[str, str], float] = {}
    for p in s.phases:
        found[("phase", p.phase)] = p.seconds
    compute = next((p.seconds for c in COMPUTE_PHASES for p in s.phases if p.phase == c), None)
    if compute is not None:
        for o in s.op_time_ratio:
            key = ("op_type", o.op_type)
            found[key] = found.get(key, 0.0) + o.ratio * compute
    if s.step is not None:
        for c in s.communication:
            if c.ratio is not None:
                found[("collective", c.collective)] = c.ratio * s.step.mean_seconds
    for r in s.ranks:
        found[("rank", r.rank)] = r.step_seconds
    return found


def compare(
    current: ProfileSummary, reference: ProfileSummary, reference_capture: str | None = None
) -> Comparison:
    """``current`` against ``reference``: every part either has, the largest change first (a
    part only the reference has changed by minus its time)."""
    now, before = parts(current), parts(reference)
    deltas = [
        PartDelta(
            kind,
            part,
            now.get((kind, part), 0.0) - before.get((kind, part), 0.0),
            before.get((kind, part)),
        )
        for kind, part in sorted(now.keys() | before.keys())
    ]
    deltas.sort(key=lambda d: (-abs(d.seconds_per_step), PART_KINDS.index(d.part_kind), d.part))
    ratio = None
    if current.step is not None and reference.step is not None and reference.step.p50_seconds > 0:
        ratio = current.step.p50_seconds / reference.step.p50_seconds - 1.0
    return Comparison(reference.capture_time_seconds, reference_capture, ratio, tuple(deltas))


def format_comparison(c: Comparison, top: int = 20) -> str:
    """The comparison as text: the median step's change, then the parts, largest first."""
    lines = []
    if c.step_change_ratio is not None:
        lines.append(f"Median step: {c.step_change_ratio:+.1%} against the reference")
    lines.append(f"What changed (ms per step, largest first; {len(c.deltas)} parts):")
    for d in c.deltas[:top]:
        before = (
            "-"
            if d.reference_seconds_per_step is None
            else (f"{d.reference_seconds_per_step * 1e3:.3f}")
        )
        lines.append(
            f"  {d.seconds_per_step * 1e3:+10.3f}  {d.part_kind:<10} {d.part}  (reference {before})"
        )
    return "\n".join(lines) + "\n"
