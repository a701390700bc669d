"""slow_preparing: Preparing (the step's start to its first device task) over its threshold with
no data loader time that explains it: the figures the profile has, and "cause unknown"."""

from __future__ import annotations

from npumon.daemon.analysis.evidence import Evidence
from npumon.daemon.analysis.findings import figures, ms, over, share
from npumon.daemon.analysis.rules import input_pipeline
from npumon.daemon.model.profile import Bottleneck, Thresholds

KIND = "slow_preparing"
ORDER = 20
ADVICE = (
    "The device waits long before each step's first task (Preparing) and the "
    "profile does not show why. Open trace_view.json at the start of a step and look at what "
    "the host does before the first kernel launch: the data loader (enumerate(DataLoader)), "
    "on-line compilation (AscendCL@aclopCompileAndExecute), operator launch (TASK_QUEUE_ENABLE=2, "
    "CPU binding with CPU_AFFINITY_CONF) and host syncs (.item(), .cpu()). A capture at Level1 "
    "with the CANN API layer (api_statistic.csv) lets npumon measure compilation."
)


def preparing_split(e: Evidence) -> str:
    """What the profile shows of Preparing: the data loader, on-line compilation, the rest."""
    prep = e.phase_ms.get("preparing")
    h = e.host
    loader = (
        "the data loader's time is not in the profile (no trace_view.json or PYTORCH_API table)"
        if h is None or h.data_loader_ms is None
        else "no data loader range in the profile (a job without a DataLoader)"
        if h.data_loader_ms == 0
        else f"the data loader {ms(h.data_loader_ms)}{share(h.data_loader_ratio)}"
    )
    compile_ = (
        f"on-line compilation {ms(h.compile_ms)}{share(h.compile_ratio)} (host time "
        "anywhere in the step)"
        if h and h.compile_ms is not None
        else "on-line compilation is not in the profile (no api_statistic.csv or CANN_API "
        "table: Level1 and up)"
    )
    loader_ms = h.data_loader_ms if h else None
    rest = (
        f"; the other {prep - loader_ms:.3f} ms (host launch, syncs, other host work) is "
        "not measured"
        if prep is not None and loader_ms is not None
        else ""
    )
    return f"{loader}; {compile_}{rest}"


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    """Preparing over its threshold with no data loader time that explains it: the figures the
    profile has, and "cause unknown"."""
    if e.phase_ratios.get("data_aug") is not None or input_pipeline.judge(e, t):
        return ()
    return over(
        ADVICE,
        KIND,
        e.phase_ratios.get("preparing"),
        t.input_pipeline_ratio,
        "Preparing (from the step's start to its first device task) is {value:.0%} of the step "
        f"({figures(e.phase_ms.get('preparing'), e.step_ms)}threshold "
        "{threshold:.0%}), cause unknown: "
        + preparing_split(e).replace("{", "{{").replace("}", "}}"),
    )
