"""Operator types guessed from kernel names (Level0 tables carry no type column)."""

from __future__ import annotations

import pytest

from npumon.daemon.analysis.ops import infer_op_type


@pytest.mark.parametrize(
    ("kernel", "op_type"),
    [
        ("trans_TransData_0", "TransData"),
        ("aclnnInplaceRelu_Relu_Relu", "Relu"),
        ("Conv2D1", "Conv2D"),
        ("Cast16", "Cast"),
        ("StatelessDropOutGenMask/DSASTATELESSGENBITMASK", "StatelessDropOutGenMask"),
    ],
)
def test_op_type_from_kernel_name(kernel: str, op_type: str) -> None:
    assert infer_op_type(kernel) == op_type
