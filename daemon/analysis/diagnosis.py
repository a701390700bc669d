"""Diagnosis rules of the Ascend tuning checklist, thresholds as defaults, each with its advice."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from npumon.daemon.model.profile import Bottleneck, Thresholds


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the rules look at; None where the data does not say."""

    phase_ratios: dict[str, float] = field(default_factory=dict)
    conversion_ratio: float | None = None  # conversions + copies
    reshape_transpose_ratio: float | None = None
    conv_matmul_ratio: float | None = None
    softmax_ratio: float | None = None
    ai_cpu_ratio: float | None = None
    dynamic_shape_ops: int | None = None
    small_ops_ratio: float | None = None


ADVICE = {
    "input_pipeline": "The device waits for input between steps. Use more DataLoader workers, "
    "pin_memory and prefetch (or tf.data prefetch / MindData parallel workers); move "
    "augmentation off the critical path or onto the device (DVPP); check storage throughput.",
    "host_bound": "The device is idle inside the step (Free): the host cannot launch work fast "
    "enough. Set TASK_QUEUE_ENABLE=2, bind CPU cores (CPU_AFFINITY_CONF), remove host syncs "
    "(.item(), .cpu(), prints) from the loop, and consider graph mode (torchair) or larger "
    "batches.",
    "format_conversion": "Much time goes to layout/dtype conversions and copies (TransData, Cast, "
    "Transpose, TensorMove). Keep tensors in the NPU private format (NC1HWC0/FRACTAL_Z) "
    "between ops, avoid mixing NCHW and NHWC, use AMP consistently instead of manual casts, and "
    "avoid non-contiguous views that force copies.",
    "ai_cpu_fallback": "Operators fall back to the AI CPU. Check their input dtypes (float64, "
    "int64 and complex push ops to the AI CPU), replace them with AI Core-supported "
    "equivalents, or move them out of the hot loop.",
    "communication": "Communication is not hidden behind compute. Overlap gradient all-reduce "
    "with backward (bucket size), use a better parallel layout (fewer TP ranks across nodes), "
    "check HCCS/RoCE bandwidth and look for a slow rank that makes others wait.",
    "compute_bound": "Step time is dominated by matrix/convolution (or softmax) kernels. Use mixed "
    "precision (bf16/fp16), fused operators (FlashAttention, fused softmax/RmsNorm), "
    "shapes aligned to 16, and graph fusion.",
    "dynamic_shape": "Operators run with dynamic shapes and may be compiled at run time. Fix "
    "shapes (pad to buckets) or set torch_npu.npu.set_compile_mode(jit_compile=False); if that "
    "is already set (the default on Atlas A2), binary kernels report `dynamic` and this can be "
    "ignored.",
    "small_ops": "Most operators are very short, so launch overhead dominates. Fuse operators, "
    "increase the batch size, enable TASK_QUEUE_ENABLE=2 or capture the model as a graph.",
}


def _over(kind: str, value: float | None, threshold: float, detail: str) -> Bottleneck | None:
    if value is None or value <= threshold:
        return None
    return Bottleneck(
        kind, detail.format(value=value, threshold=threshold), ADVICE[kind], value, threshold
    )


def _input_pipeline(e: Evidence, t: Thresholds) -> Bottleneck | None:
    aug = e.phase_ratios.get("data_aug")
    prep = e.phase_ratios.get("preparing")
    value = max((v for v in (aug, prep) if v is not None), default=None)
    name = "Data Aug Bound" if aug is not None and value == aug else "Preparing"
    return _over(
        "input_pipeline",
        value,
        t.input_pipeline_ratio,
        name + " is {value:.0%} of the step (threshold {threshold:.0%})",
    )


def _host_bound(e: Evidence, t: Thresholds) -> Bottleneck | None:
    return _over(
        "host_bound",
        e.phase_ratios.get("free"),
        t.free_ratio,
        "the device is free {value:.0%} of the step (threshold {threshold:.0%})",
    )


def _communication(e: Evidence, t: Thresholds) -> Bottleneck | None:
    return _over(
        "communication",
        e.phase_ratios.get("communication"),
        t.communication_ratio,
        "communication not overlapped is {value:.0%} of the step (threshold {threshold:.0%})",
    )


def _format_conversion(e: Evidence, t: Thresholds) -> Bottleneck | None:
    found = _over(
        "format_conversion",
        e.conversion_ratio,
        t.format_conversion_ratio,
        "format conversions and copies take {value:.0%} of operator time "
        "(threshold {threshold:.0%})",
    )
    return found or _over(
        "format_conversion",
        e.reshape_transpose_ratio,
        t.reshape_transpose_ratio,
        "Reshape/Transpose take {value:.0%} of operator time (threshold {threshold:.0%})",
    )


def _ai_cpu(e: Evidence, t: Thresholds) -> Bottleneck | None:
    return _over(
        "ai_cpu_fallback",
        e.ai_cpu_ratio,
        t.ai_cpu_ratio,
        f"AI CPU operators of >= {t.ai_cpu_min_op_us:g} us take {{value:.0%}} of "
        "operator time (threshold {threshold:.0%})",
    )


def _compute_bound(e: Evidence, t: Thresholds) -> Bottleneck | None:
    found = _over(
        "compute_bound",
        e.conv_matmul_ratio,
        t.conv_matmul_ratio,
        "Conv/MatMul take {value:.0%} of operator time (threshold {threshold:.0%})",
    )
    return found or _over(
        "compute_bound",
        e.softmax_ratio,
        t.softmax_ratio,
        "Softmax takes {value:.0%} of operator time (threshold {threshold:.0%})",
    )


def _dynamic_shape(e: Evidence, t: Thresholds) -> Bottleneck | None:
    count = e.dynamic_shape_ops
    if count is None or count < t.dynamic_shape_min_ops:
        return None
    return Bottleneck(
        "dynamic_shape",
        f"{count} operator tasks ran with dynamic shapes",
        ADVICE["dynamic_shape"],
        float(count),
        float(t.dynamic_shape_min_ops),
    )


def _small_ops(e: Evidence, t: Thresholds) -> Bottleneck | None:
    return _over(
        "small_ops",
        e.small_ops_ratio,
        t.small_ops_ratio,
        f"{{value:.0%}} of operators run shorter than {t.small_op_us:g} us "
        "(threshold {threshold:.0%})",
    )


RULES: tuple[Callable[[Evidence, Thresholds], Bottleneck | None], ...] = (
    _input_pipeline,
    _host_bound,
    _communication,
    _format_conversion,
    _ai_cpu,
    _compute_bound,
    _dynamic_shape,
    _small_ops,
)


DEFAULT_THRESHOLDS = Thresholds()


def diagnose(
    evidence: Evidence, thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> tuple[Bottleneck, ...]:
    """Every rule that fires, in a fixed order."""
    found = (rule(evidence, thresholds) for rule in RULES)
    return tuple(b for b in found if b is not None)
