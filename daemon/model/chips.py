"""Frozen results of the npu-smi parsers, in base units (bytes, watts, hertz, ratios 0..1).

``None`` always means "npu-smi did not give this value" (NA, -, empty, or field missing);
it must never be turned into 0 by a consumer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from npumon.daemon.model.network import ChipInterconnect

ChipId = tuple[int, int]  # (npu, chip), as npu-smi numbers them


# ---------------------------------------------------------------- npu-smi info (the table)
@dataclass(frozen=True, slots=True)
class TableChip:
    """One chip (die) of the `npu-smi info` table: its two rows merged."""

    npu: int
    chip: int
    name: str | None
    health: str | None  # raw text: OK, Warning, Alarm, Critical, UNKNOWN ...
    power_watts: float | None
    temperature_celsius: float | None
    hugepages_used: int | None
    hugepages_total: int | None
    bus_id: str | None
    aicore_ratio: float | None  # AICore(%) / 100; "NPU Util(%)" on the 950 layout goes to npu_util
    memory_used_bytes: int | None  # DDR "Memory-Usage(MB)"
    memory_total_bytes: int | None
    hbm_used_bytes: int | None
    hbm_total_bytes: int | None
    logic_id: int | None = None  # 310-family "Device" column
    phy_id: int | None = None  # A3 "Phy-ID" column
    npu_util_ratio: float | None = None  # 950 layout only


@dataclass(frozen=True, slots=True)
class TableProcess:
    """One row of the process table under `npu-smi info`."""

    npu: int
    chip: int | None  # None on the 950 layout (keyed by NPU ID only)
    pid: int
    name: str | None  # empty in containers that cannot resolve host PIDs -> None
    memory_bytes: int | None
    # never set by the parser: the table source adds these from /proc/<pid> (daemon/containers.py)
    container_id: str | None = None
    pod_uid: str | None = None  # from the kubelet's pod<UID> cgroup
    hostname: str | None = None  # HOSTNAME in its environment (the pod name, in a pod)
    visible_devices: tuple[int, ...] | None = None  # ASCEND_VISIBLE_DEVICES, parsed
    user: str | None = None
    slurm_job_id: str | None = None


@dataclass(frozen=True, slots=True)
class InfoTable:
    """The whole `npu-smi info` output."""

    npu_smi_version: str | None  # "npu-smi 23.0.rc2"  -> "23.0.rc2"
    version: str | None  # "Version: 23.0.rc2" (driver version as printed)
    chips: tuple[TableChip, ...]
    processes: tuple[TableProcess, ...]  # empty also where the board prints none (310B, 310)
    # None when the chip list is whole; else why it may not be ("the last chip has only one of
    # its two rows", ...): the output was cut inside the chips, and chips after the cut are unknown
    cut_short: str | None = None
    # the NPU_SMI_V2 layout (the Ascend 950): an NPU ID column and no chip column, one chip
    # (index 0) per NPU ID; that npu-smi refuses `-c` ("This device does not support input
    # parameter of -c.", hicann driver `npu_info.c` `npu_info_main`)
    one_chip_npus: bool = False
    # chips npu-smi printed with every reading zeroed because the driver lost their heartbeat
    # (V2 `query_card_chip_total_info` skips the reads): not in ``chips``, never served as zeros
    lost: tuple[ChipId, ...] = ()
    # None when the process list is whole or the board prints none; else why it is not ("no
    # closing border", "no entry for NPU 5"): the cut came after every chip, so the chips stand
    # and `processes` is empty
    processes_cut: str | None = None


# ---------------------------------------------------------------- -m and -l
@dataclass(frozen=True, slots=True)
class MappedChip:
    """One AI chip row of `npu-smi info -m` (MCU rows are dropped)."""

    npu: int
    chip: int
    logic_id: int | None
    name: str | None  # "Ascend 910A", "MiniD"
    phy_id: int | None = None  # A3 / 950 "Chip Phy-ID"


@dataclass(frozen=True, slots=True)
class ChipMapping:
    chips: tuple[MappedChip, ...]


# ---------------------------------------------------------------- -t usages
@dataclass(frozen=True, slots=True)
class ChipUsage:
    chip: int
    aicore_ratio: float | None = None
    aivector_ratio: float | None = None
    aicube_ratio: float | None = None
    aicpu_ratio: float | None = None
    ctrlcpu_ratio: float | None = None
    vectorcore_ratio: float | None = None  # 310P "Vectorcore Usage Rate(%)"
    npu_util_ratio: float | None = None  # "NPU Utilization(%)"
    memory_total_bytes: int | None = None  # DDR / Memory Capacity(MB)
    hugepages_total: int | None = None
    hbm_total_bytes: int | None = None
    memory_bandwidth_ratio: float | None = None  # DDR/Memory Bandwidth Usage Rate(%)
    hbm_bandwidth_ratio: float | None = None


@dataclass(frozen=True, slots=True)
class UsagesReport:
    npu: int
    chips: tuple[ChipUsage, ...]


# ---------------------------------------------------------------- -t common
@dataclass(frozen=True, slots=True)
class ChipCommon:
    chip: int
    aicore_ratio: float | None = None
    aicore_rated_hertz: float | None = None  # "Aicore Freq(MHZ)"
    aicore_current_hertz: float | None = None  # "Aicore curFreq(MHZ)"
    aicore_count: int | None = None
    temperature_celsius: float | None = None
    power_watts: float | None = None
    npu_util_ratio: float | None = None  # the 950's "Aicore Usage Rate(%)" (overall NPU)


@dataclass(frozen=True, slots=True)
class CommonReport:
    npu: int
    chips: tuple[ChipCommon, ...]


# ---------------------------------------------------------------- -t health
@dataclass(frozen=True, slots=True)
class HealthReport:
    """`npu-smi info -t health -i N -c M` for one chip."""

    status: str | None  # raw: OK / Warning / Alarm / Critical / UNKNOWN; None for NA
    error_codes: tuple[str, ...] = ()  # upper-case hex strings as printed


def code_value(code: str) -> int | None:
    """The integer a hex error code stands for (``8C03A000``, ``0x8c03a000``); None when it is
    not hex."""
    try:
        return int(code.strip().removeprefix("0x").removeprefix("0X"), 16)
    except ValueError:
        return None


# ---------------------------------------------------------------- -t memory
@dataclass(frozen=True, slots=True)
class MemoryReport:
    npu: int
    chip: int | None
    memory_total_bytes: int | None = None
    hbm_total_bytes: int | None = None
    hbm_temperature_celsius: float | None = None


# ---------------------------------------------------------------- -t ecc
@dataclass(frozen=True, slots=True)
class ChipEcc:
    chip: int
    hbm_single_bit_errors: int | None = None
    hbm_double_bit_errors: int | None = None
    hbm_single_bit_aggregate_total: int | None = None
    hbm_double_bit_aggregate_total: int | None = None
    ddr_single_bit_errors: int | None = None
    ddr_double_bit_errors: int | None = None
    ddr_single_bit_aggregate_total: int | None = None
    ddr_double_bit_aggregate_total: int | None = None


@dataclass(frozen=True, slots=True)
class EccReport:
    npu: int
    chips: tuple[ChipEcc, ...]


# ---------------------------------------------------------------- -t board
@dataclass(frozen=True, slots=True)
class BoardReport:
    """Card-level (`-t board -i N`) or chip-level (`-t board -i N -c M`) identity."""

    npu: int
    chip: int | None  # None for the card-level form
    firmware_version: str | None = None
    serial: str | None = None
    bus_id: str | None = None
    chip_name: str | None = None
    vdie_id: str | None = None


# ---------------------------------------------------------------- known failure texts
@dataclass(frozen=True, slots=True)
class KnownFailure:
    """A recognised npu-smi error text.

    ``reason`` is a short label value for `npumon_source_failures_total{reason=...}`:
    dcmi_init, device_busy, invalid_card, invalid_chip, no_device, not_supported,
    unknown_option, command_failed. Recognised anywhere in the output of a failed call, and
    in that of a call that exited 0 only when the error is the whole output.
    """

    reason: str
    message: str  # the npu-smi line that identified it, verbatim
    advice: str  # what an operator should do


# ---------------------------------------------------------------- DCMI only (no npu-smi query)
@dataclass(frozen=True, slots=True)
class ChipDcmi:
    """What only DCMI gives for one chip, in base units (None / empty: unsupported, -8255)."""

    voltage_volts: float | None = None  # dcmi_get_device_voltage
    # dcmi_get_pcie_link_bandwidth_info over its sampling window:
    # (direction transmit|receive, kind posted|non_posted|completion, stat min|max|avg, B/s)
    pcie_bandwidth: tuple[tuple[str, str, str, float], ...] = ()
    # dcmi_get_device_info VDEV_MNG: (vnpu_id, AI Core ratio, memory total bytes, used bytes)
    vnpus: tuple[tuple[int, float, int, int], ...] = ()


# ---------------------------------------------------------------- what the npu-smi sources hold
@dataclass(frozen=True, slots=True)
class ChipResults:
    """The latest result of every npu-smi query, as the sources last published them.

    Keyed by (npu, chip), or by npu for card-level reports. The sources build new mappings on
    every run and never mutate a published one; `daemon/model/reading.py` merges them per chip.
    """

    table: InfoTable | None = None  # None after a failed table poll: no chip from stale data
    usage: Mapping[tuple[int, int], ChipUsage] = field(default_factory=dict)
    common: Mapping[tuple[int, int], ChipCommon] = field(default_factory=dict)
    health: Mapping[tuple[int, int], HealthReport] = field(default_factory=dict)
    ecc: Mapping[tuple[int, int], ChipEcc] = field(default_factory=dict)
    memory: Mapping[tuple[int, int], MemoryReport] = field(default_factory=dict)
    chip_board: Mapping[tuple[int, int], BoardReport] = field(default_factory=dict)
    card_board: Mapping[int, BoardReport] = field(default_factory=dict)
    mapping: ChipMapping | None = None
    # -t hccs / hccs-bw / pcie-err / sio-info, read by the health tier (model/network.py)
    interconnect: Mapping[tuple[int, int], ChipInterconnect] = field(default_factory=dict)
    # DCMI-only readings, read by the health tier under backend auto/dcmi (ChipDcmi)
    dcmi: Mapping[tuple[int, int], ChipDcmi] = field(default_factory=dict)
    # NPUs of the table the identity tier has not tried yet: their chips serve no npu_chip_info
    # until it has, so its label set is complete from its first sample (no throwaway series)
    identity_pending: frozenset[int] = frozenset()
