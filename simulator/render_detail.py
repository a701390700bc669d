"""`npu-smi info -t <type> -i N [-c M]`: TAB-indented `%-30s : value` blocks.

\tNPU ID                         : 0
\tChip Count                     : 1
<blank>
\tNPU Real-time Power(W)         : 103.5
\tChip ID                        : 0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from npumon.simulator.state import SimCard, SimChip, SimNode

Lines = Sequence[tuple[str, object]]


def kv(key: str, value: object, width: int = 30) -> str:
    return f"\t{key:<{width}} : {value}\n"


def _usages(chip: SimChip, node: SimNode) -> Lines:
    if node.family.p310:
        return [
            ("DDR Capacity(MB)", chip.memory_total_mb),
            ("DDR Usage Rate(%)", chip.memory_usage_percent),
            ("DDR Hugepages Total(page)", chip.hugepages_total),
            ("DDR Hugepages Usage Rate(%)", 0),
            ("Aicore Usage Rate(%)", chip.aicore_percent),
            ("Aicpu Usage Rate(%)", chip.aicpu_percent),
            ("Ctrlcpu Usage Rate(%)", chip.ctrlcpu_percent),
            ("Vectorcore Usage Rate(%)", chip.vectorcore_percent),
            ("DDR Bandwidth Usage Rate(%)", chip.memory_bandwidth_percent),
            *[(f"DVPP {u} Usage Rate(%)", 0) for u in ("VDEC", "VPC", "VENC", "JPEGE", "JPEGD")],
        ]
    # A2/A3 print the DDR fields hard-coded 0 (no DDR on the device)
    return [
        ("DDR Capacity(MB)", 0),
        ("DDR Usage Rate(%)", 0),
        ("DDR Hugepages Total(page)", 0),
        ("DDR Hugepages Usage Rate(%)", 0),
        ("HBM Capacity(MB)", chip.hbm_total_mb),
        ("HBM Usage Rate(%)", chip.hbm_usage_percent),
        ("Aicore Usage Rate(%)", chip.aicore_percent),
        ("Aivector Usage Rate(%)", chip.aivector_percent),
        ("Aicpu Usage Rate(%)", chip.aicpu_percent),
        ("Ctrlcpu Usage Rate(%)", chip.ctrlcpu_percent),
        ("DDR Bandwidth Usage Rate(%)", 0),
        ("HBM Bandwidth Usage Rate(%)", chip.hbm_bandwidth_percent),
        ("NPU Utilization(%)", chip.npu_util_percent),
        ("Aicube Usage Rate(%)", chip.aicube_percent),
    ]


def _power(chip: SimChip, node: SimNode) -> Lines | None:
    if chip.power_watts is None:
        return None  # 310P chips and A3 die 1: npu-smi skips the block (NOT_SUPPORT)
    return [("NPU Real-time Power(W)", f"{chip.power_watts:.1f}")]


def _temp(chip: SimChip, node: SimNode) -> Lines:
    # npu-smi prints "Temperature (C)" on card boards (the 950 here is an Atlas 350 card)
    key = "Temperature (C)" if node.family.v2 else "NPU Temperature (C)"
    return [(key, chip.temperature_celsius)]


def _memory(chip: SimChip, node: SimNode) -> Lines:
    if node.family.p310:
        return [
            ("Total DDR Capacity(MB)", sum(node.family.ddr_total_mb)),
            ("DDR Capacity(MB)", chip.memory_total_mb),
            ("DDR Clock Speed(MHz)", chip.ddr_clock_mhz),
        ]
    return [
        ("DDR Capacity(MB)", 0),
        ("DDR Clock Speed(MHz)", 0),
        ("HBM Capacity(MB)", chip.hbm_total_mb),
        ("HBM Clock Speed(MHz)", chip.hbm_clock_mhz),
        ("HBM Temperature(C)", chip.hbm_temperature_celsius),
        ("HBM Manufacturer ID", "0x56"),
    ]


def _ecc(chip: SimChip, node: SimNode) -> Lines:
    if node.family.p310:
        names = ("Error Count", "Aggregate Total Err Cnt", "Isolated Pages Count")
        return [(f"DDR {b} Bit {n}", 0) for n in names for b in ("Single", "Double")] + [
            ("DDR Single Bit Next-Isolated Pages Count", 0),
            ("DDR Double Bit Next-Isolated Pages Count", 0),
        ]
    return [
        ("HBM Single Bit Error Count", chip.hbm_single_bit_errors),
        ("HBM Double Bit Error Count", chip.hbm_double_bit_errors),
        ("HBM Single Bit Aggregate Total Err Cnt", chip.hbm_single_bit_errors),
        ("HBM Double Bit Aggregate Total Err Cnt", chip.hbm_double_bit_errors),
        ("HBM Single Bit Isolated Pages Count", 0),
        ("HBM Double Bit Isolated Pages Count", 0),
        *(
            [
                ("HBM Single Bit Next-Isolated Pages Count", 0),
                ("HBM Double Bit Next-Isolated Pages Count", 0),
            ]
            if node.family.v2
            else []
        ),
    ]


Block = Callable[[SimChip, SimNode], Lines | None]
CARD_BLOCKS: dict[str, Block] = {
    "usages": _usages,
    "power": _power,
    "temp": _temp,
    "memory": _memory,
    "ecc": _ecc,
}


def _mcu_block(kind: str, card: SimCard) -> str:
    if kind == "temp" and card.mcu_sensors_celsius:
        sensors = "".join(
            f"\t{name:<8}{' (C)':<22} : {value}\n" for name, value in card.mcu_sensors_celsius
        )
        return sensors + kv("Chip Name", "MCU") + "\n"
    if kind == "power" and card.mcu_power_watts is not None:
        power = kv("Power Dissipation(W)", f"{card.mcu_power_watts:.1f}")
        return power + kv("Chip Name", "MCU") + "\n"
    return ""


def render_card(kind: str, card: SimCard, node: SimNode, chip_id: int | None) -> str:
    """The card form (header, one block per chip ending in `Chip ID`, MCU), or one chip's lines."""
    width = 40 if kind == "ecc" else 30
    block = CARD_BLOCKS[kind]
    if chip_id is not None:
        only = block(card.chips[chip_id], node) or []
        return "".join(kv(k, v, width) for k, v in only)
    if node.family.v2:  # NPU_SMI_V2: no Chip Count, no Chip ID, one chip (npu_card_info.c)
        one = block(card.chips[0], node) or []
        return kv("NPU ID", card.npu, width) + "".join(kv(k, v, width) for k, v in one) + "\n"
    out = [kv("NPU ID", card.npu, width), kv("Chip Count", len(card.chips), width), "\n"]
    for chip in card.chips:
        lines = block(chip, node)
        if lines is None:
            continue
        out += [kv(k, v, width) for k, v in lines]
        out += [kv("Chip ID", chip.chip, width), "\n"]
    out.append(_mcu_block(kind, card))
    return "".join(out)


def render_common(card: SimCard, node: SimNode) -> str:
    """`-t common`: here `Chip ID` starts each block; the mcu block comes last."""
    fam = node.family
    if fam.v2:
        return _render_common_v2(card)
    out = [kv("NPU ID", card.npu), kv("Chip Count", len(card.chips))]
    for chip in card.chips:
        out += ["\n", kv("Chip ID", chip.chip)]
        out.append(kv("Memory Usage Rate(%)", 0 if fam.has_hbm else chip.memory_usage_percent))
        if fam.has_hbm:
            out.append(kv("HBM Usage Rate(%)", chip.hbm_usage_percent))
        out.append(kv("Aicore Usage Rate(%)", chip.aicore_percent))
        out.append(kv("Aicore Freq(MHZ)", chip.aicore_rated_mhz))
        out.append(kv("Aicore curFreq(MHZ)", chip.aicore_current_mhz))
        if chip.aicore_count is not None:
            out.append(kv("Aicore Count", chip.aicore_count))
        out.append(kv("Temperature(C)", chip.temperature_celsius))
        if chip.power_watts is not None:
            out.append(kv("NPU Real-time Power(W)", f"{chip.power_watts:.1f}"))
    out += ["\n", kv("Chip Name", "mcu"), kv("Temperature(C)", card.mcu_temperature_celsius)]
    if card.mcu_power_watts is not None:
        out.append(kv("NPU Real-time Power(W)", f"{card.mcu_power_watts:.1f}"))
    return "".join(out)


def _render_common_v2(card: SimCard) -> str:
    """`print_common_info` under NPU_SMI_V2: no Chip Count or Chip ID, no MCU; "Aicore Usage
    Rate(%)" holds the overall NPU utilization (`npu_get_chip_common_info_npu_usage`)."""
    chip = card.chips[0]
    rows: Lines = [
        ("NPU ID", card.npu),
        ("Memory Usage Rate(%)", 0),
        ("HBM Usage Rate(%)", chip.hbm_usage_percent or 0),
        ("Aicore Usage Rate(%)", chip.npu_util_percent or 0),
        ("Aicore Freq(MHZ)", chip.aicore_rated_mhz),
        ("Aicore curFreq(MHZ)", chip.aicore_current_mhz),
        ("Aicore Count", chip.aicore_count),
        ("Temperature(C)", chip.temperature_celsius),
        ("NPU Real-time Power(W)", f"{chip.power_watts or 0.0:.1f}"),
    ]
    return "".join(kv(k, v) for k, v in rows)


def render_health_chip(chip: SimChip) -> str:
    """`-t health -i N -c M`; extra error texts go on blank-line separated continuation lines."""
    out = [kv("Health Status", chip.health)]
    if not chip.error_codes:
        return "".join([*out, kv("Error Code", "NA"), kv("Error Information", "NA")])
    out.append(kv("Error Code", " ".join(chip.error_codes)))
    for i, text in enumerate(chip.error_information):
        out.append(kv("Error Information", text) if i == 0 else "\n" + kv(" ", text))
    return "".join(out)


def render_health_card(card: SimCard, node: SimNode) -> str:
    if node.family.v2:  # show_ascend_chip_health_info under the V2 card header
        return kv("NPU ID", card.npu) + render_health_chip(card.chips[0]) + "\n"
    out = [kv("NPU ID", card.npu), kv("Chip Count", len(card.chips)), "\n"]
    for chip in card.chips:
        out += [render_health_chip(chip), kv("Chip ID", chip.chip), "\n"]
    return "".join(out)


def _render_board_v2(card: SimCard, node: SimNode) -> str:
    """The 950's `-t board -i N` (a PCIe card), keys as in its manual's example."""
    fam, chip = node.family, card.chips[0]
    rows: Lines = [
        ("NPU ID", card.npu),
        ("Product Name", fam.product_name),
        ("NPU Name", fam.table_name),
        ("Chip Name", fam.chip_name),
        ("Chip Version", "V1"),
        ("Model", "NA"),
        ("Manufacturer", "Huawei"),
        ("Serial Number", card.serial),
        ("Software Version", node.npu_smi_version),
        ("Firmware Version", card.firmware_version),
        ("Compatibility", "OK"),
        ("Board ID", "0x1b"),
        ("Main Board ID", "0x6C(4P)"),
        ("PCB ID", "A"),
        ("BOM ID", 1),
        ("PCIe Bus Info", card.bus_id),
        ("Slot ID", fam.npu_ids.index(card.npu)),
        ("Class ID", "NA"),
        ("PCI Vendor ID", "0x19E5"),
        ("PCI Device ID", fam.pci_device_id),
        ("Subsystem Vendor ID", "0x19E5"),
        ("Subsystem Device ID", "0x4004"),
        ("Chip Count", 1),
        ("DDie ID", chip.ndie_id),
        ("Chip Position ID", 0),
    ]
    return "".join(kv(k, v) for k, v in rows)


def render_board(card: SimCard, node: SimNode) -> str:
    fam = node.family
    if fam.v2:
        return _render_board_v2(card, node)
    rows: Lines = [
        ("NPU ID", card.npu),
        ("Product Name", fam.product_name),
        ("Model", "NA"),
        ("Manufacturer", "Huawei"),
        ("Serial Number", card.serial),
        ("Software Version", node.npu_smi_version),
        ("Firmware Version", card.firmware_version),
        ("Compatibility", "OK"),
        ("Board ID", "0x60"),
        *([("Main Board ID", "0x08")] if fam.a3 else []),
        ("PCB ID", "A"),
        ("BOM ID", 1),
        ("PCIe Bus Info", card.bus_id),
        ("Slot ID", fam.npu_ids.index(card.npu)),
        ("Class ID", "NA"),
        ("PCI Vendor ID", "0x19E5"),
        ("PCI Device ID", fam.pci_device_id),
        ("Subsystem Vendor ID", "0x19E5"),
        ("Subsystem Device ID", "0x3003"),
        ("Chip Count", len(card.chips)),
    ]
    return "".join(kv(k, v) for k, v in rows)


def render_board_chip(card: SimCard, chip: SimChip, node: SimNode) -> str:
    fam = node.family
    rows: Lines = [
        ("NPU ID", card.npu),
        *([("NPU Name", fam.table_name)] if fam.a3 else []),
        ("Chip ID", chip.chip),
        *([] if fam.a3 else [("Chip Type", fam.chip_type)]),
        ("Chip Name", fam.chip_name),
        ("Chip Version", "V1"),
        ("Board ID", "0x60"),
        *([] if fam.p310 else [("PCB ID", "NA"), ("BOM ID", 1)]),
        ("Die ID" if fam.p310 else "VDie ID", chip.vdie_id),
        *([] if fam.p310 else [("NDie ID", chip.ndie_id)]),
        ("Chip Position ID", chip.chip),
        ("PCIe Bus Info", chip.bus_id),
        ("Firmware Version", card.firmware_version),
    ]
    return "".join(kv(k, v) for k, v in rows)
