"""Profile summaries, diagnosis thresholds, the worker's job, and what a scrape renders."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ByteSize, ConfigDict, Field, TypeAdapter, with_config

from npumon.daemon.model.capture_info import CaptureInfo
from npumon.daemon.model.rank_hardware import RankHardware

# compute core types listed first; any other kind a table names (e.g. a new chip's) follows
CORE_TYPES = ("ai_core", "ai_vector_core", "ai_cpu", "mix", "dsa_sqe")
BOTTLENECK_KINDS = (
    "input_pipeline",
    "slow_preparing",
    "online_compile",
    "host_bound",
    "format_conversion",
    "ai_cpu_fallback",
    "communication",
    "compute_bound",
    "dynamic_shape",
    "small_ops",
    "slow_rank",
    "pipeline_imbalance",
    "slow_link",
    "small_packets",
    "byte_alignment",
    "env_vars",
    "operator_pmu",
    "affinity_api",
    "fusible_ops",
)

# a quantile q needs at least 1 / (1 - q) samples for its rank to fall on one of them: the
# reports and the exporter leave out a percentile of fewer steps
PERCENTILE_MIN_STEPS = {50: 2, 90: 10, 99: 100}

# What enters from JSON (the worker's report, the state file) is taken as written: strict types
# (no "0.5" for a float, no true for a count) and finite floats (NaN and inf are refused at
# validation, so they never reach a sample).
FINITE = ConfigDict(allow_inf_nan=False, strict=True)


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class StepStats:
    """Step (or graph iteration) duration over the analysed steps, warm-up excluded."""

    count: int
    mean_seconds: float
    p50_seconds: float
    p90_seconds: float
    p99_seconds: float


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class PhaseStat:
    """Mean time per step in one phase; ratio is that over the mean step time (None if unknown).
    The phases without ``within`` partition the step; a sub-phase names the phase it lies in
    (torch_npu's preparing lies inside free; communication_overlapped, the communication that
    ran while the device computed, inside computing). torch_npu's communication phase is the
    communication not overlapped; its total is communication + communication_overlapped."""

    phase: str
    seconds: float
    ratio: float | None
    within: str | None = None


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class OpShare:
    """Time of one (op type, core type) over all operator time; op_type `other` sums the rest."""

    op_type: str
    core_type: str
    seconds: float
    ratio: float
    count: int


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class CommShare:
    """Communication task time of one collective; ratio over the step time (None: no steps)."""

    collective: str
    seconds: float
    ratio: float | None
    count: int


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class LinkStat:
    """Transfers over one link type (HCCS, PCIE, RDMA, SDMA, SIO) from communication.json."""

    link_type: str
    transit_bytes: float
    transit_seconds: float
    bandwidth_bytes_per_second: float | None  # None: nothing moved


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class CommTimes:
    """communication.json's totals over all ranks read: transfer vs waiting, seconds."""

    elapse_seconds: float
    transit_seconds: float
    wait_seconds: float
    idle_seconds: float


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class CoreShare:
    core_type: str
    seconds: float
    ratio: float


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class RankBreakdown:
    """One rank's (or one device's) mean step and phases."""

    rank: str
    device_id: int | None
    steps: int
    step_seconds: float
    phases: tuple[PhaseStat, ...]


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class RankSpread:
    """(max - min) of a phase across ranks over the mean step time; flagged above the threshold."""

    phase: str
    spread_ratio: float
    slowest_rank: str
    fastest_rank: str
    flagged: bool


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class FindingSize:
    """The time per step a finding puts at stake (None: the profile does not measure it), that
    over the mean step, and how it was computed."""

    seconds_per_step: float | None
    share_of_step: float | None
    how: str


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class Bottleneck:
    kind: str
    detail: str
    advice: str
    value: float
    threshold: float
    size: FindingSize | None = None  # None only in summaries written before sizes


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class NotJudged:
    """A rule that did not judge this profile because its data cannot support a finding, and
    why (e.g. an operator table covering too little of the compute it should explain)."""

    kind: str
    reason: str


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class ProfileSummary:
    """What one capture (or one directory on disk) says about a workload."""

    workload: str
    layout: str  # torch_npu, msprof, legacy, or several joined with "+"
    capture_time_seconds: float | None  # Unix time the capture ended, when known
    step: StepStats | None
    phases: tuple[PhaseStat, ...]
    op_total_seconds: float | None
    op_time_ratio: tuple[OpShare, ...]
    core_type_time_ratio: tuple[CoreShare, ...]
    ai_cpu_seconds: float | None  # AI CPU ops of at least Thresholds.ai_cpu_min_op_us
    ai_cpu_count: int | None
    format_conversion_seconds: float | None
    format_conversion_ratio: float | None
    dynamic_shape_op_count: int | None  # None when the table has no OP State column
    op_types_inferred: bool  # Level0 tables: op types guessed from kernel names
    ranks: tuple[RankBreakdown, ...]
    rank_spread: tuple[RankSpread, ...]
    bottlenecks: tuple[Bottleneck, ...]
    # added later: defaults keep summaries in older state files readable
    mode: str | None = None  # eager or graph (advice differs); None when unknown
    communication: tuple[CommShare, ...] = ()  # HCCL task time by collective
    comm_times: CommTimes | None = None
    # comm_times' transit over the step time of the ranks it was read from: the checklist's
    # data-transfer share (> communication_notice_ratio attention, > communication_ratio severe)
    comm_transfer_ratio: float | None = None
    links: tuple[LinkStat, ...] = ()
    peer_groups: tuple[tuple[str, ...], ...] = ()  # ranks compared with each other (dp groups)
    ai_cpu_op_types: tuple[str, ...] = ()  # AI CPU op types with tasks >= ai_cpu_min_op_us
    # the operator tables' time over the computing time of the steps they cover, summed over
    # the ranks that have both (None: no rank has both); per rank in scope.ranks
    op_coverage: float | None = None
    not_judged: tuple[NotJudged, ...] = ()  # rules withheld, each with its reason


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class StepPoint:
    """One captured step of one rank; counted False: left out of the step statistics (warm-up,
    or a partial first or last step)."""

    step: int | None  # the step (iteration) ID; None when the table has none
    seconds: float
    counted: bool


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class RankDetail:
    """One rank's own figures: its steps, and its operator and communication task time over
    its whole capture (empty when the rank has no operator table)."""

    rank: str
    steps: tuple[StepPoint, ...] = ()
    op_total_seconds: float | None = None
    ops: tuple[OpShare, ...] = ()  # top operators, then `other`
    communication: tuple[CommShare, ...] = ()  # ratio over this rank's captured steps
    # its operator time over the computing time (computing, or FP->BP) of the steps its
    # operator tables cover; None without an operator table or a step table
    op_coverage: float | None = None


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class ReportScope:
    """Which ranks each cross-rank figure of the summary covers."""

    step_rank: str | None = None  # summary.step and summary.phases are this (slowest) rank's
    # operator time, core shares and communication tasks: summed over these ranks' captures
    op_ranks: tuple[str, ...] = ()
    # communication.json times and link bandwidth: summed over these ranks
    comm_ranks: tuple[str, ...] = ()
    ranks: tuple[RankDetail, ...] = ()


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class PartDelta:
    """How much one part of the step changed against the reference capture, seconds per step
    (positive: it grew). part_kind: step, phase, op_type, collective or rank."""

    part_kind: str
    part: str
    seconds_per_step: float
    reference_seconds_per_step: float | None  # None: the reference has no such part


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class Comparison:
    """A capture against its workload's reference capture (the newest that entered the
    baseline): the median step's change and the parts' deltas, largest change first."""

    reference_capture_time_seconds: float | None
    reference_capture: str | None  # its raw capture directory, when kept
    step_change_ratio: float | None  # median step over the reference's, minus 1
    deltas: tuple[PartDelta, ...]


@with_config(FINITE)
@dataclass(frozen=True, slots=True)
class AnalysisReport:
    """A summary plus what was read and what could not be (one message per file problem)."""

    summary: ProfileSummary
    sources: tuple[str, ...]  # table files that were read
    problems: tuple[str, ...]
    scope: ReportScope = ReportScope()  # per-rank figures and the ranks behind each total
    comparison: Comparison | None = None  # against the workload's reference capture, if any
    # a capture the daemon took: its job, slot, global steps and telemetry coverage (None:
    # npumon analyze, an ingested profile; then the JSON has no such key, see report_json)
    capture_info: CaptureInfo | None = None


NonNegative = Annotated[float, Field(ge=0)]


class Thresholds(BaseModel):
    """Checklist thresholds (ratios are 0..1 of step time or of operator time); this model is
    `profiling.thresholds` in the config and travels to the analysis worker in its job."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    warmup_steps: int = Field(default=2, ge=0)  # steps <= this are warm-up (compile, lazy init)
    # a capture's first or last step shorter than this share of the median step is partial (the
    # capture started or stopped inside it) and left out of the statistics; 0 keeps every step
    partial_step_ratio: NonNegative = 0.5
    input_pipeline_ratio: NonNegative = 0.20  # Data Aug Bound (input_pipeline), Preparing
    # (slow_preparing) over the step
    # the data loader's measured time (trace_view.json) over the step: input_pipeline
    data_loader_ratio: NonNegative = 0.10
    # on-line operator compilation (aclopCompileAndExecute): msprof-analyze's count over the
    # capture, or its host time over the step (msprof-analyze's high-priority share)
    online_compile_min_calls: int = Field(default=20, ge=1)
    online_compile_ratio: NonNegative = 0.05
    free_ratio: NonNegative = 0.20  # device idle inside the step: host bound
    communication_ratio: NonNegative = 0.20  # communication not overlapped with compute
    # data transfer (communication.json Transit, not Wait) over step time, the checklist's tiers:
    # above communication_notice_ratio "attention", above communication_ratio "severe"; stated
    # in the communication finding, slow_link, small_packets and the report (fires no finding)
    communication_notice_ratio: NonNegative = 0.05
    format_conversion_ratio: NonNegative = 0.30  # conversions + copies over op time
    reshape_transpose_ratio: NonNegative = 0.20
    conv_matmul_ratio: NonNegative = 0.60
    softmax_ratio: NonNegative = 0.15
    ai_cpu_min_op_us: NonNegative = 20.0  # msprof-analyze's AI CPU check: tasks of at least 20 us
    ai_cpu_ratio: NonNegative = 0.05  # AI CPU time (such tasks) over op time: named as severe
    ai_cpu_min_tasks: int = Field(default=1, ge=1)  # msprof-analyze: any such task is a finding
    dynamic_shape_min_ops: int = Field(default=1, ge=0)  # dynamic tasks, and none static
    small_op_us: NonNegative = 10.0
    small_ops_ratio: NonNegative = 0.50  # share of ops shorter than small_op_us
    # the operator-table rules (rules/ modules with OPERATOR_TABLE) judge only tables whose
    # operator time is at least this share of the computing time of the steps they cover;
    # FP->BP also holds communication not overlapped and gaps, so a whole table can cover less
    # than all of it
    op_coverage_ratio: NonNegative = 0.25
    rank_spread_ratio: NonNegative = 0.05  # msprof-analyze slow-rank rule, among dp replicas
    pipeline_imbalance_ratio: NonNegative = 0.10  # compute gap between pipeline stages / step
    slow_link_ratio: NonNegative = 0.60  # measured / expected bandwidth of a link type
    slow_link_min_mb: NonNegative = 1.0  # a link type must move this much to be judged
    link_expected_gbps: dict[str, float] = Field(  # GB/s a link type should reach on big messages
        default_factory=lambda: {"HCCS": 18.0, "RDMA": 12.5, "PCIE": 20.0, "SIO": 18.0}
    )
    # msprof-analyze's packet analysis (rules/packet.yaml): a transport's transfers under its
    # size are small; over small_packet_ratio of them small is a finding
    small_packet_sdma_mb: NonNegative = 16.0
    small_packet_rdma_mb: NonNegative = 1.0
    small_packet_ratio: NonNegative = 0.20
    # msprof-analyze's byte alignment check: SDMA transfers over this size that are not a
    # multiple of it; byte_alignment fires from this many ops with one
    byte_alignment_bytes: int = Field(default=512, ge=1)
    byte_alignment_min_ops: int = Field(default=1, ge=1)
    # msprof-analyze's vector operator PMU rules (rules/aicore_performance.yaml)
    operator_pmu_min_share: NonNegative = 0.01  # op types of at least this share of op time
    operator_pmu_shape_share: NonNegative = 0.005  # shapes judged and named: this share each
    pmu_vector_total_ratio: NonNegative = 0.90  # vec + mte2 + mte3: vec_mte2_mte3 bound
    pmu_vector_unit_ratio: NonNegative = 0.70  # one unit's ratio: bound; below it: headroom
    # msprof-analyze's fusible operator rule (rules/fusible_operator.yaml; npumon's
    # analysis/readers/fusible.py): windows of 3-10 compute tasks busy under fusible_host_ratio
    # of their wall time (host-bound) or with MTE time over fusible_mte_ratio of their core time;
    # a sequence recurring more than fusible_min_count times, MTE-bound or over
    # fusible_min_share of the rank's span, is reported; fusible_ops fires when the reported
    # windows cover fusible_ops_ratio of the span
    fusible_host_ratio: NonNegative = 0.4
    fusible_mte_ratio: NonNegative = 0.8
    fusible_min_count: int = Field(default=5, ge=0)
    fusible_min_share: NonNegative = 0.01
    fusible_ops_ratio: NonNegative = 0.05
    # msprof-analyze's affinity API rule: a torch call sequence of the host timeline with a fused
    # torch_npu replacement is named from this many matches in the capture (msprof-analyze: any)
    affinity_api_min_calls: int = Field(default=1, ge=1)
    aclnn_cache_limit_min: int = Field(default=10000, ge=0)  # env_vars: ACLNN_CACHE_LIMIT below
    # the step-time regression gate (profiling/gate.py): a capture's median step time above
    # the baseline by more than the noise band; the band is the baseline's own spread times
    # regression_noise_sigmas, never under regression_ratio; a capture of fewer steps than
    # regression_min_steps is too short to judge
    regression_ratio: NonNegative = 0.03
    regression_noise_sigmas: NonNegative = 3.0
    regression_min_steps: int = Field(default=20, ge=1)
    device_busy_good: NonNegative = 0.80  # AI Core busy > 80 % fine, 50-80 % room, < 50 % low
    device_busy_low: NonNegative = 0.50


class AnalysisLimits(BaseModel):
    """What one analysis may read and use; `profiling.limits` in the config, sent to the worker
    in its job. A table over its cap is not read (result skipped_too_large); a worker over its
    memory is stopped by the kernel (RLIMIT_AS), never the daemon."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kernel_table: ByteSize = ByteSize(1 << 30)  # kernel_details / op_summary, read in chunks
    op_statistic_table: ByteSize = ByteSize(64 << 20)  # one row per op type
    step_table: ByteSize = ByteSize(64 << 20)  # step_trace(_time): one row per step, read whole
    worker_memory: ByteSize = Field(default=ByteSize(4 << 30), ge=64 << 20)  # RLIMIT_AS


@dataclass(frozen=True, slots=True)
class AnalysisJob:
    """What the daemon asks of one analysis worker (JSON on the worker's stdin)."""

    path: Path
    workload: str
    top_n: int
    thresholds: Thresholds
    limits: AnalysisLimits = AnalysisLimits()
    # where the worker also writes the report as <workload>.json and <workload>.html (None: not)
    report_dir: Path | None = None
    baseline_seconds: float | None = None  # the workload's step-time baseline, for the page
    capture: Path | None = None  # the raw data the page names to open (None: not kept)
    # (pid, rank) of the captured processes whose environment names their rank (RANK or
    # LOCAL_RANK): the rank label of a profile that names none itself
    process_ranks: tuple[tuple[int, int], ...] = ()
    # a trusted folder above ``path`` (the ingest path): no link is followed below it
    confine: Path | None = None
    # the workload's reference capture: the report says what changed against it
    reference: ProfileSummary | None = None
    reference_capture: str | None = None
    # each captured rank's chip and ports over the capture window (profiling/window.py): a slow
    # rank's finding says what its hardware did, or that this node saw nothing
    hardware: tuple[RankHardware, ...] = ()
    # a capture the daemon took (its job, slot, telemetry coverage): the worker adds the global
    # steps and puts it in the report
    capture_info: CaptureInfo | None = None


# the analysis worker's exit codes (daemon/analysis/worker.py); launch.py maps them to results
WORKER_EXIT_NO_DATA = 2
WORKER_EXIT_BAD_JOB = 3
WORKER_EXIT_TOO_LARGE = 4  # a table over its profiling.limits cap: result skipped_too_large
WORKER_EXIT_OUT_OF_MEMORY = 5  # over profiling.limits.worker_memory (RLIMIT_AS)


# Built on first use: the scrape path imports this module but never serialises.
@cache
def job_adapter() -> TypeAdapter[AnalysisJob]:
    return TypeAdapter(AnalysisJob)


@cache
def report_adapter() -> TypeAdapter[AnalysisReport]:
    return TypeAdapter(AnalysisReport)


def report_json(report: AnalysisReport, indent: int | None = None) -> bytes:
    """The report as JSON; ``capture_info`` only when the daemon captured it, so the report of
    a profile without it (npumon analyze, an ingested one) is what it was before that key."""
    exclude = {"capture_info"} if report.capture_info is None else None
    return report_adapter().dump_json(report, indent=indent, exclude=exclude)


CAPTURE_RESULTS = (
    "ok",
    "timeout",
    "target_exited",
    "disk_quota",
    "failed",
    "skipped_busy",
    "skipped_not_attachable",
    "skipped_too_large",
)


@dataclass(frozen=True, slots=True)
class WorkloadProfile:
    """What the collector shows for one workload (any part may be unknown)."""

    workload: str
    summary: ProfileSummary | None = None
    baseline_seconds: float | None = None  # median of the judged captures' median step times
    last_success_timestamp: float | None = None
    capture_duration_seconds: float | None = None  # wall time of the last successful capture
    band_ratio: float | None = None  # the gate's noise band over the baseline
    judged: bool | None = None  # the latest capture voted (None: it has no step time)
    regressed: bool | None = None  # its verdict (None: not judged)
    comparison: Comparison | None = None  # the latest capture against the reference capture
    source: str | None = None  # what named it (identity.SOURCES); None before it is discovered
    rank_npus: tuple[tuple[int, int], ...] = ()  # (rank, npu) of its processes on this node
    hardware: tuple[RankHardware, ...] = ()  # its ranks' chips and ports in the last capture
    # the last capture's median step from the job's log over its median outside captures
    capture_inflation_ratio: float | None = None


@dataclass(frozen=True, slots=True)
class ProfilingView:
    """All workloads (sorted by name) plus capture counters since start, every result present."""

    workloads: tuple[WorkloadProfile, ...] = ()
    captures: tuple[tuple[str, int], ...] = tuple((r, 0) for r in CAPTURE_RESULTS)
    state_errors: tuple[tuple[str, int], ...] = ()  # (reason, count): corrupt, write_failed
    step_log_reads: tuple[tuple[str, int], ...] = ()  # (result, count) while step_log is on
