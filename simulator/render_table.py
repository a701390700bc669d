"""`npu-smi info`, `info -m` and `info -l` in the printf layouts of the real tool.

The 910B / A3 box is 98 characters wide (npu-smi up to 25.x), the 310 family's 106::

    | 0     910B3               | OK            | 301.2       55                0    / 0   ...
    | 0                         | 0000:C1:00.0  | 70          0    / 0          61825/ 65536 ...
"""

from __future__ import annotations

from npumon.simulator.state import SimCard, SimChip, SimNode

_W910 = (27, 15, 52)
_W310 = (31, 17, 54)
_HEAD_910 = (
    "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|",  # noqa: E501
    "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |",  # noqa: E501
)
_PHY_ROW_910 = "| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |"  # noqa: E501
_HEAD_310 = (
    "| NPU     Name                  | Health          | Power(W)     Temp(C)           "
    "Hugepages-Usage(page) |",
    "| Chip    Device                | Bus-Id          | AICore(%)    Memory-Usage(MB)"
    "                        |",
)
_PROC_910 = "| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |"  # noqa: E501
_PROC_310 = (
    "| NPU     Chip                  | Process id      | Process name             "
    "| Process memory(MB)        |"
)
MAX_PROCESSES_PER_CHIP = 8  # npu-smi's MAX_CHIP_PROCESS_NUM

# The 950's (NPU_SMI_V2) layout: `print_total_info_header_950`, the V2 branches of
# `print_card_total_info_with_HBM_first` / `_second` and `print_proc_total_info_with_HBM`
# (hicann driver npu_info_print.c). Its process rows are one character wider than the box.
_V2_FULL = "+" + "-" * 97 + "+"
_V2_HEAD = (
    "+--------+------------------+---------------+-----------------------------------------------------+",  # noqa: E501
    "| NPU ID | Name             | Health        | Power(W)    Temp(C)           Hugepages-Usage(page) |",  # noqa: E501
    "|        |                  | Bus-Id        | NPU Util(%) Memory-Usage(MB)  HBM-Usage(MB)         |",  # noqa: E501
    "+========+==================+===============+=====================================================+",  # noqa: E501
)
_V2_CARD_END = _V2_HEAD[3]
_V2_PROC_HEAD = (
    "+---------------------------+---------------+-----------------------------------------------------+",  # noqa: E501
    "| NPU ID                    | Process id    | Process name             | Process memory(MB)       |",  # noqa: E501
    "+===========================+===============+=====================================================+",  # noqa: E501
)
_V2_PROC_END = _V2_PROC_HEAD[2]


def _render_info_v2(node: SimNode) -> str:
    ver = node.npu_smi_version
    lines = [_V2_FULL, f"| npu-smi {ver:<40} Version: {ver:<37} |", *_V2_HEAD]
    for card in node.cards:
        for chip in card.chips:
            lines.append(
                f"| {card.npu:<7}| {node.family.table_name:<17}| {chip.health:<13} | "
                f"{chip.power_watts or 0.0:<11.1f} {chip.temperature_celsius:<17} "
                f"{chip.hugepages_used:<6}/ {chip.hugepages_total:<13} |"
            )
            lines.append(
                f"|{'':<8}|{'':<18}| {chip.bus_id:<13} | {chip.npu_util_percent or 0:<11} "
                f"{0:<5}/ {0:<10} {chip.hbm_used_mb or 0:<6}/ {chip.hbm_total_mb or 0:<13} |"
            )
        lines.append(_V2_CARD_END)
    lines += _V2_PROC_HEAD
    for card in node.cards:
        rows = [
            f"| {card.npu:<26} | {proc.pid:<13} | {proc.name:<24} | {proc.memory_mb:<23} |"
            for chip in card.chips
            for proc in chip.processes[:MAX_PROCESSES_PER_CHIP]
        ]
        text = f"No running processes found in NPU {card.npu:<7}"
        lines += rows or [f"| {text:<96}|"]
        lines.append(_V2_PROC_END)
    return "\n".join(lines) + "\n"


def _rule(widths: tuple[int, ...], fill: str) -> str:
    return "+" + "+".join(fill * w for w in widths) + "+"


def _full(widths: tuple[int, ...], fill: str) -> str:
    return "+" + fill * (sum(widths) + len(widths) - 1) + "+"


def _power(chip: SimChip, node: SimNode) -> str:
    if chip.power_watts is not None:
        return f"{chip.power_watts:.1f}"
    return "NA" if node.family.p310 else "-"


def _rows_910(chip: SimChip, node: SimNode) -> list[str]:
    name = node.family.table_name
    first = (
        f"| {chip.npu:<5} {name:<20}| {chip.health:<13} | {_power(chip, node):<11} "
        f"{chip.temperature_celsius:<17} {chip.hugepages_used:<5}/ {chip.hugepages_total:<13} |"
    )
    ident = f"{chip.chip:<5} {chip.phy_id:<20}" if chip.phy_id is not None else f"{chip.chip:<26}"
    second = (
        f"| {ident}| {chip.bus_id:<13} | {chip.aicore_percent:<11} "
        f"{chip.memory_used_mb:<5}/ {chip.memory_total_mb:<10} "
        f"{chip.hbm_used_mb or 0:<5}/ {chip.hbm_total_mb or 0:<13} |"
    )
    return [first, second]


def _rows_310(chip: SimChip, node: SimNode) -> list[str]:
    first = (
        f"| {chip.npu:<7} {node.family.table_name:<22}| {chip.health:<15} | "
        f"{_power(chip, node):<12} {chip.temperature_celsius:<17} "
        f"{chip.hugepages_used:<6}/ {chip.hugepages_total:<13} |"
    )
    second = (
        f"| {chip.chip:<7} {chip.logic_id:<22}| {chip.bus_id:<15} | {chip.aicore_percent:<12} "
        f"{chip.memory_used_mb:<5}/ {chip.memory_total_mb:<32} |"
    )
    return [first, second]


def _process_rows(card: SimCard, p310: bool) -> list[str]:
    rows = []
    for chip in card.chips:
        for proc in chip.processes[:MAX_PROCESSES_PER_CHIP]:
            if p310:
                rows.append(
                    f"| {card.npu:<7} {chip.chip:<22}| {proc.pid:<15} | {proc.name:<24} "
                    f"| {proc.memory_mb:<25} |"
                )
            else:
                rows.append(
                    f"| {card.npu:<7} {chip.chip:<18}| {proc.pid:<13} | {proc.name:<24} "
                    f"| {proc.memory_mb:<23} |"
                )
    if not rows:
        text = f"No running processes found in NPU {card.npu}"
        rows.append(f"| {text:<102} |" if p310 else f"| {text:<94} |")
    return rows


def render_info(node: SimNode) -> str:
    """The summary table and, except on a SoC board, the process table."""
    if node.family.v2:
        return _render_info_v2(node)
    p310 = node.family.p310
    widths = _W310 if p310 else _W910
    ver = node.npu_smi_version
    title = (
        f"| npu-smi {ver:<40} Version: {ver:<44} |"
        if p310
        else (f"| npu-smi {ver:<24} Version: {ver:<52} |")
    )
    head = _HEAD_310 if p310 else (_HEAD_910[0], _PHY_ROW_910 if node.family.a3 else _HEAD_910[1])
    lines = [_full(widths, "-"), title, _rule(widths, "-"), *head, _rule(widths, "=")]
    # dies of one A3 NPU are split by a full-width rule, 310 chips by a ruled one
    chip_rule = _rule(widths, "-") if p310 else _full(widths, "-")
    for card in node.cards:
        for i, chip in enumerate(card.chips):
            if i:
                lines.append(chip_rule)
            lines += _rows_310(chip, node) if p310 else _rows_910(chip, node)
        lines.append(_rule(widths, "="))
    if node.family.soc:  # a SoC board prints no process section
        return "\n".join(lines) + "\n"
    lines += [_rule(widths, "-"), _PROC_310 if p310 else _PROC_910, _rule(widths, "=")]
    for card in node.cards:
        lines += _process_rows(card, p310)
        lines.append(_rule(widths, "="))
    return "\n".join(lines) + "\n"


def render_mapping(node: SimNode) -> str:
    """`npu-smi info -m`: TAB-indented %-30s columns, one Mcu row per card."""
    fam = node.family
    if not node.cards:
        return "There is no NPU card on this server.\n"
    if fam.v2:  # print_mapping_info_950: Slot ID, Chip ID 0, no MCU row
        head = ("NPU ID", "Slot ID", "Chip ID", "Chip Phy-ID")
        out = ["\t" + " ".join(f"{c:<30}" for c in head) + " Chip Name\n"]
        for slot, card in enumerate(node.cards):
            ids = (card.npu, slot, 0, card.chips[0].logic_id)
            out.append("\t" + " ".join(f"{i:<30}" for i in ids) + f" {fam.chip_name}\n")
        return "".join(out)
    cols = ["NPU ID", "Chip ID", "Chip Logic ID"] + (["Chip Phy-ID"] if fam.a3 else [])
    rows = [[*cols, "Chip Name"]]
    name = fam.chip_name if fam.a3 else f"{fam.chip_type} {fam.chip_name}"
    for card in node.cards:
        for chip in card.chips:
            phy = [str(chip.phy_id)] if fam.a3 else []
            rows.append([str(card.npu), str(chip.chip), str(chip.logic_id), *phy, name])
        rows.append([str(card.npu), str(fam.mcu_id), "-", *(["-"] if fam.a3 else []), "Mcu"])
    return "".join(
        "\t" + " ".join(f"{c:<30}" for c in row[:-1]) + " " + row[-1] + "\n" for row in rows
    )


def render_list(node: SimNode) -> str:
    """`npu-smi info -l`; Product Name / Serial Number are suppressed on 910-class servers."""
    if not node.cards:
        return "There is no NPU card on this server.\n"
    out = [f"\t{'Total Count':<30} : {len(node.cards)}\n\n"]
    for card in node.cards:
        out.append(f"\t{'NPU ID':<30} : {card.npu}\n")
        if node.family.p310 or node.family.v2:  # card boards (the 950 here is a PCIe card)
            out.append(f"\t{'Product Name':<30} : {node.family.product_name}\n")
            out.append(f"\t{'Serial Number':<30} : {card.serial}\n")
        if node.family.v2:
            out.append("\n")  # V2 prints no Chip Count
        else:
            out.append(f"\t{'Chip Count':<30} : {len(card.chips)}\n\n")
    return "".join(out)
