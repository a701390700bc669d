"""The rows of a kernel table's vector operators with their PMU ratios and shapes
(kernel_details with aic_metrics=PipeUtilization), as VectorRows for rules/operator_pmu.py: on
AI_VECTOR_CORE or MIX_AIV, and on 910A (one AI Core kind for both) the AI_CORE tasks that never
used the cube."""

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
