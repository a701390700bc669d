"""compute_bound: Conv/MatMul, or Softmax, over their share of operator time."""

from __future__ import annotations

from npumon.daemon.analysis.evidence import Evidence
from npumon.daemon.analysis.findings import of_ops, over
from npumon.daemon.model.profile import Bottleneck, Thresholds

KIND = "compute_bound"
ORDER = 80
OPERATOR_TABLE = True  # judges the operator tables: withheld when they cover too little
ADVICE = (
    "Step time is dominated by matrix/convolution (or softmax) kernels. Use mixed "
    "precision (bf16/fp16), fused operators (FlashAttention, fused softmax/RmsNorm), "
    "shapes aligned to 16, and graph fusion."
)


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    found = over(
        ADVICE,
        KIND,
        e.conv_matmul_ratio,
        t.conv_matmul_ratio,
        "Conv/MatMul take {value:.0%} of operator time ("
        + of_ops(e.op_total_ms, e.conv_matmul_ratio)
        + "threshold {threshold:.0%})",
    )
    return found or over(
        ADVICE,
        KIND,
        e.softmax_ratio,
        t.softmax_ratio,
        "Softmax takes {value:.0%} of operator time ("
        + of_ops(e.op_total_ms, e.softmax_ratio)
        + "threshold {threshold:.0%})",
    )
