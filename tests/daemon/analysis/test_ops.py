"""Operator types guessed from kernel names (Level0 tables carry no type column)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from npumon.daemon.analysis.readers.collectives import is_communication
from npumon.daemon.analysis.readers.ops import infer_op_type

TREES = Path(__file__).parents[2] / "fixtures" / "msprof" / "trees"


@pytest.mark.parametrize(
    ("kernel", "op_type"),
    [
        ("trans_TransData_0", "TransData"),
        ("aclnnInplaceRelu_Relu_Relu", "Relu"),
        ("Conv2D1", "Conv2D"),
        ("Cast16", "Cast"),
        ("StatelessDropOutGenMask/DSASTATELESSGENBITMASK", "StatelessDropOutGenMask"),
        # the op version stays: the Level1 capture of the same job types it AxpyV2
        ("AxpyV2102", "AxpyV2"),
        ("TopKV25", "TopKV2"),
        ("MatMulV3", "MatMulV3"),
        ("Conv2DBackpropFilter10_MemSet", "MemSet"),
    ],
)
def test_op_type_from_kernel_name(kernel: str, op_type: str) -> None:
    assert infer_op_type(kernel) == op_type


def _names_and_types(level: str) -> dict[str, str]:
    path = TREES / level / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    with path.open(encoding="utf-8", newline="") as handle:
        return {row["Name"]: row["Type"] for row in csv.DictReader(handle)}


def test_level0_names_get_the_types_level1_gives_them() -> None:
    """The same job captured at Level0 (no types) and Level1: every compute kernel name of the
    Level0 table is typed as the Level1 table types it."""
    level0, level1 = _names_and_types("text_level0"), _names_and_types("text_level1")
    compute = [n for n in level0 if not is_communication(n, "")]
    assert len(compute) == 78  # distinct compute kernel names, three MemSet tasks among them
    assert {n: infer_op_type(n) for n in compute} == {n: level1[n] for n in compute}
