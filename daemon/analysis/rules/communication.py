"""communication: communication not overlapped with compute over its share of the step (what the
step pays for; the overlapped part ran while the device computed and is quoted, not counted);
the checklist's data-transfer tier (transit, not waiting) is quoted."""

from __future__ import annotations

from npumon.daemon.analysis.evidence import Evidence
from npumon.daemon.analysis.findings import figures, over, transfer_tier
from npumon.daemon.model.profile import Bottleneck, Thresholds

KIND = "communication"
ORDER = 50
ADVICE = (
    "Communication is not hidden behind compute. Overlap gradient all-reduce "
    "with backward (bucket size), use a better parallel layout (fewer TP ranks across nodes), "
    "check HCCS/RoCE bandwidth and look for a slow rank that makes others wait."
)


def _hidden(overlapped_ms: float | None) -> str:
    """The overlapped communication as a clause, when the step table gives it."""
    if overlapped_ms is None:
        return ""
    return (
        f"; a further {overlapped_ms:.3f} ms per step of communication ran while the device "
        "computed (overlapped: hidden, not counted)"
    )


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    return over(
        ADVICE,
        KIND,
        e.phase_ratios.get("communication"),
        t.communication_ratio,
        "communication not overlapped is {value:.0%} of the step ("
        f"{figures(e.phase_ms.get('communication'), e.step_ms)}threshold {{threshold:.0%}})"
        + _hidden(e.phase_ms.get("communication_overlapped"))
        + transfer_tier(e.transfer_ratio, t).replace("{", "{{").replace("}", "}}"),
    )
