"""The typed evidence the diagnosis rules (rules/) judge: what the readers (readers/) found in
one profile, as frozen values. Nothing here reads a file or judges."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from npumon.daemon.model.profile import CommTimes, LinkStat, RankBreakdown, RankSpread
from npumon.daemon.model.rank_hardware import RankHardware

if TYPE_CHECKING:
    import numpy as np
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
class WindowSet:
    """The windows of one length (consecutive compute tasks, none a communication or AI CPU
    task) of one rank's kernel table, measured: one entry per window."""

    length: int  # tasks in each window
    first: np.ndarray  # the row of its first task
    key: np.ndarray  # its operators (name and shapes) hashed: equal runs, equal keys
    busy_us: np.ndarray  # its tasks' time
    wall_us: np.ndarray  # first task's start to last task's end
    mte_us: np.ndarray  # its tasks' memory-transfer time (readers/fusible.py)
    core_us: np.ndarray  # its tasks' AI Core (cube) time


@dataclass(frozen=True, slots=True)
class OpWindows:
    """One rank's kernel table (its PMU head, readers/fusible.py) as operator windows."""

    rank: str
    span_us: float  # first task's start to last task's end
    start_us: np.ndarray  # per row
    duration_us: np.ndarray
    names: np.ndarray  # operator name per row
    ids: np.ndarray  # the operator (name and shapes) per row, as ids
    sets: tuple[WindowSet, ...]  # per window length, shortest first


@dataclass(frozen=True, slots=True)
class PacketSizes:
    """Communication op entries of one rank (per op entry, every step) that moved data over a
    transport: what each moved and how long it took."""

    rank: str  # the unit (or its file, where a unit has several) the ops were read from
    link_type: str
    sizes: tuple[tuple[float, float], ...]  # (Transit Size MB, Transit Time ms) per op entry


@dataclass(frozen=True, slots=True)
class OpTransfers:
    """One communication op entry's SDMA transfers of a known size (its Size Distribution)."""

    op: str  # its name without the group
    transfers: tuple[tuple[int, float, float], ...]  # (size B, transfers, ms) per size


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
class RankComm:
    """One rank's communication(_matrix).json (readers/comm.py), as read: the figures the
    profile's CommRead sums, one entry per addend, in reading order."""

    read: bool  # some communication.json (or its db, hccl_raw form) was read
    times: tuple[tuple[float, float, float, float], ...]  # per Total Op Info: elapse, transit,
    # wait, idle (s)
    links: tuple[tuple[str, float, float], ...]  # per Total Op Info and link type: MB, ms
    matrix_pairs: tuple[tuple[str, str, str, float, float], ...]  # link, src, dst, MB, ms
    matrix_links: bool  # no communication.json: its matrix's pairs stand in for the links
    packets: tuple[PacketSizes, ...]  # per file, the transports some op moved data over
    transfers: tuple[OpTransfers, ...]  # op entries with SDMA transfers of a known size
    matrix_notes: tuple[str, ...] = ()  # what could not be read, matrices and the rest
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CommRead:
    times: CommTimes | None  # None when no communication.json could be read
    links: tuple[LinkStat, ...]
    packets: tuple[PacketSizes, ...]  # per rank, the transports some op moved data over
    pairs: tuple[PairStat, ...] = ()  # from communication_matrix.json, every rank read
    transfers: tuple[OpTransfers, ...] = ()  # every rank's, reading order


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
class OpCoverage:
    """One rank's operator tables against its step table: their compute operator time (us) and
    the computing time (computing, or FP->BP in graph mode) of the steps they cover (us)."""

    rank: str
    op_us: float
    compute_us: float
    steps: int  # the steps whose computing time is counted

    @property
    def ratio(self) -> float | None:
        return self.op_us / self.compute_us if self.compute_us > 0 else None


def coverage_of(ranks: Sequence[OpCoverage]) -> float | None:
    """The operator time over the computing time of their steps, summed over these ranks: the
    coverage of the merged operator table the rules judge."""
    compute = sum(c.compute_us for c in ranks)
    return sum(c.op_us for c in ranks) / compute if compute > 0 else None


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
    # per rank with both tables: its operator time and the computing time of the steps its
    # operator tables cover (coverage_of sums them)
    op_coverage: tuple[OpCoverage, ...] = ()
    mode: str | None = None  # eager or graph
    transfer_ratio: float | None = None  # the communication table's transit over step time
    windows: tuple[OpWindows, ...] = ()  # operator windows per kernel table (fusible_ops)
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
    # the daemon's telemetry of each captured rank's chip and ports over the capture window
    hardware: tuple[RankHardware, ...] = ()
