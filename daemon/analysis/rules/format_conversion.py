"""format_conversion: layout and dtype conversions and copies (TransData, Cast, Transpose,
TensorMove, ...) or reshapes and transposes over their share of operator time."""

from __future__ import annotations

from npumon.daemon.analysis.evidence import Evidence
from npumon.daemon.analysis.findings import of_ops, over
from npumon.daemon.model.profile import Bottleneck, Thresholds

KIND = "format_conversion"
ORDER = 60
OPERATOR_TABLE = True  # judges the operator tables: withheld when they cover too little
ADVICE = (
    "Much time goes to layout/dtype conversions and copies (TransData, Cast, "
    "Transpose, TensorMove). Keep tensors in the NPU private format (NC1HWC0/FRACTAL_Z) "
    "between ops, avoid mixing NCHW and NHWC, use AMP consistently instead of manual casts, and "
    "avoid non-contiguous views that force copies."
)


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    found = over(
        ADVICE,
        KIND,
        e.conversion_ratio,
        t.format_conversion_ratio,
        "format conversions and copies take {value:.0%} of operator time ("
        + of_ops(e.op_total_ms, e.conversion_ratio)
        + "threshold {threshold:.0%})",
    )
    return found or over(
        ADVICE,
        KIND,
        e.reshape_transpose_ratio,
        t.reshape_transpose_ratio,
        "Reshape/Transpose take {value:.0%} of operator time ("
        + of_ops(e.op_total_ms, e.reshape_transpose_ratio)
        + "threshold {threshold:.0%})",
    )
