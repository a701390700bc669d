"""The typed evidence the diagnosis rules (rules/) judge: what the readers (readers/) found in
one profile, as frozen values. Nothing here reads a file or judges."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from npumon.daemon.model.profile import CommTimes, LinkStat, RankBreakdown, RankSpread

if TYPE_CHECKING:
    import pandas as pd

# the host timeline's ranges by name prefix (Timeline.aten, Timeline.optimizer)
ATEN = "aten::"
OPTIMIZER = "Optimizer.step#"
PACKET_LINKS = ("SDMA", "RDMA")  # the transports msprof-analyze's packet analysis judges
# the PMU columns of a Level1+ kernel_details (aic_metrics=PipeUtilization) for operator_pmu;
# 910A, whose one AI Core kind runs cube and vector work, names them without the aiv_ prefix
PMU_RATIOS = ("aiv_vec_ratio", "aiv_mte2_ratio", "aiv_mte3_ratio")


@dataclass(frozen=True, slots=True)
class HostShare:
    """HostTimes of the ranks that have them over those ranks' steps: per step and over step
    time (None where no rank measured it)."""

    steps: int
    data_loader_ms: float | None
    data_loader_ratio: float | None
    compile_calls: int | None  # the most of one rank's capture (msprof-analyze counts per rank)
    compile_per_step: float | None  # calls
    compile_ms: float | None  # per step
    compile_ratio: float | None


@dataclass(frozen=True, slots=True)
class Sequence_:
    ops: tuple[str, ...]  # operator names, launch order
    ids: tuple[int, ...]  # the operators (name and shapes) as ids, for containment
    count: int  # windows of it reported
    wall_us: float  # their wall time, summed (msprof-analyze's figure)
    busy_us: float  # their tasks' time
    host_bound: bool
    mte_bound: bool


@dataclass(frozen=True, slots=True)
class RankSequences:
    """One rank's reported sequences and what their windows cover, counted once."""

    rank: str
    span_us: float
    union_us: float  # the reported windows' intervals merged
    sequences: tuple[Sequence_, ...]  # longest wall time first


@dataclass(frozen=True, slots=True)
class PacketStat:
    """Communication ops of one rank (per op entry, every step) that moved data over a transport,
    and those of them that moved less than its small-packet size."""

    rank: str  # the unit (or its file, where a unit has several) the ops were read from
    link_type: str
    ops: int
    small_ops: int
    small_ms: float  # transit time of the small ones
    min_mb: float


@dataclass(frozen=True, slots=True)
class AlignStat:
    """SDMA transfers over the alignment size (every op entry, step and rank): those whose size
    is not a multiple of it, and the ops that made them."""

    ops: int  # op entries with such transfers
    unaligned_ops: int
    unaligned_bytes: float
    unaligned_ms: float
    aligned_bytes: float
    aligned_ms: float
    examples: tuple[tuple[str, int, float], ...]  # (op, size B, ms), longest first


@dataclass(frozen=True, slots=True)
class PairStat:
    """Transfers from one rank to another over one link type (communication_matrix.json, summed
    over its steps and ops); ranks as the file names them."""

    link_type: str
    src: str
    dst: str
    transit_bytes: float
    transit_seconds: float

    @property
    def bandwidth_bytes_per_second(self) -> float | None:
        if self.transit_bytes <= 0 or self.transit_seconds <= 0:
            return None
        return self.transit_bytes / self.transit_seconds


@dataclass(frozen=True, slots=True)
class CommRead:
    times: CommTimes | None  # None when no communication.json could be read
    links: tuple[LinkStat, ...]
    packets: tuple[PacketStat, ...]  # per rank, the transports some op moved data over
    pairs: tuple[PairStat, ...] = ()  # from communication_matrix.json, every rank read
    alignment: AlignStat | None = None  # None: no op moved SDMA transfers of a known size


@dataclass(frozen=True, slots=True)
class Range:
    """One host range: start and duration in ns, the name without its prefix, and where the
    model code called it (its call stack's first own frame; "" without a stack)."""

    start_ns: int
    dur_ns: int
    name: str
    where: str = ""


@dataclass(frozen=True, slots=True)
class Timeline:
    """One rank's aten and optimizer sequences."""

    unit: str
    aten: tuple[Range, ...]
    optimizer: tuple[Range, ...]


@dataclass(frozen=True, slots=True)
class VectorRows:
    """One table's operator time and its vector rows (shapes known)."""

    total_us: float
    rows: pd.DataFrame
    notes: tuple[str, ...] = ()  # how much of a big table was judged


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the rules look at, for the whole profile; None or empty where the data does not say."""

    phase_ratios: dict[str, float] = field(default_factory=dict)
    phase_ms: dict[str, float] = field(default_factory=dict)  # mean per step
    step_ms: float | None = None  # mean step
    host: HostShare | None = None  # data loader and on-line compilation (readers/host.py)
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
    sequences: tuple[RankSequences, ...] = ()  # fusible operator sequences per rank
    # per-rank step breakdowns, the data-parallel replicas among them (readers/replicas.py),
    # each group's spreads per phase and the widest spread per phase over the groups
    ranks: tuple[RankBreakdown, ...] = ()
    replica_groups: tuple[tuple[str, ...], ...] = ()
    group_spreads: tuple[tuple[RankSpread, ...], ...] = ()
    rank_spread: tuple[RankSpread, ...] = ()
    communication: CommRead | None = None  # communication(_matrix).json of every rank
    env: tuple[tuple[str, Mapping[str, str] | None], ...] = ()  # per rank: recorded variables
    vector: tuple[VectorRows, ...] = ()  # per kernel table with PMU columns
    timelines: tuple[Timeline, ...] = ()  # host API sequences per rank
