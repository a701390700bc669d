"""Parsers for `npu-smi info -m` (NPU/chip/logic-id mapping) and `npu-smi info -l` (NPU list)."""

from __future__ import annotations

import re

from npumon.daemon.model.npu_smi import ChipMapping, ListedNpu, MappedChip, NpuList
from npumon.daemon.parsers import values
from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.keyvalue import Field, field_int, field_text, read_fields

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


_LIST_TOTAL = frozenset({"total count", "card count"})
_LIST_FIELDS = {
    "chip count": "chip_count",
    "product name": "product_name",
    "serial number": "serial",
}


def _listed(npu: int, fields: list[Field]) -> ListedNpu:
    kw: dict[str, int | str | None] = {}
    for f in fields:
        name = _LIST_FIELDS[f.key]
        if name in kw:
            raise ParseError(f"{f.key!r} twice for NPU {npu}", f.line_no, f.line)
        kw[name] = field_int(f) if name == "chip_count" else field_text(f)
    chip_count = kw.get("chip_count")
    product, serial = kw.get("product_name"), kw.get("serial")
    return ListedNpu(
        npu,
        chip_count if isinstance(chip_count, int) else None,
        product if isinstance(product, str) else None,
        serial if isinstance(serial, str) else None,
    )


def parse_list(text: str) -> NpuList:
    """`npu-smi info -l`: `Total Count` (310: `Card Count`), then one block per NPU ID."""
    total: int | None = None
    seen_total = False
    blocks: list[tuple[int, list[Field]]] = []
    for f in read_fields(text):
        if f is None:
            continue
        if f.key in _LIST_TOTAL:
            if seen_total:
                raise ParseError("card count printed twice", f.line_no, f.line)
            total, seen_total = field_int(f), True
        elif f.key == "npu id":
            npu = field_int(f)
            if npu is None or any(npu == b[0] for b in blocks):
                raise ParseError("missing or repeated NPU ID", f.line_no, f.line)
            blocks.append((npu, []))
        elif f.key in _LIST_FIELDS:
            if not blocks:
                raise ParseError(f"{f.key!r} before any NPU ID", f.line_no, f.line)
            blocks[-1][1].append(f)
    if not seen_total and not blocks:
        raise ParseError("no npu-smi info -l output", 0, "")
    return NpuList(total, tuple(_listed(npu, fields) for npu, fields in blocks))
