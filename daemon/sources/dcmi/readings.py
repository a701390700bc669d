"""DCMI answers into the model types the npu-smi parsers produce, in base units (dcmi.md §3, §5).

Pure: the helper's raw answers (rc, value) in, an ``InfoTable`` out, or a ``DcmiRefusal`` saying
why npu-smi must answer instead. Units: power 0.1 W, HBM and DDR MB, process memory bytes,
utilization %, hugepages in pages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from npumon.daemon.model.chips import (
    ChipCommon,
    ChipDcmi,
    ChipEcc,
    ChipUsage,
    HealthReport,
    InfoTable,
    MemoryReport,
    TableChip,
    TableProcess,
)
from npumon.daemon.model.network import ErrorCounts, HccsBandwidth, HccsLink, HccsReport
from npumon.daemon.parsers.interconnect import GB, GBIT, HCCS_LAST_PORT, SIO_DIRECTIONS
from npumon.daemon.sources.dcmi.client import Call, DcmiChip
from npumon.daemon.sources.query import HCCS_WINDOW_MS, Kind

MIB = 1024 * 1024
NOT_SUPPORTED = -8255
MISSING_SYMBOL = -99998
# dcmi.md §5: what each code asks for; the reason is the failure-counter label
RETRY = {-8006: "dcmi_timeout", -8012: "dcmi_not_ready", -8017: "dcmi_busy", -8020: "dcmi_busy"}
GONE = frozenset({-8007, -8008})  # the device left: re-enumerate
HEALTH = {0: "OK", 1: "Warning", 2: "Alarm", 3: "Critical"}
# dcmi_get_device_utilization_rate types (DRV-H DCMI_UTILIZATION_RATE_*)
UTIL_AICORE, UTIL_AICPU, UTIL_CTRLCPU, UTIL_DDR_BANDWIDTH, UTIL_VECTOR = 2, 3, 4, 5, 12
# npu-smi's chip types (DcmiChip.model) for the choices its source makes per chip
# -t usages reads the multi call (v2 on the 950); elsewhere DCMI answers -8255
MULTI_UTILIZATION = frozenset({"910b", "a3", "950"})
NO_DDR = frozenset({"910b", "a3", "950"})  # memory_info_v3 and DDR ECC: -8255
HBM = frozenset({"910", "910b", "a3", "950"})
NO_HBM = frozenset({"310", "310p", "310b"})
A_X_MAINBOARD = 0x15  # DCMI_A_X_910_93_MAIN_BOARD_ID: the A3 board npu-smi reads PCIe errors on
TABLE_CALLS: tuple[tuple[str, int], ...] = (
    ("health", 0),
    ("power", 0),
    ("temperature", 0),
    ("hbm", 0),
    ("memory", 0),
    ("utilization", UTIL_AICORE),
    ("multi_utilization", 0),  # the 950's NPU Util
    ("errors", 0),  # the 950's heartbeat check
    ("processes", 0),
    ("chip", 0),
    ("pcie", 0),
)
# every call a `-t usages` may make; `asked` picks a chip's
USAGES_CALLS: tuple[tuple[str, int], ...] = (
    ("hbm", 0),
    ("memory", 0),
    ("multi_utilization", 0),
    *(
        ("utilization", kind)
        for kind in (UTIL_AICORE, UTIL_AICPU, UTIL_CTRLCPU, UTIL_DDR_BANDWIDTH, UTIL_VECTOR)
    ),
)
COMMON_CALLS: tuple[tuple[str, int], ...] = (
    ("power", 0),
    ("temperature", 0),
    ("chip", 0),
    ("utilization", UTIL_AICORE),
    ("multi_utilization", 0),  # the 950's "Aicore Usage Rate(%)": NPU %
    ("aicore", 0),
)
ECC_DDR, ECC_HBM = 0, 2  # enum dcmi_device_type
HEALTH_CALLS: tuple[tuple[str, int], ...] = (("health", 0), ("errors", 0))
ECC_CALLS: tuple[tuple[str, int], ...] = (("ecc", ECC_HBM), ("ecc", ECC_DDR))
MEMORY_CALLS: tuple[tuple[str, int], ...] = (("hbm", 0), ("memory", 0))
# what npu-smi has no query for, read by the health tier; the PCIe call samples for its window
PCIE_WINDOW_MS = 200  # npu-exporter's -profilingTime default
DCMI_ONLY_CALLS: tuple[tuple[str, int], ...] = (
    ("voltage", 0),
    ("pcie_bandwidth", PCIE_WINDOW_MS),
    ("vnpus", 0),
)
# the interconnect queries, each the calls npu-smi's own source makes for it; the board's id
# tells where the HCCS ports start (npu-smi's get_env_offset_info)
HCCS_CALLS: tuple[tuple[str, int], ...] = (("mainboard", 0), ("hccs", 0))
HCCS_BW_CALLS: tuple[tuple[str, int], ...] = (("mainboard", 0), ("hccs_bw", HCCS_WINDOW_MS))
PCIE_ERROR_CALLS: tuple[tuple[str, int], ...] = (("pcie_errors", 0),)
SIO_CALLS: tuple[tuple[str, int], ...] = (("sio", 0),)
SUPERPOD_9000_BOARDS = frozenset({0x1C, 0x1D})  # Atlas 9000 A3 SuperPoD: M2-M7 only
HCCS_LANE_GBPS = 56
HCCS_PACKET_BYTES = 20  # npu-smi's "bytes" are packets x 20
HDLC_OK = 3
LANE_MODES = {0: 0, 1: 1, 2: 4, 3: 2}  # bits 9-10 of a port's lane word -> lanes
PCIE_ERROR_KINDS = ("tx", "rx", "lcrc", "ecrc", "retry")  # the struct's order, in PCIE_KINDS' names
VOLTS_PER_UNIT = 0.01  # dcmi_get_device_voltage: 0.01 V (npu-exporter's DcGetDeviceVoltage)
BYTES_PER_SECOND_PER_UNIT = 1e9  # MB/ms
PCIE_DIRECTIONS = {"tx": "transmit", "rx": "receive"}
PCIE_KINDS = {"p": "posted", "np": "non_posted", "cpl": "completion"}
PCIE_STATS = ("min", "max", "avg")  # the order of each array
CARD_DROP = 0x40F84E00  # the fault code of a card that fell off the bus: re-enumerate
# the same code on the 950, whose driver still lists the chip: npu-smi keeps its row, zeroed
HEARTBEAT_LOST = CARD_DROP
Values = Mapping[str, Any]  # one chip's answers by value key (see value_key); absent: -8255
_TYPED = frozenset({"utilization", "ecc"})  # calls whose argument is a type
VOLTAGE_NA = range(0x7FFD, 0x7FFF + 1)  # npu-smi prints NA for these (npu_chip_info.c:962-983)


def asked(query: str, chip: DcmiChip, name: str, arg: int) -> bool:
    """Whether npu-smi's own source makes this call for ``query`` on this chip type
    (docs/architecture.md, "DCMI reads"): 910B and A3 read AI Core, Cube, Vector and NPU % in
    `-t usages` through one multi-utilization call; only 310P reads Vector as type 12; DDR
    (memory_info_v3, type 5, DDR ECC) is not read on 910B, A3, 950, HBM not on the 310 family;
    PCIe errors only on 910B and A3."""
    model = chip.model
    if query in (Kind.INFO, Kind.COMMON) and (name, arg) in (
        ("multi_utilization", 0),
        ("utilization", UTIL_AICORE),
    ):
        # the 950's table "NPU Util(%)" and `-t common` "Aicore Usage Rate(%)" are the multi
        # call's npu_util (NC/npu_info.c:222-272, NC/npu_chip_info.c:1472-1489, NPU_SMI_V2);
        # elsewhere both are AI Core type 2
        return (name == "multi_utilization") == (model == "950")
    if name == "errors" and query == Kind.INFO:
        # the 950's npu-smi lists the error codes before a row's reads and zeroes a chip whose
        # heartbeat is lost (NC/npu_info.c:243-247, NPU_SMI_V2)
        return model == "950"
    if name == "multi_utilization":
        return model in MULTI_UTILIZATION
    if name == "utilization" and query == Kind.USAGES:
        if arg == UTIL_AICORE:
            return model not in MULTI_UTILIZATION
        if arg == UTIL_VECTOR:
            return model == "310p"
        if arg == UTIL_DDR_BANDWIDTH:
            return model not in HBM
    if name == "memory" or (name == "ecc" and arg == ECC_DDR):
        return model not in NO_DDR
    if name == "hbm" or (name == "ecc" and arg == ECC_HBM):
        return model not in NO_HBM
    if name == "pcie_errors":
        return model in ("910b", "a3")
    return True


def value_key(name: str, arg: int) -> str:
    """ "power", "utilization2", "ecc0": a call's answer among a chip's values."""
    return f"{name}{arg}" if name in _TYPED else name


class DcmiRefusal(Exception):
    """DCMI cannot give this answer; npu-smi must. ``function`` is set when the refusal is the
    function's for good (missing, no permission): the caller stops asking it for a while."""

    def __init__(
        self, reason: str, message: str, function: str | None = None, re_enumerate: bool = False
    ) -> None:
        self.reason = reason
        self.message = message
        self.function = function
        self.re_enumerate = re_enumerate
        super().__init__(f"{reason}: {message}")


def calls_for(
    chips: Sequence[DcmiChip],
    wanted: Sequence[tuple[str, int]],
    skip: Callable[[Call], bool],
    query: str = Kind.INFO,
) -> list[Call]:
    """The requests for ``wanted`` on each chip that npu-smi makes for ``query`` on its chip
    type (``skip``: known unsupported)."""
    calls = [
        (name, c.card, c.device, arg)
        for c in chips
        for name, arg in wanted
        if asked(query, c, name, arg)
    ]
    return [call for call in calls if not skip(call)]


def check(name: str, chip: DcmiChip, rc: int) -> bool:
    """True when the value is there; False for -8255 (absent); DcmiRefusal for the rest."""
    where = f"{name} of NPU {chip.card} chip {chip.device}"
    if rc == 0:
        return True
    if rc == NOT_SUPPORTED:
        return False
    if rc == MISSING_SYMBOL:
        raise DcmiRefusal("dcmi_missing_symbol", f"the library lacks the call for {where}", name)
    if rc == -8002:
        raise DcmiRefusal(
            "dcmi_permission",
            f"{where}: -8002 operation not permitted; see "
            "docs/privileges.md (device nodes, the HwHiAiUser group)",
            name,
        )
    if rc == -8012 and name == "health":  # npu-exporter's sign of a dropped card
        raise DcmiRefusal(
            "dcmi_chip_gone", f"{where}: -8012: the card may have dropped", re_enumerate=True
        )
    if rc in RETRY:
        raise DcmiRefusal(RETRY[rc], f"{where}: {rc}, asked again next poll")
    if rc in GONE or rc == -8001:
        raise DcmiRefusal(
            "dcmi_chip_gone", f"{where}: {rc}: the chip list is stale", re_enumerate=True
        )
    raise DcmiRefusal("dcmi_internal", f"{where}: {rc} (-8005 is the driver's catch-all)")


def _ratio(percent: Any) -> float:
    return float(percent) / 100.0


def _bus(p: Mapping[str, int]) -> str:
    return f"{p['domain']:04X}:{p['bdf_busid']:02X}:{p['bdf_deviceid']:02X}.{p['bdf_funcid']:X}"


def _memory(m: Mapping[str, int] | None) -> dict[str, int]:
    """DDR and hugepages as npu-smi prints them: 0 / 0 where the chip has none (-8255)."""
    if m is None:
        return {
            "memory_used_bytes": 0,
            "memory_total_bytes": 0,
            "hugepages_used": 0,
            "hugepages_total": 0,
        }
    return {
        "memory_used_bytes": (m["memory_size"] - m["memory_available"]) * MIB,
        "memory_total_bytes": m["memory_size"] * MIB,
        "hugepages_used": m["hugepages_total"] - m["hugepages_free"],
        "hugepages_total": m["hugepages_total"],
    }


def table_chip(chip: DcmiChip, values: Mapping[str, Any]) -> TableChip:
    """One chip's table row from its answers (a name absent from ``values``: -8255)."""
    health, hbm, info = values.get("health"), values.get("hbm"), values.get("chip")
    power, temperature = values.get("power"), values.get("temperature")
    util, pcie = values.get(value_key("utilization", UTIL_AICORE)), values.get("pcie")
    multi = values.get("multi_utilization")  # asked on the 950 alone
    return TableChip(
        npu=chip.card,
        chip=chip.device,
        name=info["chip_name"] or None if info else None,
        health=None if health is None else HEALTH.get(health, "UNKNOWN"),
        power_watts=None if power is None else power / 10.0,
        temperature_celsius=None if temperature is None else float(temperature),
        bus_id=_bus(pcie) if pcie else None,
        aicore_ratio=None if util is None else _ratio(util),
        npu_util_ratio=_ratio(multi["npu_util"]) if multi else None,
        hbm_used_bytes=hbm["memory_usage"] * MIB if hbm else None,
        hbm_total_bytes=hbm["memory_size"] * MIB if hbm else None,
        **_memory(values.get("memory")),
    )


def table_processes(
    chip: DcmiChip, listed: Sequence[Sequence[int]], name_of: Callable[[int], str | None]
) -> list[TableProcess]:
    return [
        TableProcess(npu=chip.card, chip=chip.device, pid=pid, name=name_of(pid), memory_bytes=used)
        for pid, used in listed
    ]


def collect(
    chips: Sequence[DcmiChip],
    calls: Sequence[Call],
    answers: Sequence[tuple[int, Any]],
    unsupported: Callable[[Call], None],
    refused: Callable[[DcmiRefusal], None] | None = None,
) -> dict[DcmiChip, dict[str, Any]]:
    """Each chip's values by value key; -8255 left out (and told to ``unsupported``), a
    function refused for good (missing, -8002) left out and told to ``refused`` when given;
    other codes raised."""
    by_chip = {(c.card, c.device): c for c in chips}
    values: dict[DcmiChip, dict[str, Any]] = {c: {} for c in chips}
    for call, (rc, value) in zip(calls, answers, strict=True):
        name, card, device, arg = call
        chip = by_chip[(card, device)]
        try:
            present = check(name, chip, rc)
        except DcmiRefusal as refusal:
            if refused is None or refusal.function is None:
                raise
            refused(refusal)
            continue
        if present:
            values[chip][value_key(name, arg)] = value
        else:
            unsupported(call)
    return values


def info_table(
    values: Mapping[DcmiChip, Values],
    *,
    versions: tuple[str | None, str | None],
    name_of: Callable[[int], str | None],
) -> InfoTable:
    """The `npu-smi info` table from the chips' DCMI values; on the 950 a chip whose error
    list holds the heartbeat-loss code is lost, as its npu-smi's table has it."""
    lost = [c for c, found in values.items() if HEARTBEAT_LOST in (found.get("errors") or ())]
    kept = {chip: found for chip, found in values.items() if chip not in lost}
    rows = [table_chip(chip, found) for chip, found in kept.items()]
    processes = [
        p
        for chip, found in kept.items()
        for p in table_processes(chip, found.get("processes") or (), name_of)
    ]
    return InfoTable(
        npu_smi_version=versions[0],
        version=versions[1],
        chips=tuple(rows),
        processes=tuple(processes),
        # the 950's npu-smi takes `-i <NPU ID>` alone: the tiers ask it so under DCMI too
        one_chip_npus=any(chip.model == "950" for chip in values),
        lost=tuple((chip.card, chip.device) for chip in lost),
    )


def _percent(values: Values, kind: int) -> float | None:
    found = values.get(value_key("utilization", kind))
    return None if found is None else _ratio(found)


def _ddr(values: Values, kind: int) -> float | None:
    """A DDR figure: 0 where the chip has no DDR (not asked, or -8255), as npu-smi prints it."""
    return 0.0 if values.get("memory") is None else _percent(values, kind)


def chip_usage(chip: DcmiChip, values: Values) -> ChipUsage:
    """`-t usages` for one chip: on 910B and A3 AI Core, Cube, Vector and NPU % from the
    multi-utilization call, as npu-smi's npu_get_util_info_simultaneously; elsewhere AI Core
    type 2 and (310P) Vector type 12, no Cube or NPU line; HBM bandwidth from the HBM info."""
    hbm, memory = values.get("hbm"), values.get("memory")
    multi = values.get("multi_utilization")
    aicore: float | None
    vector: float | None
    cube: float | None
    npu: float | None
    if multi is not None:
        aicore, vector = _ratio(multi["aicore_util"]), _ratio(multi["aiv_util"])
        cube, npu = _ratio(multi["aic_util"]), _ratio(multi["npu_util"])
    else:
        aicore, vector = _percent(values, UTIL_AICORE), _percent(values, UTIL_VECTOR)
        cube = npu = None
    return ChipUsage(
        chip=chip.device,
        aicore_ratio=aicore,
        aivector_ratio=vector,
        aicube_ratio=cube,
        aicpu_ratio=_percent(values, UTIL_AICPU),
        ctrlcpu_ratio=_percent(values, UTIL_CTRLCPU),
        npu_util_ratio=npu,
        memory_total_bytes=memory["memory_size"] * MIB if memory else 0,
        hugepages_total=memory["hugepages_total"] if memory else 0,
        hbm_total_bytes=hbm["memory_size"] * MIB if hbm else None,
        memory_bandwidth_ratio=_ddr(values, UTIL_DDR_BANDWIDTH),
        hbm_bandwidth_ratio=_ratio(hbm["bandwith_util_rate"]) if hbm else None,
    )


def chip_common(chip: DcmiChip, values: Values) -> ChipCommon:
    """`-t common` for one chip; the AI Core clocks from dcmi_get_device_aicore_info, as
    npu-smi reads them (MHz)."""
    power, temperature, info = values.get("power"), values.get("temperature"), values.get("chip")
    clocks = values.get("aicore")
    return ChipCommon(
        chip=chip.device,
        aicore_ratio=_percent(values, UTIL_AICORE),
        npu_util_ratio=_ratio(multi["npu_util"])
        if (multi := values.get("multi_utilization"))
        else None,
        aicore_rated_hertz=clocks["freq"] * 1e6 if clocks else None,
        aicore_current_hertz=clocks["cur_freq"] * 1e6 if clocks else None,
        aicore_count=info["aicore_cnt"] or None if info else None,  # 0: not reported
        temperature_celsius=None if temperature is None else float(temperature),
        power_watts=None if power is None else power / 10.0,
    )


def health_report(chip: DcmiChip, values: Values) -> HealthReport:
    """`-t health` for one chip: status and codes as npu-smi prints them (no texts: DCMI has
    only the codes; npumon's fault table names them)."""
    health, codes = values.get("health"), values.get("errors") or ()
    if CARD_DROP in codes and chip.model != "950":
        raise DcmiRefusal(
            "dcmi_chip_gone",
            f"NPU {chip.card} chip {chip.device} reports the card-drop code {CARD_DROP:08X}",
            re_enumerate=True,
        )
    listed = tuple(f"{code:08X}" for code in codes if code)
    status = None if health is None else HEALTH.get(health, "UNKNOWN")
    if not listed and status in ("Warning", "Alarm", "Critical"):
        status = "OK"  # npu-smi's handle_health_state: no error code, so OK
    return HealthReport(status=status, error_codes=listed)


def chip_ecc(chip: DcmiChip, values: Values) -> ChipEcc:
    """`-t ecc` for one chip: HBM (type 2) and DDR (type 0), the counts both struct forms have."""
    hbm, ddr = values.get(value_key("ecc", ECC_HBM)), values.get(value_key("ecc", ECC_DDR))
    fields: dict[str, int] = {}
    for prefix, found in (("hbm", hbm), ("ddr", ddr)):
        if found:
            fields.update(
                {
                    f"{prefix}_single_bit_errors": found["single_bit_error_cnt"],
                    f"{prefix}_double_bit_errors": found["double_bit_error_cnt"],
                    f"{prefix}_single_bit_aggregate_total": found["total_single_bit_error_cnt"],
                    f"{prefix}_double_bit_aggregate_total": found["total_double_bit_error_cnt"],
                }
            )
    return ChipEcc(chip=chip.device, **fields)


def memory_report(chip: DcmiChip, values: Values) -> MemoryReport:
    """`-t memory` for one chip; DDR 0 where it has none, as npu-smi prints it."""
    hbm, memory = values.get("hbm"), values.get("memory")
    return MemoryReport(
        npu=chip.card,
        chip=chip.device,
        memory_total_bytes=memory["memory_size"] * MIB if memory else 0,
        hbm_total_bytes=hbm["memory_size"] * MIB if hbm else None,
        hbm_temperature_celsius=float(hbm["temp"]) if hbm else None,
    )


def chip_dcmi(values: Values) -> ChipDcmi:
    """Voltage, PCIe bandwidth and vNPUs (volts, bytes per second, ratios, bytes from KB)."""
    volts, bandwidth = values.get("voltage"), values.get("pcie_bandwidth") or {}
    rows = []
    for name, triple in bandwidth.items():
        direction, kind, _ = name.split("_")
        rows += [
            (PCIE_DIRECTIONS[direction], PCIE_KINDS[kind], stat, v * BYTES_PER_SECOND_PER_UNIT)
            for stat, v in zip(PCIE_STATS, triple, strict=True)
        ]
    if volts in VOLTAGE_NA:
        volts = None
    return ChipDcmi(
        voltage_volts=None if volts is None else round(volts * VOLTS_PER_UNIT, 2),
        pcie_bandwidth=tuple(rows),
        vnpus=tuple(
            (vdev, _ratio(util), total * 1024, (total - free) * 1024)
            for vdev, util, total, free in values.get("vnpus") or ()
        ),
    )


def hccs_ports(mainboard: int) -> range:
    """The port indexes npu-smi prints, from the board's offset (1; 2 on 9000 SuperPoD) to 7."""
    return range(2 if mainboard in SUPERPOD_9000_BOARDS else 1, HCCS_LAST_PORT + 1)


def _lane_words(ports: int, packed: Sequence[int]) -> list[int]:
    """One lane word per port index: the driver packs one per bit set in ``ports``."""
    words, skipped = [], 0
    for index in range(len(packed)):
        if ports >> index & 1:
            words.append(packed[index - skipped])
        else:
            words.append(0)
            skipped += 1
    return words


def hccs_report(values: Values) -> HccsReport | None:
    """`-t hccs` as npu-smi prints it: one link per port of the board's range, by port index;
    one health for the chip (pcs_status 0 and HDLC OK) and the first port with a problem
    (pcs_status bits 8-15, while pcs_status is not 0). None: npu-smi serves."""
    board, found = values.get("mainboard"), values.get("hccs")
    if board is None or found is None:
        return None
    status = found["pcs_status"]
    words = _lane_words(found["ports"], found["lanes"])
    links = []
    for port in hccs_ports(board):
        lanes = LANE_MODES[words[port] >> 9 & 0x3]
        tx, rx = found["tx"][port], found["rx"][port]
        links.append(
            HccsLink(
                port,
                lanes=lanes,
                speed_bytes_per_second=lanes * HCCS_LANE_GBPS * GBIT,
                tx_packets=tx,
                tx_octets=tx * HCCS_PACKET_BYTES,
                rx_packets=rx,
                rx_octets=rx * HCCS_PACKET_BYTES,
                retries=found["retry"][port],
                crc_errors=found["crc"][port],
            )
        )
    return HccsReport(
        tuple(links),
        healthy=status == 0 and found["hdlc_status"] == HDLC_OK,
        first_error_link=None if status == 0 else status >> 8 & 0xFF,
    )


def _printed(gb_per_second: float) -> float:
    """Bytes per second of a GB/s figure as npu-smi prints it (6 decimals)."""
    return float(f"{gb_per_second:.6f}") * GB


def hccs_bandwidth(values: Values) -> HccsBandwidth | None:
    """`-t hccs-bw`: rows numbered by port index, as npu-smi prints them."""
    board, found = values.get("mainboard"), values.get("hccs_bw")
    if board is None or found is None:
        return None
    return HccsBandwidth(
        tuple(
            (port, _printed(found["tx"][port]), _printed(found["rx"][port]))
            for port in hccs_ports(board)
        )
    )


def reads_pcie_errors(chip: DcmiChip, mainboard: int | None) -> bool:
    """Whether npu-smi reads `-t pcie-err` through DCMI on this chip: 910B, and A3 on the A+X
    board (`show_ascend_chip_err_count_info`, `is_a_x_910_93`); ``mainboard`` is asked on A3
    only. The 950's (PCIe-booted boards outside split mode) are left to npu-smi."""
    return chip.model == "910b" or (chip.model == "a3" and mainboard == A_X_MAINBOARD)


def pcie_errors(values: Values) -> ErrorCounts | None:
    found = values.get("pcie_errors")
    return None if found is None else ErrorCounts(tuple(zip(PCIE_ERROR_KINDS, found, strict=True)))


def sio_errors(values: Values) -> ErrorCounts | None:
    found = values.get("sio")
    return (
        None
        if found is None
        else ErrorCounts(tuple(zip(SIO_DIRECTIONS.values(), found, strict=True)))
    )
