"""online_compile: operators compiled on line (aclopCompileAndExecute), by msprof-analyze's call
count or by their host time over the step."""

from __future__ import annotations

from npumon.daemon.analysis.evidence import Evidence
from npumon.daemon.analysis.findings import finding, ms, share
from npumon.daemon.model.profile import Bottleneck, Thresholds

KIND = "online_compile"
ORDER = 30
ADVICE = (
    "Operators are compiled on line while the job runs (aclopCompileAndExecute: "
    "msprof-analyze's operator dispatch issue). Put torch_npu.npu.set_compile_mode("
    "jit_compile=False) and torch_npu.npu.config.allow_internal_format = False at the start of "
    "the script so that the prebuilt binary kernels are used; with dynamic shapes, pad them to a "
    "few buckets so that each shape is compiled once."
)


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    """msprof-analyze's operator dispatch rule (at least 20 aclopCompileAndExecute calls in a
    rank's capture), or their host time over the share of the step msprof-analyze ranks high
    (5 %)."""
    h = e.host
    if h is None or h.compile_calls is None or h.compile_calls == 0:
        return ()
    by_count = h.compile_calls >= t.online_compile_min_calls
    by_time = h.compile_ratio is not None and h.compile_ratio >= t.online_compile_ratio
    if not (by_count or by_time):
        return ()
    per_step = "" if h.compile_per_step is None else f"{h.compile_per_step:.3g} per step, "
    detail = (
        f"aclopCompileAndExecute (on-line operator compilation): {per_step}up to "
        f"{h.compile_calls} in one rank's capture, {ms(h.compile_ms)} of host time per step"
        f"{share(h.compile_ratio)} (rule: >= {t.online_compile_min_calls} calls in a rank's "
        f"capture, msprof-analyze's, or >= {t.online_compile_ratio:.0%} of the step)"
    )
    if by_count:
        return (
            finding(
                ADVICE, KIND, detail, float(h.compile_calls), float(t.online_compile_min_calls)
            ),
        )
    return (finding(ADVICE, KIND, detail, h.compile_ratio or 0.0, t.online_compile_ratio),)
