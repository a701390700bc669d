"""Tell communication tasks from compute operators, and name their collective.

HCCL tasks appear in kernel_details / op_summary as ``hcom_allReduce__868_0_1`` (Type
``hcom_allReduce_``, Accelerator Core ``HCCL``), in Level0 tables only by name, and in db exports
in COMMUNICATION_OP. They are never operator time: they go to their own family by collective.
"""

from __future__ import annotations

import re

_COMM_CORES = frozenset({"communication"})
_COMM_NAME = re.compile(r"^(hcom_|hccl|lccl|allreduce|allgather|reducescatter|alltoall)", re.I)
# checked in order on the name without separators, lower case
_KINDS = (
    ("reducescatter", "reduce_scatter"),
    ("allreduce", "all_reduce"),
    ("allgather", "all_gather"),
    ("alltoall", "all_to_all"),
    ("broadcast", "broadcast"),
    ("sendrecv", "send_receive"),
    ("send", "send_receive"),
    ("receive", "send_receive"),
    ("recv", "send_receive"),
)


def is_communication(op_type: str, core: str) -> bool:
    """An HCCL task: its core label says so, or its op type / name is a collective's."""
    return core in _COMM_CORES or bool(_COMM_NAME.match(op_type))


def collective_of(op_type: str) -> str:
    """``hcom_allReduce__868_0`` -> all_reduce; ``hcom_batchSendRecv_`` -> send_receive."""
    flat = re.sub(r"[^a-z]", "", op_type.lower())
    for needle, kind in _KINDS:
        if needle in flat:
            return kind
    return "other"
