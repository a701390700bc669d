"""ai_cpu_fallback: operators that fell back to the AI CPU (tasks of at least ai_cpu_min_op_us)."""

from __future__ import annotations

from npumon.daemon.analysis.evidence import Evidence
from npumon.daemon.analysis.findings import finding
from npumon.daemon.model.profile import Bottleneck, Thresholds

KIND = "ai_cpu_fallback"
ORDER = 70
OPERATOR_TABLE = True  # judges the operator tables: withheld when they cover too little
ADVICE = (
    "Operators fall back to the AI CPU. Check their input dtypes (float64, "
    "int64 and complex push ops to the AI CPU), replace them with AI Core-supported "
    "equivalents, or move them out of the hot loop."
)


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    """msprof-analyze's AICPU check: any AI CPU task of >= 20 us, named."""
    count = e.ai_cpu_tasks
    if count is None or count < t.ai_cpu_min_tasks:
        return ()
    share = "" if e.ai_cpu_ratio is None else f", {e.ai_cpu_ratio:.1%} of operator time"
    severe = (
        f" (above the checklist's {t.ai_cpu_ratio:.0%}: severe)"
        if e.ai_cpu_ratio is not None and e.ai_cpu_ratio > t.ai_cpu_ratio
        else ""
    )
    names = ", ".join(e.ai_cpu_ops[:8]) or "unnamed"
    return (
        finding(
            ADVICE,
            KIND,
            f"{count} AI CPU task(s) of >= {t.ai_cpu_min_op_us:g} us ({names}){share}{severe}",
            float(count),
            float(t.ai_cpu_min_tasks),
        ),
    )
