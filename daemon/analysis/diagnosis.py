"""Diagnosis rules of the Ascend tuning checklist, thresholds as defaults, each with its advice."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from npumon.daemon.analysis.fusible import RankSequences
from npumon.daemon.analysis.host import HostShare
from npumon.daemon.model.profile import Bottleneck, Thresholds


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the rules look at; None where the data does not say."""

    phase_ratios: dict[str, float] = field(default_factory=dict)
    phase_ms: dict[str, float] = field(default_factory=dict)  # mean per step
    step_ms: float | None = None  # mean step
    host: HostShare | None = None  # data loader and on-line compilation (host.py)
    op_total_ms: float | None = None  # compute operator time of the tables read
    conversion_ratio: float | None = None  # conversions + copies
    reshape_transpose_ratio: float | None = None
    conv_matmul_ratio: float | None = None
    softmax_ratio: float | None = None
    ai_cpu_ratio: float | None = None
    ai_cpu_tasks: int | None = None  # AI CPU tasks of at least ai_cpu_min_op_us
    ai_cpu_ops: tuple[str, ...] = ()  # their op types, most time first
    dynamic_shape_ops: int | None = None
    static_ops: int | None = None  # None when the table does not say
    small_ops_ratio: float | None = None
    mode: str | None = None  # eager or graph
    transfer_ratio: float | None = None  # the communication table's transit over step time
    sequences: tuple[RankSequences, ...] = ()  # fusible operator sequences per rank (fusible.py)
    findings: tuple[Bottleneck, ...] = ()  # judged elsewhere: ranks (peers.py), links (comm.py)


ADVICE = {
    "input_pipeline": "The device waits for input between steps. Use more DataLoader workers, "
    "pin_memory and prefetch (or tf.data prefetch / MindData parallel workers); move "
    "augmentation off the critical path or onto the device (DVPP); check storage throughput.",
    "slow_preparing": "The device waits long before each step's first task (Preparing) and the "
    "profile does not show why. Open trace_view.json at the start of a step and look at what "
    "the host does before the first kernel launch: the data loader (enumerate(DataLoader)), "
    "on-line compilation (AscendCL@aclopCompileAndExecute), operator launch (TASK_QUEUE_ENABLE=2, "
    "CPU binding with CPU_AFFINITY_CONF) and host syncs (.item(), .cpu()). A capture at Level1 "
    "with the CANN API layer (api_statistic.csv) lets npumon measure compilation.",
    "online_compile": "Operators are compiled on line while the job runs (aclopCompileAndExecute: "
    "msprof-analyze's operator dispatch issue). Put torch_npu.npu.set_compile_mode("
    "jit_compile=False) and torch_npu.npu.config.allow_internal_format = False at the start of "
    "the script so that the prebuilt binary kernels are used; with dynamic shapes, pad them to a "
    "few buckets so that each shape is compiled once.",
    "host_bound": "The device is idle inside the step (Free): the host cannot launch work fast "
    "enough. Set TASK_QUEUE_ENABLE=2, bind CPU cores (CPU_AFFINITY_CONF), remove host syncs "
    "(.item(), .cpu(), prints) from the loop, and consider graph mode (torchair) or larger "
    "batches.",
    "format_conversion": "Much time goes to layout/dtype conversions and copies (TransData, Cast, "
    "Transpose, TensorMove). Keep tensors in the NPU private format (NC1HWC0/FRACTAL_Z) "
    "between ops, avoid mixing NCHW and NHWC, use AMP consistently instead of manual casts, and "
    "avoid non-contiguous views that force copies.",
    "ai_cpu_fallback": "Operators fall back to the AI CPU. Check their input dtypes (float64, "
    "int64 and complex push ops to the AI CPU), replace them with AI Core-supported "
    "equivalents, or move them out of the hot loop.",
    "communication": "Communication is not hidden behind compute. Overlap gradient all-reduce "
    "with backward (bucket size), use a better parallel layout (fewer TP ranks across nodes), "
    "check HCCS/RoCE bandwidth and look for a slow rank that makes others wait.",
    "compute_bound": "Step time is dominated by matrix/convolution (or softmax) kernels. Use mixed "
    "precision (bf16/fp16), fused operators (FlashAttention, fused softmax/RmsNorm), "
    "shapes aligned to 16, and graph fusion.",
    "dynamic_shape": "Operators run with dynamic shapes and may be compiled at run time. Fix "
    "shapes (pad to buckets) or set torch_npu.npu.set_compile_mode(jit_compile=False); if that "
    "is already set (the default on Atlas A2), binary kernels report `dynamic` and this can be "
    "ignored.",
    "small_ops": "Most operators are very short, so launch overhead dominates. Fuse operators, "
    "increase the batch size, enable TASK_QUEUE_ENABLE=2 or capture the model as a graph "
    "(torchair / aclgraph).",
    "slow_rank": "One rank computes longer than the ranks doing the same work (its data-parallel "
    "peers), or reaches the collectives later than them, and the others wait for it in "
    "communication. If it computes longer, compare its kernels with a fast peer's (msprof-analyze "
    "compare) and check its chip (clocks, temperature, ECC); if it only arrives late, check its "
    "host (CPU binding, other processes, host syncs, its data loader) and the timeline around the "
    "first collective of the step. Either way check its share of the data (uneven sequence "
    "lengths).",
    "pipeline_imbalance": "Pipeline stages do different amounts of work, so the lighter stages "
    "wait. Rebalance the layers between stages (e.g. Megatron's decoder first/last pipeline "
    "num layers, or moving the embedding/loss), or use virtual pipeline stages to shrink bubbles.",
    "slow_link": "A link type moves data well below its expected bandwidth. Check the link "
    "(hccn_tool -link / -net_health, HCCS errors), the message sizes (many small packets never "
    "reach full bandwidth: bucket them), and HCCL settings (HCCL_BUFFSIZE, algorithm).",
    "small_packets": "Many communication operations move small messages, so launch and "
    "handshake costs dominate and the host may become the bottleneck. In data parallelism "
    "increase the batch size or gradient accumulation (fewer, larger all-reduces; bigger "
    "gradient buckets); with ZeRO-3 use ZeRO-2/1 if memory allows; use fused (affinity) "
    "optimizers, which issue fewer collectives.",
    "byte_alignment": "Collectives move transfers whose size is not a multiple of 512 bytes, "
    "which SDMA copies less efficiently (msprof-analyze's byte alignment analysis). Make the "
    "communicated tensors' sizes multiples of 512 bytes: pad the gradient buckets or flattened "
    "buffers (DDP bucket_cap_mb, Megatron/DeepSpeed contiguous gradient buffers) and hidden "
    "sizes, or ask the HCCL engineers about the operator's data layout.",
    "operator_pmu": "Vector operators that take a noticeable share of operator time run "
    "with poor pipe utilisation (the PMU ratios of kernel_details, aic_metrics=PipeUtilization). "
    "For those with headroom (no unit busy), look at their shapes and block dim (too few cores, "
    "unaligned or tiny tiles) and fuse them with neighbours; for bound ones, reduce the work of "
    "the bounding unit: mte2/mte3 (memory traffic: fewer copies, TransData, better formats) or "
    "vec (fewer elementwise passes, fused operators). msprof-analyze's advisor lists the same "
    "operators per shape.",
    "affinity_api": "The host timeline runs sequences of torch calls that torch_npu has one "
    "fused, NPU-affine API for (msprof-analyze's affinity API analysis): each sequence launches "
    "several kernels where the replacement launches one. Replace them in the model code (find "
    "them with with_stack=True in the profiler's call stacks) and capture again; check the "
    "replacement's documentation for the shapes and dtypes it supports.",
    "fusible_ops": "The same short runs of operators recur many times and either leave the device "
    "waiting between launches (host-bound) or spend their time moving data (MTE-bound) "
    "(msprof-analyze's fusible operator analysis). Find the model code that launches them "
    "(a capture with with_stack=True), check that it uses the NPU-affine APIs (affinity_api), "
    "then fuse the run: a fused torch_npu operator where one exists (npu_rms_norm, "
    "npu_rotary_mul, npu_fusion_attention, npu_swiglu), graph mode (torchair), or ask the "
    "operator developers for a fused kernel.",
    "env_vars": "Environment variables the profiler recorded differ from the recommended "
    "settings (msprof-analyze's environment check); each is named with its reason. Set them in "
    "the job's launch script and capture again.",
}
# graph mode (GE: MindSpore, TF, torchair): the framework already runs graphs
GRAPH_ADVICE = {
    "small_ops": "Most operators are very short. In graph mode launch is per graph, so look at "
    "fusion: check that the graph fusion passes are on (no fusion switch turned off), let GE fuse "
    "elementwise chains, and increase the batch size.",
    "host_bound": "The device is idle inside the iteration: the host feeds graphs too slowly. "
    "Sink more iterations per launch (iterations_per_loop / dataset sink mode), remove host-side "
    "work and syncs between iterations, bind CPU cores.",
}


def advice(kind: str, mode: str | None) -> str:
    """The advice for a finding, fitted to the mode when it matters."""
    if mode == "graph" and kind in GRAPH_ADVICE:
        return GRAPH_ADVICE[kind]
    return ADVICE[kind]


def finding(
    kind: str, detail: str, value: float, threshold: float, mode: str | None = None
) -> Bottleneck:
    return Bottleneck(kind, detail, advice(kind, mode), value, threshold)


def _over(
    kind: str, value: float | None, threshold: float, detail: str, mode: str | None = None
) -> Bottleneck | None:
    if value is None or value <= threshold:
        return None
    return finding(kind, detail.format(value=value, threshold=threshold), value, threshold, mode)


def _ms(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.3f} ms"


def _figures(ms: float | None, step_ms: float | None, unit: str = "step") -> str:
    """``X ms per step, mean step Y ms; `` with what is known (opens a threshold clause)."""
    parts = ([] if ms is None else [f"{ms:.3f} ms per {unit}"]) + (
        [] if step_ms is None else [f"mean {unit} {step_ms:.3f} ms"]
    )
    return ", ".join(parts) + "; " if parts else ""


def _input_pipeline(e: Evidence, t: Thresholds) -> Bottleneck | None:
    """Graph mode: Data Aug Bound, the device's measured wait for the next batch. Eager mode:
    the data loader's own time where the profile measured it; Preparing alone holds host
    launch and compilation too, so it is never taken for the data loader (_slow_preparing)."""
    aug = e.phase_ratios.get("data_aug")
    if aug is not None:
        return _over(
            "input_pipeline",
            aug,
            t.input_pipeline_ratio,
            "Data Aug Bound (the device waiting for the next batch between iterations) is "
            "{value:.0%} of the iteration ("
            f"{_figures(e.phase_ms.get('data_aug'), e.step_ms, 'iteration')}"
            "threshold {threshold:.0%})",
        )
    loader = e.host.data_loader_ratio if e.host else None
    if e.host is None or loader is None:
        return None
    return _over(
        "input_pipeline",
        loader,
        t.data_loader_ratio,
        "the data loader (its enumerate(DataLoader)...__next__ ranges: trace_view.json or "
        "PYTORCH_API) takes "
        f"{{value:.1%}} of the step ({_figures(e.host.data_loader_ms, e.step_ms)}"
        f"threshold {{threshold:.0%}}); Preparing is {_ms(e.phase_ms.get('preparing'))}"
        + _share(e.phase_ratios.get("preparing")),
    )


def _share(ratio: float | None) -> str:
    return "" if ratio is None else f" ({ratio:.1%} of the step)"


def preparing_split(e: Evidence) -> str:
    """What the profile shows of Preparing: the data loader, on-line compilation, the rest."""
    prep = e.phase_ms.get("preparing")
    h = e.host
    loader = (
        "the data loader's time is not in the profile (no trace_view.json or PYTORCH_API table)"
        if h is None or h.data_loader_ms is None
        else "no data loader range in the profile (a job without a DataLoader)"
        if h.data_loader_ms == 0
        else f"the data loader {_ms(h.data_loader_ms)}{_share(h.data_loader_ratio)}"
    )
    compile_ = (
        f"on-line compilation {_ms(h.compile_ms)}{_share(h.compile_ratio)} (host time "
        "anywhere in the step)"
        if h and h.compile_ms is not None
        else "on-line compilation is not in the profile (no api_statistic.csv or CANN_API "
        "table: Level1 and up)"
    )
    loader_ms = h.data_loader_ms if h else None
    rest = (
        f"; the other {prep - loader_ms:.3f} ms (host launch, syncs, other host work) is "
        "not measured"
        if prep is not None and loader_ms is not None
        else ""
    )
    return f"{loader}; {compile_}{rest}"


def _slow_preparing(e: Evidence, t: Thresholds) -> Bottleneck | None:
    """Preparing over its threshold with no data loader time that explains it: the figures the
    profile has, and "cause unknown"."""
    if e.phase_ratios.get("data_aug") is not None or _input_pipeline(e, t) is not None:
        return None
    return _over(
        "slow_preparing",
        e.phase_ratios.get("preparing"),
        t.input_pipeline_ratio,
        "Preparing (from the step's start to its first device task) is {value:.0%} of the step "
        f"({_figures(e.phase_ms.get('preparing'), e.step_ms)}threshold "
        "{threshold:.0%}), cause unknown: "
        + preparing_split(e).replace("{", "{{").replace("}", "}}"),
    )


def _online_compile(e: Evidence, t: Thresholds) -> Bottleneck | None:
    """msprof-analyze's operator dispatch rule (at least 20 aclopCompileAndExecute calls in a
    rank's capture), or their host time over the share of the step the peer ranks high (5 %)."""
    h = e.host
    if h is None or h.compile_calls is None or h.compile_calls == 0:
        return None
    by_count = h.compile_calls >= t.online_compile_min_calls
    by_time = h.compile_ratio is not None and h.compile_ratio >= t.online_compile_ratio
    if not (by_count or by_time):
        return None
    per_step = "" if h.compile_per_step is None else f"{h.compile_per_step:.3g} per step, "
    detail = (
        f"aclopCompileAndExecute (on-line operator compilation): {per_step}up to "
        f"{h.compile_calls} in one rank's capture, {_ms(h.compile_ms)} of host time per step"
        f"{_share(h.compile_ratio)} (rule: >= {t.online_compile_min_calls} calls in a rank's "
        f"capture, msprof-analyze's, or >= {t.online_compile_ratio:.0%} of the step)"
    )
    if by_count:
        return finding(
            "online_compile", detail, float(h.compile_calls), float(t.online_compile_min_calls)
        )
    return finding("online_compile", detail, h.compile_ratio or 0.0, t.online_compile_ratio)


def _busy_tier(computing: float | None, t: Thresholds) -> str:
    if computing is None:
        return ""
    tier = (
        "good"
        if computing > t.device_busy_good
        else "room to improve"
        if computing >= t.device_busy_low
        else "low"
    )
    return (
        f"; the device computes {computing:.0%} of the step ({tier}: checklist > "
        f"{t.device_busy_good:.0%} good, < {t.device_busy_low:.0%} low)"
    )


def transfer_tier(transfer: float | None, t: Thresholds) -> str:
    """The checklist's data-transfer tier (transit, not waiting, over the step), as a clause."""
    if transfer is None:
        return ""
    tier = (
        "severe"
        if transfer > t.communication_ratio
        else "attention"
        if transfer > t.communication_notice_ratio
        else "fine"
    )
    return (
        f"; data transfer (the communication table's transit, not waiting) is {transfer:.1%} of"
        f" the step ({tier}: checklist > {t.communication_notice_ratio:.0%} attention, > "
        f"{t.communication_ratio:.0%} severe)"
    )


def _host_bound(e: Evidence, t: Thresholds) -> Bottleneck | None:
    """Free inside the step: launch-bound. Waiting for data shows as Preparing (before the
    step's first task); its share and the data loader's measured time are quoted to tell."""
    prep = e.phase_ratios.get("preparing")
    loader = e.host.data_loader_ratio if e.host else None
    told = "" if prep is None else f"; Preparing is {prep:.0%} of the step"
    if prep is not None and loader is not None:
        told += f" and the data loader {loader:.1%}"
        told += (
            ", so the data loader is not the cause"
            if loader <= t.data_loader_ratio
            else ": see input_pipeline first"
        )
    return _over(
        "host_bound",
        e.phase_ratios.get("free"),
        t.free_ratio,
        "the device is free {value:.0%} of the step ("
        f"{_figures(e.phase_ms.get('free'), None)}threshold {{threshold:.0%}})"
        + told.replace("{", "{{").replace("}", "}}")
        + _busy_tier(e.phase_ratios.get("computing"), t),
        e.mode,
    )


def _communication(e: Evidence, t: Thresholds) -> Bottleneck | None:
    return _over(
        "communication",
        e.phase_ratios.get("communication"),
        t.communication_ratio,
        "communication not overlapped is {value:.0%} of the step ("
        f"{_figures(e.phase_ms.get('communication'), e.step_ms)}threshold {{threshold:.0%}})"
        + transfer_tier(e.transfer_ratio, t).replace("{", "{{").replace("}", "}}"),
    )


def _of_ops(e: Evidence, ratio: float | None) -> str:
    """``X ms of Y ms; ``: a share of operator time as time, when the total is known."""
    if e.op_total_ms is None or ratio is None:
        return ""
    return f"{ratio * e.op_total_ms:.3f} ms of {e.op_total_ms:.3f} ms; "


def _format_conversion(e: Evidence, t: Thresholds) -> Bottleneck | None:
    found = _over(
        "format_conversion",
        e.conversion_ratio,
        t.format_conversion_ratio,
        "format conversions and copies take {value:.0%} of operator time ("
        + _of_ops(e, e.conversion_ratio)
        + "threshold {threshold:.0%})",
    )
    return found or _over(
        "format_conversion",
        e.reshape_transpose_ratio,
        t.reshape_transpose_ratio,
        "Reshape/Transpose take {value:.0%} of operator time ("
        + _of_ops(e, e.reshape_transpose_ratio)
        + "threshold {threshold:.0%})",
    )


def _ai_cpu(e: Evidence, t: Thresholds) -> Bottleneck | None:
    """msprof-analyze's AICPU check: any AI CPU task of >= 20 us, named."""
    count = e.ai_cpu_tasks
    if count is None or count < t.ai_cpu_min_tasks:
        return None
    share = "" if e.ai_cpu_ratio is None else f", {e.ai_cpu_ratio:.1%} of operator time"
    severe = (
        f" (above the checklist's {t.ai_cpu_ratio:.0%}: severe)"
        if e.ai_cpu_ratio is not None and e.ai_cpu_ratio > t.ai_cpu_ratio
        else ""
    )
    names = ", ".join(e.ai_cpu_ops[:8]) or "unnamed"
    return finding(
        "ai_cpu_fallback",
        f"{count} AI CPU task(s) of >= {t.ai_cpu_min_op_us:g} us ({names}){share}{severe}",
        float(count),
        float(t.ai_cpu_min_tasks),
    )


def _compute_bound(e: Evidence, t: Thresholds) -> Bottleneck | None:
    found = _over(
        "compute_bound",
        e.conv_matmul_ratio,
        t.conv_matmul_ratio,
        "Conv/MatMul take {value:.0%} of operator time ("
        + _of_ops(e, e.conv_matmul_ratio)
        + "threshold {threshold:.0%})",
    )
    return found or _over(
        "compute_bound",
        e.softmax_ratio,
        t.softmax_ratio,
        "Softmax takes {value:.0%} of operator time ("
        + _of_ops(e, e.softmax_ratio)
        + "threshold {threshold:.0%})",
    )


def _dynamic_shape(e: Evidence, t: Thresholds) -> Bottleneck | None:
    """Only a dynamic profile: dynamic tasks and no static one (msprof-analyze's rule). Binary
    kernels (jit_compile=False) report dynamic beside static MatMuls: that is not a finding."""
    count = e.dynamic_shape_ops
    if count is None or count < t.dynamic_shape_min_ops or count == 0 or (e.static_ops or 0) > 0:
        return None
    return finding(
        "dynamic_shape",
        f"all {count} operator tasks ran with dynamic shapes (rule: fires only when no operator "
        "ran static)",
        float(count),
        float(t.dynamic_shape_min_ops),
    )


def _small_ops(e: Evidence, t: Thresholds) -> Bottleneck | None:
    return _over(
        "small_ops",
        e.small_ops_ratio,
        t.small_ops_ratio,
        f"{{value:.0%}} of operators run shorter than {t.small_op_us:g} us "
        "(threshold {threshold:.0%})",
        e.mode,
    )


def _fusible_ops(e: Evidence, t: Thresholds) -> Bottleneck | None:
    """msprof-analyze's fusible operator rule (fusible.py): the rank whose reported sequences
    cover the largest share of its kernel table's span, over fusible_ops_ratio."""
    judged = [r for r in e.sequences if r.span_us > 0 and r.sequences]
    if not judged:
        return None
    worst = max(judged, key=lambda r: (r.union_us / r.span_us, r.rank))
    share = worst.union_us / worst.span_us
    if share < t.fusible_ops_ratio:
        return None
    named = "; ".join(
        f"{len(s.ops)} ops {s.ops[0]} ... {s.ops[-1]} x{s.count}, {s.wall_us / 1e3:.3f} ms "
        f"({'host' if s.host_bound else 'MTE'}-bound)"
        for s in worst.sequences[:3]
    )
    peer_ms = sum(s.wall_us for s in worst.sequences) / 1e3
    return finding(
        "fusible_ops",
        f"{worst.rank}: {len(worst.sequences)} operator sequence(s) of 3-10 compute tasks, "
        f"each recurring over {t.fusible_min_count} times host-bound (busy under "
        f"{t.fusible_host_ratio:.0%} of its wall time) or MTE-bound (MTE over "
        f"{t.fusible_mte_ratio:.0%} of aicore time), cover {worst.union_us / 1e3:.3f} ms, "
        f"{share:.0%} of its kernel table's {worst.span_us / 1e3:.3f} ms (counted once; "
        f"threshold {t.fusible_ops_ratio:.0%}; {len(judged)} rank(s) with such sequences; "
        f"msprof-analyze's rule adds up the overlapping windows: {peer_ms:.3f} ms). Longest: "
        + named,
        share,
        t.fusible_ops_ratio,
    )


RULES: tuple[Callable[[Evidence, Thresholds], Bottleneck | None], ...] = (
    _input_pipeline,
    _slow_preparing,
    _online_compile,
    _host_bound,
    _communication,
    _format_conversion,
    _ai_cpu,
    _compute_bound,
    _dynamic_shape,
    _small_ops,
    _fusible_ops,
)


DEFAULT_THRESHOLDS = Thresholds()


def diagnose(
    evidence: Evidence, thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> tuple[Bottleneck, ...]:
    """Every rule that fires, in a fixed order."""
    found = [rule(evidence, thresholds) for rule in RULES]
    return tuple(b for b in found if b is not None) + evidence.findings
