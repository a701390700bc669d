"""The operator counts a threshold decides, over a profile's operator tables (readers/ops.py's
OpFacts): AI CPU tasks of at least ``ai_cpu_min_op_us`` by op type (msprof-analyze's AI CPU
check), and compute operators shorter than ``small_op_us``. The summary reports them and the
rules (ai_cpu_fallback, small_ops) judge them."""

from __future__ import annotations

from dataclasses import dataclass

from npumon.daemon.analysis.readers.ops import AiCpuRows, ByName, OpFacts
from npumon.daemon.model.profile import Thresholds


@dataclass(frozen=True, slots=True)
class OpCounts:
    ai_cpu_ops: ByName | None  # (us, tasks) by op type; None when no table has a core type
    small_count: int  # compute operators (tasks) shorter than small_op_us

    @property
    def ai_cpu_us(self) -> float | None:
        return None if self.ai_cpu_ops is None else sum(u for u, _ in self.ai_cpu_ops.values())

    @property
    def ai_cpu_count(self) -> int | None:
        return None if self.ai_cpu_ops is None else sum(n for _, n in self.ai_cpu_ops.values())

    def ai_cpu_names(self) -> tuple[str, ...]:
        """The AI CPU op types, most time first."""
        found = self.ai_cpu_ops or {}
        return tuple(sorted(found, key=lambda k: (-found[k][0], k)))


def _ai_cpu(table: AiCpuRows, min_us: float) -> ByName:
    hits = table.rows[table.rows[table.judged] >= min_us]
    by_type = hits.groupby("op_type", observed=True)
    sums = by_type[table.value].sum()
    counts = by_type[table.count].sum() if table.count else by_type.size()
    return {str(k): (float(sums[k]), int(counts[k])) for k in sums.index}


def count(facts: OpFacts, t: Thresholds) -> OpCounts:
    """Per table, then summed over the tables in their order."""
    ai_cpu: ByName | None = None
    if facts.ai_cpu is not None:
        ai_cpu = {}
        for table in facts.ai_cpu:
            for key, (us, n) in _ai_cpu(table, t.ai_cpu_min_op_us).items():
                old_us, old_n = ai_cpu.get(key, (0.0, 0))
                ai_cpu[key] = (old_us + us, old_n + n)
    small = 0
    for times in facts.op_times:
        short = times.us < t.small_op_us
        small += int(short.sum() if times.counts is None else times.counts[short].sum())
    return OpCounts(ai_cpu, small)
