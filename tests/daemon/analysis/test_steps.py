"""torch_npu step_trace_time tables (and the cluster one) read row by row, checked with csv."""

from __future__ import annotations

import pytest
from analysis_helpers import FIXTURES, number, rows

from npumon.daemon.analysis.readers.steps import read_torch_steps

STEP_TABLES = sorted(p.name for p in FIXTURES.glob("step_trace_time_*.csv")) + [
    "cluster_step_trace_time_msprof_analyze.csv"
]


@pytest.mark.parametrize("name", STEP_TABLES)
def test_step_trace_time(name: str) -> None:
    steps = read_torch_steps(FIXTURES / name, [])
    header, body = rows(name)
    assert len(steps) == len(body)
    for step, row in zip(steps, body, strict=True):
        cell = dict(zip(header, row, strict=True))
        assert step.computing_us == float(cell["Computing"])
        assert step.communication_us == float(cell["Communication(Not Overlapped)"])
        assert step.free_us == float(cell["Free"])
        assert step.preparing_us == number(cell.get("Preparing"))
        assert step.overlapped_us == number(cell.get("Overlapped"))
        assert step.communication_total_us == number(cell.get("Communication"))
        assert step.device_id == (int(cell["Device_id"]) if "Device_id" in cell else None)
        assert step.step == (int(cell["Step"]) if cell["Step"] else None)
