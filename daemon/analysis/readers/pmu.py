"""Vector operators judged by their PMU ratios (kernel_details with aic_metrics=PipeUtilization).

msprof-analyze's "Vector Operator Perf Analysis" (advisor's AI Core performance checker, rules
aicore_performance.yaml), restated: of the vector operators (Accelerator Core AI_VECTOR_CORE or
MIX_AIV; on 910A, whose one AI Core kind does both, the AI_CORE tasks that never used the cube)
whose op type takes at least operator_pmu_min_share of all operator time, each (name, input
shapes, output shapes) is judged on its mean aiv_vec_ratio, aiv_mte2_ratio and
aiv_mte3_ratio: bound when vec + mte2 + mte3 >= pmu_vector_total_ratio (vec_mte2_mte3) or one unit
>= pmu_vector_unit_ratio (mte2, then mte3, then vec); otherwise it has headroom, the most any
unit is below pmu_vector_unit_ratio. Unlike the peer, which lists every shape (2-17 us ones
too), only the shapes of at least operator_pmu_shape_share of operator time are judged and
named: ``operator_pmu`` names those with the most headroom and the longest bound ones, and
counts the smaller ones. It fires only when such a shape has headroom: a profile whose vector
operators that matter are all bound uses its units fully, which is no finding. The
checker's cube (MatMul) and FlashAttention parts judge shape affinity (inner axes divisible by
256 / 128) and are not restated here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npumon.daemon.analysis.evidence import VectorRows
from npumon.daemon.analysis.readers.tables import MAC_RATIO

if TYPE_CHECKING:
    import pandas as pd

VECTOR_CORES = ("AI_VECTOR_CORE", "MIX_AIV")


def vector_rows(frame: pd.DataFrame, notes: tuple[str, ...] = ()) -> VectorRows:
    """The rows of vector operators: on AI_VECTOR_CORE or MIX_AIV, and on 910A (no vector
    cores: the table has an un-prefixed mac_ratio) AI_CORE tasks whose mac_ratio is 0."""
    core = frame["core_type"].astype("object").astype(str).str.upper()
    vector = core.isin(VECTOR_CORES)
    if MAC_RATIO in frame:
        vector |= (core == "AI_CORE") & (frame[MAC_RATIO] == 0)
    keep = vector & frame["input_shapes"].notna() & frame["output_shapes"].notna()
    return VectorRows(float(frame["duration_us"].sum()), frame.loc[keep], notes)
