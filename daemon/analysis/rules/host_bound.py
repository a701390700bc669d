"""host_bound: the device is free inside the step (Free): the host cannot launch work fast enough.
The device-busy tier of the checklist is quoted."""

from __future__ import annotations

from npumon.daemon.analysis.evidence import Evidence
from npumon.daemon.analysis.findings import advice_for, busy_tier, figures, over
from npumon.daemon.model.profile import Bottleneck, Thresholds

KIND = "host_bound"
ORDER = 40
GRAPH_ADVICE = (
    "The device is idle inside the iteration: the host feeds graphs too slowly. "
    "Sink more iterations per launch (iterations_per_loop / dataset sink mode), remove host-side "
    "work and syncs between iterations, bind CPU cores."
)

ADVICE = (
    "The device is idle inside the step (Free): the host cannot launch work fast "
    "enough. Set TASK_QUEUE_ENABLE=2, bind CPU cores (CPU_AFFINITY_CONF), remove host syncs "
    "(.item(), .cpu(), prints) from the loop, and consider graph mode (torchair) or larger "
    "batches."
)


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    """Free inside the step: launch-bound. Waiting for data shows as Preparing (before the
    step's first task); its share and the data loader's measured time are quoted to tell."""
    prep = e.phase_ratios.get("preparing")
    loader = e.host.data_loader_ratio if e.host else None
    told = "" if prep is None else f"; Preparing is {prep:.0%} of the step"
    if prep is not None and loader is not None:
        told += f" and the data loader {loader:.1%}"
        told += (
            ", so the data loader is not the cause"
            if loader <= t.data_loader_ratio
            else ": see input_pipeline first"
        )
    return over(
        advice_for(e.mode, ADVICE, GRAPH_ADVICE),
        KIND,
        e.phase_ratios.get("free"),
        t.free_ratio,
        "the device is free {value:.0%} of the step ("
        f"{figures(e.phase_ms.get('free'), None)}threshold {{threshold:.0%}})"
        + told.replace("{", "{{").replace("}", "}}")
        + busy_tier(e.phase_ratios.get("computing"), t),
    )
