"""The step statistics of a profile, over its step tables' rows (readers/steptime.py): which
steps count (warm-up steps, ``warmup_steps``, and a capture's partial first or last step,
``partial_step_ratio``, left out), the per-rank means, and the spread of each phase between
ranks, flagged over ``rank_spread_ratio`` (rules/slow_rank.py judges the flags; the report
shows them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from npumon.daemon.analysis.readers.steptime import StepRow, percentile
from npumon.daemon.model.profile import PhaseStat, RankBreakdown, RankSpread, StepStats, Thresholds

SPREAD_PHASES = ("computing", "fp_bp", "communication", "free")
# torch_npu's Preparing is the part of Free the host spends preparing the step; its Overlapped
# is the communication that ran while the device computed, the part of Computing it hides
SUB_PHASES = {"preparing": "free", "communication_overlapped": "computing"}


@dataclass(frozen=True, slots=True)
class StepResult:
    step: StepStats | None
    phases: tuple[PhaseStat, ...]
    ranks: tuple[RankBreakdown, ...]
    spread: tuple[RankSpread, ...]
    left_out: tuple[str, ...] = ()  # partial edge steps, one sentence each


def skip_warmup(rows: list[StepRow], warmup: int) -> list[StepRow]:
    """Drop steps whose ID is <= warmup (a capture attached later has none); never drop all."""
    kept = [r for r in rows if r.key is None or r.key > warmup]
    return kept or rows


def partial_edges(rows: list[StepRow], ratio: float) -> tuple[list[StepRow], list[StepRow]]:
    """(kept, left out): the first or last step of a capture is partial, and left out, when it is
    shorter than ``ratio`` times the median of the steps between them (a capture that starts or
    stops mid-step records only part of that step). Needs three steps to judge."""
    if len(rows) < 3 or ratio <= 0:
        return rows, []
    median = percentile([r.total_us for r in rows[1:-1]], 50)
    cut = {i for i in (0, len(rows) - 1) if rows[i].total_us < ratio * median}
    return (
        [r for i, r in enumerate(rows) if i not in cut],
        [r for i, r in enumerate(rows) if i in cut],
    )


def _left_out_note(rank: str, row: StepRow, rows: list[StepRow], ratio: float) -> str:
    median = percentile([r.total_us for r in rows[1:-1]], 50)
    step = "step" if row.key is None else f"step {row.key}"
    return (
        f"{rank}: {step} left out of the step statistics: {row.total_us / 1e3:.3f} ms, under "
        f"{ratio:.0%} of the median step ({median / 1e3:.3f} ms): the capture started or "
        "stopped inside it (rule: a first or last step shorter than partial_step_ratio of "
        "the median)"
    )


def _stats(totals_us: Sequence[float]) -> StepStats | None:
    if not totals_us:
        return None
    seconds = [t / 1e6 for t in totals_us]
    return StepStats(
        len(seconds),
        sum(seconds) / len(seconds),
        percentile(seconds, 50),
        percentile(seconds, 90),
        percentile(seconds, 99),
    )


def _phase_stats(rows: Sequence[StepRow], names: Sequence[str]) -> tuple[PhaseStat, ...]:
    mean_total = sum(r.total_us for r in rows) / len(rows)
    stats = []
    for name in names:
        known = [v for r in rows if (v := r.phases.get(name)) is not None]
        if known:
            mean = sum(known) / len(known)
            ratio = mean / mean_total if mean_total > 0 else None
            stats.append(PhaseStat(name, mean / 1e6, ratio, SUB_PHASES.get(name)))
    return tuple(stats)


def spread(ranks: Sequence[RankBreakdown], t: Thresholds) -> tuple[RankSpread, ...]:
    if len(ranks) < 2:
        return ()
    mean_step = sum(r.step_seconds for r in ranks) / len(ranks)
    spreads = []
    for phase in SPREAD_PHASES:
        values = {r.rank: p.seconds for r in ranks for p in r.phases if p.phase == phase}
        if len(values) < 2 or mean_step <= 0:
            continue
        slow, fast = max(values, key=values.__getitem__), min(values, key=values.__getitem__)
        ratio = (values[slow] - values[fast]) / mean_step
        spreads.append(RankSpread(phase, ratio, slow, fast, ratio > t.rank_spread_ratio))
    return tuple(spreads)


def analyse_rows(
    ranks: Sequence[tuple[str, list[StepRow]]], names: Sequence[str], t: Thresholds
) -> StepResult:
    """Per-rank means; the workload's step and phases are those of its slowest rank (the others
    wait for it), so the phase line adds up to the step line."""
    breakdowns, kept = [], []
    notes: list[str] = []
    for rank, raw in ranks:
        whole, cut = partial_edges(raw, t.partial_step_ratio)
        notes.extend(_left_out_note(rank, r, raw, t.partial_step_ratio) for r in cut)
        rows = skip_warmup(whole, t.warmup_steps)
        if not rows:
            continue
        kept.append(rows)
        mean_total = sum(r.total_us for r in rows) / len(rows)
        breakdowns.append(
            RankBreakdown(
                rank, rows[0].device_id, len(rows), mean_total / 1e6, _phase_stats(rows, names)
            )
        )
    if not kept:
        return StepResult(None, (), (), (), tuple(notes))
    slowest = max(range(len(kept)), key=lambda i: (breakdowns[i].step_seconds, -i))
    rows = kept[slowest]
    return StepResult(
        _stats([r.total_us for r in rows]),
        _phase_stats(rows, names),
        tuple(breakdowns),
        spread(breakdowns, t),
        tuple(notes),
    )


def spreads(
    ranks: Sequence[RankBreakdown], groups: Sequence[Sequence[str]], t: Thresholds
) -> tuple[tuple[tuple[RankSpread, ...], ...], tuple[RankSpread, ...]]:
    """Each group's spreads per phase, and the widest per phase over the groups."""
    by_name = {r.rank: r for r in ranks}
    per_group = tuple(spread([by_name[n] for n in group], t) for group in groups)
    widest: dict[str, RankSpread] = {}
    for group_spreads in per_group:
        for s in group_spreads:
            if s.phase not in widest or s.spread_ratio > widest[s.phase].spread_ratio:
                widest[s.phase] = s
    return per_group, tuple(widest.values())
