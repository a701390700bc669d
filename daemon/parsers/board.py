"""Parser for `npu-smi info -t board -i N [-c M]` (card- or chip-level identity).

Only the keys behind npu_chip_info's labels are read (firmware, serial, bus, chip name, VDie
ID); the rest (Software Version, Product Name, PCI Device ID, Chip Type and Version, Chip
Count, Board ID, ...) are not.

VDie ID (5 hex words) is kept as printed with its words separated by single spaces, e.g.
`42C711D4 20B03704 4A10C8D4 14CC040A D2102003`: that is how npu-smi and Huawei's docs show
it, so an operator can grep for the label value in npu-smi output.
"""

from __future__ import annotations

from typing import Any

from npumon.daemon.model.chips import BoardReport
from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.keyvalue import (
    Field,
    build,
    field_int,
    field_text,
    read_fields,
    spec,
)


def _vdie(f: Field) -> str | None:
    text = field_text(f)
    return None if text is None else " ".join(text.split())


_BOARD = spec(
    [
        (["NPU ID"], "npu", field_int),
        (["Chip ID"], "chip", field_int),
        (["Firmware Version"], "firmware_version", field_text),
        (["Serial Number"], "serial", field_text),
        (["PCIe Bus Info"], "bus_id", field_text),
        (["Chip Name"], "chip_name", field_text),
        (["VDie ID"], "vdie_id", _vdie),
    ]
)


_IDS = frozenset({"npu id", "chip id"})


def parse_board(text: str, *, npu: int | None = None) -> BoardReport:
    """Known keys go to named fields (NA -> None); a board report has some key besides its ids."""
    fields = [f for f in read_fields(text) if f is not None]
    kw: dict[str, Any] = build(fields, _BOARD)
    if kw.get("npu") is None:
        if npu is None:
            raise ParseError("no NPU ID in -t board output and none given", 0, "")
        kw["npu"] = npu
    kw.setdefault("chip", None)
    if not any(f.key and f.key not in _IDS for f in fields):
        raise ParseError("no board fields", 0, "")
    return BoardReport(**kw)
