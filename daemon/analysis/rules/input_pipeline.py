"""input_pipeline: the device waits for input. Graph mode: Data Aug Bound, the device's measured
wait for the next batch; eager mode: the data loader's own time where the profile measured it
(Preparing alone holds host launch and compilation too: that is slow_preparing)."""

from __future__ import annotations

from npumon.daemon.analysis.evidence import Evidence
from npumon.daemon.analysis.findings import figures, ms, over, share
from npumon.daemon.model.profile import Bottleneck, Thresholds

KIND = "input_pipeline"
ORDER = 10
ADVICE = (
    "The device waits for input between steps. Use more DataLoader workers, "
    "pin_memory and prefetch (or tf.data prefetch / MindData parallel workers); move "
    "augmentation off the critical path or onto the device (DVPP); check storage throughput."
)


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    """Graph mode: Data Aug Bound, the device's measured wait for the next batch. Eager mode:
    the data loader's own time where the profile measured it; Preparing alone holds host
    launch and compilation too, so it is never taken for the data loader (_slow_preparing)."""
    aug = e.phase_ratios.get("data_aug")
    if aug is not None:
        return over(
            ADVICE,
            KIND,
            aug,
            t.input_pipeline_ratio,
            "Data Aug Bound (the device waiting for the next batch between iterations) is "
            "{value:.0%} of the iteration ("
            f"{figures(e.phase_ms.get('data_aug'), e.step_ms, 'iteration')}"
            "threshold {threshold:.0%})",
        )
    loader = e.host.data_loader_ratio if e.host else None
    if e.host is None or loader is None:
        return ()
    return over(
        ADVICE,
        KIND,
        loader,
        t.data_loader_ratio,
        "the data loader (its enumerate(DataLoader)...__next__ ranges: trace_view.json or "
        "PYTORCH_API) takes "
        f"{{value:.1%}} of the step ({figures(e.host.data_loader_ms, e.step_ms)}"
        f"threshold {{threshold:.0%}}); Preparing is {ms(e.phase_ms.get('preparing'))}"
        + share(e.phase_ratios.get("preparing")),
    )
