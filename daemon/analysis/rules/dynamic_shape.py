"""dynamic_shape: every operator task ran with a dynamic shape (msprof-analyze's rule) and the
host compiled operators at run time (aclopCompileAndExecute in its timeline). Without the host
timeline, or with no compilation in it, dynamic shapes cost nothing the profile shows (binary
kernels, the default on Atlas A2, report `dynamic`): the rule does not fire."""

from __future__ import annotations

from npumon.daemon.analysis.evidence import Evidence
from npumon.daemon.analysis.findings import finding
from npumon.daemon.model.profile import Bottleneck, Thresholds

KIND = "dynamic_shape"
ORDER = 90
OPERATOR_TABLE = True  # judges the operator tables: withheld when they cover too little
ADVICE = (
    "Operators run with dynamic shapes and may be compiled at run time. Fix "
    "shapes (pad to buckets) or set torch_npu.npu.set_compile_mode(jit_compile=False); if that "
    "is already set (the default on Atlas A2), binary kernels report `dynamic` and this can be "
    "ignored."
)


def _all_dynamic(e: Evidence, t: Thresholds) -> int | None:
    """The dynamic task count of a profile whose tasks are all dynamic (msprof-analyze's rule);
    None otherwise. Binary kernels (jit_compile=False) report dynamic beside static MatMuls:
    that is not a finding."""
    count = e.dynamic_shape_ops
    if count is None or count < t.dynamic_shape_min_ops or count == 0 or (e.static_ops or 0) > 0:
        return None
    return count


def cannot_judge(e: Evidence, t: Thresholds) -> str | None:
    """All tasks dynamic, but no host timeline to tell run-time compilation from binary
    kernels."""
    count = _all_dynamic(e, t)
    if count is None or e.host is not None:
        return None
    return (
        f"all {count} operator tasks ran with dynamic shapes, but the profile has no host "
        "timeline to show whether operators were compiled at run time (binary kernels report "
        "dynamic too): capture with the CPU activity (torch_npu) or --ascendcl=on (msprof)"
    )


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    count = _all_dynamic(e, t)
    if count is None:
        return ()
    if e.host is None or not e.host.compile_calls:
        # binary kernels (jit_compile=False, Atlas A2's default) and msprof captures of
        # hand-written kernels report dynamic too; only compiling at run time costs time
        return ()
    return (
        finding(
            ADVICE,
            KIND,
            f"all {count} operator tasks ran with dynamic shapes (rule: fires only when no "
            "operator ran static)",
            float(count),
            float(t.dynamic_shape_min_ops),
        ),
    )
