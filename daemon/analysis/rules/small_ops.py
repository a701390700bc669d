"""small_ops: most operators run shorter than small_op_us, so launch overhead dominates."""

from __future__ import annotations

from npumon.daemon.analysis.evidence import Evidence
from npumon.daemon.analysis.findings import advice_for, over
from npumon.daemon.model.profile import Bottleneck, Thresholds

KIND = "small_ops"
ORDER = 100
OPERATOR_TABLE = True  # judges the operator tables: withheld when they cover too little
GRAPH_ADVICE = (
    "Most operators are very short. In graph mode launch is per graph, so look at "
    "fusion: check that the graph fusion passes are on (no fusion switch turned off), let GE fuse "
    "elementwise chains, and increase the batch size."
)

ADVICE = (
    "Most operators are very short, so launch overhead dominates. Fuse operators, "
    "increase the batch size, enable TASK_QUEUE_ENABLE=2 or capture the model as a graph "
    "(torchair / aclgraph)."
)


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    return over(
        advice_for(e.mode, ADVICE, GRAPH_ADVICE),
        KIND,
        e.small_ops_ratio,
        t.small_ops_ratio,
        f"{{value:.0%}} of operators run shorter than {t.small_op_us:g} us "
        "(threshold {threshold:.0%})",
    )
