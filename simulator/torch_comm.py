"""torch_npu's communication.json and profiler_metadata.json for a simulated capture.

The schema is that of the real exports in tests/fixtures/msprof/trees (text_level1,
pp2dp2_level2): ``{"step<N>": {"p2p": {}, "collective": {"<op>@<group>": {...},
"Total Op Info": {...}}}}``. Each step's collective is the one all-reduce task kernel_details.csv
holds for it (same name, start and duration). Its elapsed time splits into waiting for peers
(``Profile.comm_wait``), idle and transfer; the transfer moves ``Profile.hccs_gbps`` GB/s over
HCCS in ``TRANSFERS`` equal packets. SDMA repeats the HCCS figures (an SDMA copy that travels over
HCCS, as the real files count it); PCIE, RDMA and SIO move nothing on this one-node job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from npumon.simulator.profiles import PROFILES, Profile, Step

LINKS = ("RDMA", "HCCS", "PCIE", "SDMA", "SIO")  # the order torch_npu writes them in
IDLE_SHARE = 0.05  # of the collective's elapsed time: neither waiting nor moving data
SYNC_SHARE = 0.8  # of the wait: synchronization (the peers' notify) before the first transfer
TRANSFERS = 4  # packets per all-reduce
LARGE_PACKET_MB = 32.0  # the real files: 29.8 MB packets are not large, 59.5 MB ones are

# The variables torch_npu records (profiler_metadata.json); the simulated job's launch script
# exports msprof-analyze's recommendations, and whatever the job's own environment sets wins.
ENV_NAMES = (
    "ASCEND_GLOBAL_LOG_LEVEL",
    "HCCL_RDMA_TC",
    "HCCL_RDMA_SL",
    "ACLNN_CACHE_LIMIT",
    "HOST_CACHE_CAPACITY",
    "ASCEND_ENHANCE_ENABLE",
    "PYTORCH_NPU_ALLOC_CONF",
    "ASCEND_LAUNCH_BLOCKING",
    "HCCL_ALGO",
)
TUNED_ENV = {
    "ASCEND_GLOBAL_LOG_LEVEL": "3",
    "ACLNN_CACHE_LIMIT": "100000",
    "HOST_CACHE_CAPACITY": "20",
    "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True",
}


def all_reduce_name(step: Step) -> str:
    """The name kernel_details.csv gives the step's all-reduce task (tables._base_cells)."""
    task = step.tasks[-1]
    return f"hcom_allReduce__{task.start_us % 1000:.0f}_0_1"


def _empty_link(total: bool) -> dict[str, Any]:
    if total:
        return {"Transit Time(ms)": 0, "Transit Size(MB)": 0, "Size Distribution": {}}
    return {
        "Transit Size(MB)": 0,
        "Transit Time(ms)": 0,
        "Bandwidth(GB/s)": 0,
        "Large Packet Ratio": 0,
        "Size Distribution": {},
    }


def _bandwidth(
    size_mb: float, time_ms: float, packet_mb: float, total: bool
) -> dict[str, dict[str, Any]]:
    links = {link: _empty_link(total) for link in LINKS}
    distribution = {repr(packet_mb): [TRANSFERS, time_ms]}
    if total:
        links["HCCS"] = {
            "Transit Time(ms)": time_ms,
            "Transit Size(MB)": size_mb,
            "Size Distribution": distribution,
        }
        links["SDMA"] = {
            "Transit Time(ms)": time_ms,
            "Transit Size(MB)": size_mb,
            "Size Distribution": {},
        }
        return links
    gbps = round(size_mb / time_ms, 4) if time_ms > 0 else 0
    large = 1.0 if packet_mb >= LARGE_PACKET_MB else 0.0
    links["HCCS"] = {
        "Transit Size(MB)": size_mb,
        "Transit Time(ms)": time_ms,
        "Bandwidth(GB/s)": gbps,
        "Large Packet Ratio": large,
        "Size Distribution": distribution,
    }
    links["SDMA"] = {
        "Transit Size(MB)": size_mb,
        "Transit Time(ms)": time_ms,
        "Bandwidth(GB/s)": gbps,
        "Large Packet Ratio": 0,
        "Size Distribution": {},
    }
    return links


def _op(step: Step, profile: Profile, total: bool) -> dict[str, Any]:
    task = step.tasks[-1]  # the all-reduce (profiles._step puts it last)
    elapse = task.duration_us / 1e3
    wait = elapse * profile.comm_wait
    sync = wait * SYNC_SHARE
    # whole bytes per packet, as the real files count them, in 512-byte multiples (aligned
    # buckets: byte_alignment judges the others); the transfer time follows from them
    packet_bytes = 512 * round(
        elapse * (1 - profile.comm_wait - IDLE_SHARE) * profile.hccs_gbps * 1e6 / TRANSFERS / 512
    )
    packet_mb = packet_bytes / 1e6
    size_mb = packet_bytes * TRANSFERS / 1e6
    transit = size_mb / profile.hccs_gbps
    times: dict[str, Any] = {} if total else {"Start Timestamp(us)": task.start_us}
    times.update(
        {
            "Elapse Time(ms)": elapse,
            "Transit Time(ms)": transit,
            "Wait Time(ms)": wait,
            "Synchronization Time(ms)": sync,
            "Idle Time(ms)": elapse - transit - wait,
            "Wait Time Ratio": round(wait / (wait + transit), 4) if wait + transit > 0 else 0,
            "Synchronization Time Ratio": round(sync / (sync + transit), 4)
            if sync + transit
            else 0,
        }
    )
    return {
        "Communication Time Info": times,
        "Communication Bandwidth Info": _bandwidth(size_mb, transit, packet_mb, total),
    }


def communication(steps: Sequence[Step], kind: str, group: str) -> dict[str, Any]:
    """communication.json of one rank: per step its all-reduce and the step's total."""
    profile = PROFILES[kind]
    return {
        f"step{step.step_id}": {
            "p2p": {},
            "collective": {
                f"{all_reduce_name(step)}@{group}": _op(step, profile, False),
                "Total Op Info": _op(step, profile, True),
            },
        }
        for step in steps
    }


def recorded_env(environ: Mapping[str, str]) -> dict[str, str]:
    """ENV_VARIABLES: every name torch_npu knows, "" when unset."""
    return {name: environ.get(name, TUNED_ENV.get(name, "")) for name in ENV_NAMES}


def metadata(
    rank: int, world_size: int, environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """profiler_metadata.json as a Megatron / MindSpeed job writes it: pure data parallel (tp 1,
    pp 1), so the dp group is every rank of the job."""
    ranks = list(range(world_size))
    groups = {
        "group_name_0": {"group_name": "default_group", "group_rank": rank, "global_ranks": ranks},
        "group_name_1": {"group_name": "dp", "group_rank": rank, "global_ranks": ranks},
        "group_name_2": {"group_name": "dp_cp", "group_rank": rank, "global_ranks": ranks},
        "group_name_3": {"group_name": "tp", "group_rank": 0, "global_ranks": [rank]},
        "group_name_4": {"group_name": "pp", "group_rank": 0, "global_ranks": [rank]},
    }
    return {
        "distributed_args": {
            "tensor_model_parallel_size": 1,
            "pipeline_model_parallel_size": 1,
            "data_parallel_size": world_size,
            "context_parallel_size": 1,
            "expert_model_parallel_size": 1,
            "sequence_parallel": False,
            "rank": rank,
            "world_size": world_size,
        },
        "ENV_VARIABLES": recorded_env(environ or {}),
        "parallel_group_info": groups,
    }
