"""The size of a finding: the time per step it puts at stake, and how that was computed.

A rule's value says how far over its threshold the profile is, in the rule's own unit (a share
of the step, of operator time, a count of tasks); the size puts every finding on one scale, so
findings can be ranked and an alert or a dashboard can weigh them. Where the profile does not
measure the time a cause costs, the size says so (seconds None) rather than guess."""

from __future__ import annotations

from collections.abc import Callable

from npumon.daemon.analysis.evidence import Evidence
from npumon.daemon.model.profile import Bottleneck, FindingSize

# the rule's value is a share of the step time: the phase it measures
STEP_SHARES = {
    "communication": "communication not overlapped per step",
    "host_bound": "device free time per step",
    "input_pipeline": "input pipeline time per step",
    "slow_preparing": "preparing time per step",
    "slow_rank": "the slowest rank's extra time per step over its fastest peer",
    "pipeline_imbalance": "the compute gap per step between pipeline stages",
}
# the rule's value is a share of operator time: that share of the mean computing time
OP_SHARES = {
    "compute_bound": "Conv/MatMul (or Softmax) operator time",
    "format_conversion": "format conversion and copy operator time",
    "small_ops": "time of operators shorter than small_op_us",
}


def _computing_ms(e: Evidence) -> float | None:
    return e.phase_ms.get("computing", e.phase_ms.get("fp_bp"))


def _share(b: Bottleneck, e: Evidence) -> FindingSize:
    how = STEP_SHARES[b.kind]
    if e.step_ms is None:
        return FindingSize(None, b.value, f"{how}: the finding's share of the step")
    return FindingSize(
        b.value * e.step_ms / 1e3, b.value, f"{how}: share of the step x mean step time"
    )


def _op_share(b: Bottleneck, e: Evidence) -> FindingSize:
    how = OP_SHARES[b.kind]
    computing = _computing_ms(e)
    if computing is None or not e.step_ms:
        return FindingSize(None, None, f"{how}: a share of operator time; no computing phase")
    seconds = b.value * computing / 1e3
    return FindingSize(
        seconds,
        seconds * 1e3 / e.step_ms,
        f"{how}: share of operator time x mean computing time per step",
    )


def _ai_cpu(b: Bottleneck, e: Evidence) -> FindingSize:
    computing = _computing_ms(e)
    if e.ai_cpu_ratio is None or computing is None or not e.step_ms:
        return FindingSize(None, None, "AI CPU operator time: not measured per step")
    seconds = e.ai_cpu_ratio * computing / 1e3
    return FindingSize(
        seconds,
        seconds * 1e3 / e.step_ms,
        "AI CPU operator time: share of operator time x mean computing time per step",
    )


def _compile(b: Bottleneck, e: Evidence) -> FindingSize:
    h = e.host
    how = "host time in aclopCompileAndExecute per step (the host timeline)"
    if h is None or h.compile_ms is None:
        return FindingSize(None, None, "on-line compilation: its host time is not measured")
    return FindingSize(h.compile_ms / 1e3, h.compile_ratio, how)


SIZERS: dict[str, Callable[[Bottleneck, Evidence], FindingSize]] = {
    **dict.fromkeys(STEP_SHARES, _share),
    **dict.fromkeys(OP_SHARES, _op_share),
    "ai_cpu_fallback": _ai_cpu,
    "online_compile": _compile,
    "dynamic_shape": _compile,  # it fires only when the host compiled at run time
}


def size_of(b: Bottleneck, e: Evidence) -> FindingSize:
    """The finding's own size if its rule gave one, else by its kind; unmeasured: None."""
    if b.size is not None:
        return b.size
    sizer = SIZERS.get(b.kind)
    if sizer is None:
        return FindingSize(None, None, "not measured: the profile does not time this cause")
    return sizer(b, e)


def sized(findings: tuple[Bottleneck, ...], e: Evidence) -> tuple[Bottleneck, ...]:
    """Each finding with its size, the largest first (unmeasured ones last, in rule order)."""
    with_size = [
        Bottleneck(b.kind, b.detail, b.advice, b.value, b.threshold, size_of(b, e))
        for b in findings
    ]
    return tuple(
        sorted(
            with_size,
            key=lambda b: -(b.size.seconds_per_step if b.size and b.size.seconds_per_step else 0),
        )
    )
