"""Simulated training workloads (op mix, step phases) and the steps a profiler would record."""

from __future__ import annotations

import random
from dataclasses import dataclass

KINDS = (
    "balanced",
    "input_bound",
    "conversion_bound",
    "aicpu_fallback",
    "communication_bound",
    "slow_link",
)


@dataclass(frozen=True, slots=True)
class OpMix:
    """One operator of the workload: tasks per step and its share of the step's compute time."""

    op_type: str
    core: str  # Task Type / Accelerator Core as the tables spell it
    per_step: int
    share: float
    kernel: str  # torch_npu kernel name (aclnn...); msprof graph names are built from op_type
    input_shapes: str
    input_dtypes: str
    input_formats: str
    output_formats: str = "ND"


@dataclass(frozen=True, slots=True)
class Profile:
    """Phase fractions of a step; torch: computing + communication + free = 1."""

    kind: str
    ops: tuple[OpMix, ...]
    computing: float
    communication: float  # not overlapped with compute
    free: float
    preparing: float  # host launch / dataloader latency before the first device task
    data_aug: float  # graph mode: gap before the iteration, share of the iteration time
    refresh: float  # graph mode: BP end to iteration end (gradient update, all-reduce)
    reduce_pairs: int  # graph mode: all-reduce segments per iteration
    # torch_npu communication.json (torch_comm.py): the bandwidth the all-reduce reaches over
    # HCCS (the daemon's expected figure is 18 GB/s, slow_link under 60 % of it) and the share
    # of the collective's elapsed time spent waiting for peers
    hccs_gbps: float = 20.0
    comm_wait: float = 0.10


_BF16_2 = "DT_BF16;DT_BF16"
_BASE = (
    OpMix(
        "MatMulV3",
        "AI_CORE",
        12,
        0.27,
        "aclnnMatmul_MatMulCommon_MatMulV3",
        "4096,1024;1024,3072",
        _BF16_2,
        "ND;ND",
    ),
    OpMix(
        "MatMulV2",
        "AI_CORE",
        4,
        0.06,
        "aclnnMm_MatMulV2_MatMulV2",
        "4096,1024;1024,1024",
        _BF16_2,
        "ND;ND",
    ),
    OpMix(
        "FlashAttentionScore",
        "MIX_AIC",
        2,
        0.12,
        "aclnnFlashAttentionScore_FlashAttentionScore",
        "1,4096,1024;1,4096,1024;1,4096,1024",
        "DT_BF16;DT_BF16;DT_BF16",
        "ND;ND;ND",
    ),
    OpMix(
        "RmsNorm",
        "MIX_AIV",
        4,
        0.08,
        "aclnnRmsNorm_RmsNorm_RmsNorm",
        "1,4096,1024;1024",
        _BF16_2,
        "ND;ND",
    ),
    OpMix(
        "Add",
        "AI_VECTOR_CORE",
        10,
        0.09,
        "aclnnAdd_AddAiCore_Add",
        "1,4096,1024;1,4096,1024",
        _BF16_2,
        "ND;ND",
    ),
    OpMix(
        "Mul",
        "AI_VECTOR_CORE",
        8,
        0.07,
        "aclnnMul_MulAiCore_Mul",
        "1,4096,3072;1,4096,3072",
        _BF16_2,
        "ND;ND",
    ),
    OpMix(
        "SwiGlu",
        "AI_VECTOR_CORE",
        4,
        0.07,
        "aclnnSwiGlu_SwiGlu_SwiGlu",
        "1,4096,6144",
        "DT_BF16",
        "ND",
    ),
    OpMix(
        "SoftmaxV2",
        "AI_VECTOR_CORE",
        2,
        0.05,
        "aclnnSoftmax_SoftmaxV2AiCore_SoftmaxV2",
        "1,16,4096,128",
        "FLOAT",
        "ND",
    ),
    OpMix(
        "ReduceSum",
        "AI_VECTOR_CORE",
        4,
        0.04,
        "aclnnReduceSum_ReduceSumAiCore_ReduceSum",
        "1,4096,1024;1",
        "FLOAT;INT64",
        "ND;ND",
    ),
    OpMix(
        "ApplyAdamWV2",
        "AI_VECTOR_CORE",
        2,
        0.06,
        "aclnnApplyAdamWV2_ApplyAdamWV2_ApplyAdamWV2",
        "1024,1024;1024,1024;1024,1024",
        "FLOAT;FLOAT;FLOAT",
        "ND;ND;ND",
    ),
    OpMix(
        "Cast",
        "AI_VECTOR_CORE",
        6,
        0.05,
        "aclnnCast_CastAiCore_Cast",
        "1,4096,1024",
        "DT_BF16",
        "ND",
    ),
    OpMix(
        "TransData",
        "AI_VECTOR_CORE",
        2,
        0.03,
        "trans_TransData_12",
        "256,64,56,56",
        "FLOAT16",
        "NCHW",
        "NC1HWC0",
    ),
    OpMix(
        "GatherV2",
        "AI_VECTOR_CORE",
        1,
        0.01,
        "aclnnEmbedding_GatherV2AiCore_GatherV2",
        "151936,1024;1,4096;1",
        "DT_BF16;INT64;INT64",
        "ND;ND;ND",
    ),
)
_CONVERSIONS = (
    OpMix(
        "TransData",
        "AI_VECTOR_CORE",
        6,
        0.25,
        "trans_TransData_31",
        "256,3,224,224",
        "FLOAT16",
        "NCHW",
        "NC1HWC0",
    ),
    OpMix(
        "Cast",
        "AI_VECTOR_CORE",
        8,
        0.15,
        "aclnnCast_CastAiCore_Cast",
        "256,64,56,56",
        "FLOAT",
        "NCHW",
    ),
    OpMix(
        "Transpose",
        "AI_VECTOR_CORE",
        4,
        0.08,
        "aclnnPermute_TransposeAiCore_Transpose",
        "256,56,56,64;4",
        "FLOAT16;INT64",
        "NHWC;ND",
    ),
)
_AI_CPU = (
    OpMix("NonZero", "AI_CPU", 2, 0.12, "aclnnNonzero_NonZero_NonZero", "4096,1024", "INT64", "ND"),
    OpMix(
        "UniqueConsecutive",
        "AI_CPU",
        1,
        0.08,
        "aclnnUniqueConsecutive_UniqueConsecutive",
        "4096",
        "INT64",
        "ND",
    ),
    OpMix(
        "ScatterElements",
        "AI_CPU",
        1,
        0.06,
        "aclnnScatter_ScatterElements_ScatterElements",
        "4096,1024;4096,1024;4096,1024",
        "DOUBLE;INT64;DOUBLE",
        "ND;ND;ND",
    ),
)

PROFILES: dict[str, Profile] = {
    "balanced": Profile("balanced", _BASE, 0.86, 0.07, 0.07, 0.01, 0.05, 0.12, 2),
    "input_bound": Profile("input_bound", _BASE, 0.45, 0.05, 0.50, 0.30, 0.40, 0.10, 2),
    "conversion_bound": Profile(
        "conversion_bound", _BASE + _CONVERSIONS, 0.86, 0.07, 0.07, 0.01, 0.05, 0.12, 2
    ),
    "aicpu_fallback": Profile(
        "aicpu_fallback", _BASE + _AI_CPU, 0.86, 0.07, 0.07, 0.01, 0.05, 0.12, 2
    ),
    "communication_bound": Profile(
        "communication_bound", _BASE, 0.50, 0.42, 0.08, 0.01, 0.03, 0.40, 4, 19.0, 0.40
    ),
    # a degraded HCCS link: the all-reduce moves 3 GB/s (17 % of the expected 18), so the step
    # spends a communication-bound share in it
    "slow_link": Profile("slow_link", _BASE, 0.62, 0.30, 0.08, 0.01, 0.03, 0.30, 2, 3.0, 0.10),
}


@dataclass(frozen=True, slots=True)
class Task:
    """One device task: an operator run, or an all-reduce (op None) on the communication stream."""

    op: OpMix | None
    task_id: int
    start_us: float
    duration_us: float
    wait_us: float


@dataclass(frozen=True, slots=True)
class Step:
    """One training step (graph iteration); times are epoch microseconds / microsecond spans."""

    step_id: int
    start_us: float
    computing_us: float  # = the sum of the operator tasks
    communication_us: float
    free_us: float
    preparing_us: float
    data_aug_us: float
    fp_bp_us: float
    refresh_us: float
    tasks: tuple[Task, ...]

    @property
    def total_us(self) -> float:
        return self.computing_us + self.communication_us + self.free_us


def _tasks(
    profile: Profile, compute_us: float, cursor: float, rng: random.Random, first_id: int
) -> list[Task]:
    total_share = sum(op.share for op in profile.ops)
    tasks, task_id = [], first_id
    for op in profile.ops:
        mean = compute_us * op.share / total_share / op.per_step
        for _ in range(op.per_step):
            duration = mean * rng.uniform(0.9, 1.1)
            wait = rng.uniform(1.0, 8.0)
            cursor += wait
            tasks.append(Task(op, task_id, cursor, duration, wait))
            cursor += duration
            task_id += 1
    return tasks


def _step(
    profile: Profile, step_id: int, start_us: float, step_us: float, rng: random.Random
) -> Step:
    total = step_us * rng.uniform(0.95, 1.05)
    preparing = total * profile.preparing * rng.uniform(0.9, 1.1)
    ops = _tasks(profile, total * profile.computing, start_us + preparing, rng, step_id * 1000)
    computing = sum(t.duration_us for t in ops)
    communication = total * profile.communication
    all_reduce = Task(None, -1, ops[-1].start_us + ops[-1].duration_us, communication * 1.3, 0.0)
    data_aug = total * profile.data_aug
    refresh = total * profile.refresh
    return Step(
        step_id=step_id,
        start_us=start_us,
        computing_us=computing,
        communication_us=communication,
        free_us=max(0.0, total - computing - communication),
        preparing_us=preparing,
        data_aug_us=data_aug,
        fp_bp_us=total - data_aug - refresh,
        refresh_us=refresh,
        tasks=(*ops, all_reduce),
    )


def simulate(
    kind: str, first_step: int, steps: int, step_seconds: float, start_seconds: float, seed: int
) -> tuple[Step, ...]:
    """``steps`` consecutive steps from ``first_step``, the first starting at ``start_seconds``."""
    profile = PROFILES[kind]
    rng = random.Random(seed)
    step_us = step_seconds * 1e6
    return tuple(
        _step(profile, first_step + i, start_seconds * 1e6 + i * step_us, step_us, rng)
        for i in range(steps)
    )
