"""The parser for `npu-smi info -m` (NPU/chip/logic-id mapping)."""

from __future__ import annotations

import re

from npumon.daemon.model.chips import ChipMapping, MappedChip
from npumon.daemon.parsers import values
from npumon.daemon.parsers.errors import ParseError

# -m header names (the 950 adds Slot ID, A3/950 add Chip Phy-ID); Chip Name is always last.
_MAP_COLUMN = re.compile(
    r"NPU\s+ID|Slot\s+ID|Chip\s+Logic\s+ID|Chip\s+Phy-ID|Chip\s+ID|Chip\s+Name"
)
_MAP_KEY = {
    "NPU ID": "npu",
    "Slot ID": "slot",
    "Chip ID": "chip",
    "Chip Logic ID": "logic",
    "Chip Phy-ID": "phy",
    "Chip Name": "name",
}
_NO_CARD = "There is no NPU card on this server."
_MCU_NAMES = frozenset({"mcu"})


def _map_header(line: str, line_no: int) -> tuple[str, ...]:
    if _MAP_COLUMN.sub("", line).strip():
        raise ParseError("unknown column in the -m header", line_no, line)
    cols = tuple(_MAP_KEY[" ".join(m.group().split())] for m in _MAP_COLUMN.finditer(line))
    if cols[-1:] != ("name",) or "npu" not in cols or "chip" not in cols:
        raise ParseError("unsupported -m header", line_no, line)
    return cols


def _map_row(line: str, line_no: int, cols: tuple[str, ...]) -> MappedChip | None:
    """One chip, or None for the MCU pseudo-chip (logic id `-`, name `Mcu`)."""
    tokens = line.split()
    if len(tokens) < len(cols):
        raise ParseError(f"expected {len(cols)} columns", line_no, line)
    ids: dict[str, int | None] = {}
    for key, token in zip(cols[:-1], tokens, strict=False):
        ids[key] = values.parse_int(token, line_no=line_no, line=line)
    name = " ".join(tokens[len(cols) - 1 :])  # "Ascend 910A": the name may hold spaces
    if name.lower() in _MCU_NAMES:
        return None
    npu, chip = ids["npu"], ids["chip"]
    if npu is None or chip is None:
        raise ParseError("NPU ID and Chip ID must be numbers", line_no, line)
    return MappedChip(npu, chip, ids.get("logic"), values.optional_text(name), ids.get("phy"))


def parse_mapping(text: str) -> ChipMapping:
    """`npu-smi info -m`: one MappedChip per AI chip; MCU rows dropped."""
    cols: tuple[str, ...] | None = None
    chips: dict[tuple[int, int], MappedChip] = {}
    no_card = False
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line == _NO_CARD:
            no_card = True
        elif cols is None and line.startswith("NPU ID"):
            cols = _map_header(line, line_no)
        elif cols is None and "npu-smi" in line:
            continue  # the command echoed above the output
        elif cols is None or no_card:
            raise ParseError("unexpected line in npu-smi info -m output", line_no, raw)
        elif (chip := _map_row(line, line_no, cols)) is not None:
            if (chip.npu, chip.chip) in chips:
                raise ParseError(f"NPU {chip.npu} chip {chip.chip} twice", line_no, raw)
            chips[(chip.npu, chip.chip)] = chip
    if cols is None and not no_card:
        raise ParseError("no npu-smi info -m header found", 0, "")
    return ChipMapping(tuple(chips.values()))
