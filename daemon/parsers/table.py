"""Parser for the `npu-smi info` box table: split by `|` cells, the header row decides the layout.

Never by column offsets: the box is 80, 98, 99, 106 or 116 characters wide depending on the
chip family and the driver version. Each header cell names the columns printed in that cell
(e.g. `Power(W)  Temp(C)  Hugepages-Usage(page)`), and the matching data cell holds one
whitespace token per column, where a fraction `577  / 7759` or `61825/ 65536` is one token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, TypedDict

from npumon.daemon.model.chips import InfoTable, TableChip, TableProcess
from npumon.daemon.parsers import values
from npumon.daemon.parsers.errors import ParseError

_COLUMN = re.compile(
    r"NPU\s+ID|NPU\s+Util\(%\)|NPU|Name|Health|Power\(W\)|Temp\(C\)|Hugepages-Usage\(page\)"
    r"|Chip|Device|Phy-ID|Bus-Id|AICore\(%\)|Memory-Usage\(MB\)|HBM-Usage\(MB\)"
)
_COLUMN_KEY = {
    "NPU ID": "npu",
    "NPU": "npu",
    "NPU Util(%)": "npu_util",
    "Name": "name",
    "Health": "health",
    "Power(W)": "power",
    "Temp(C)": "temp",
    "Hugepages-Usage(page)": "hugepages",
    "Chip": "chip",
    "Device": "device",
    "Phy-ID": "phy",
    "Bus-Id": "bus",
    "AICore(%)": "aicore",
    "Memory-Usage(MB)": "memory",
    "HBM-Usage(MB)": "hbm",
}
_PROCESS_CELL = {
    "process id": "pid",
    "process name": "name",
    "process memory(mb)": "memory",
    "process id in container": "unread",  # 26.0: the PID inside its container
}
_NO_PROCESSES = re.compile(r"No running processes found in NPU\s+(?P<npu>\d+)\Z")
_SEPARATOR = re.compile(r"\+[-=+]*\Z")
_ELISION = frozenset({"...", "…", "......"})

Columns = tuple[tuple[str, ...], ...]  # per cell, the column keys it holds


class _At(TypedDict):
    line_no: int
    line: str


@dataclass(frozen=True, slots=True)
class _Row:
    line_no: int
    line: str


def _cells(stripped: str, row: _Row) -> list[str]:
    if len(stripped) < 2 or not stripped.endswith("|"):
        raise ParseError("table row does not end with '|'", row.line_no, row.line)
    return stripped[1:-1].split("|")


def _columns(cell: str, row: _Row) -> tuple[str, ...]:
    """The column keys named in one header cell; anything unknown is an error."""
    if _COLUMN.sub("", cell).strip():
        raise ParseError(f"unknown column header {cell.strip()!r}", row.line_no, row.line)
    return tuple(_COLUMN_KEY[" ".join(m.group().split())] for m in _COLUMN.finditer(cell))


def _tokens(cell: str) -> list[str]:
    """Whitespace tokens, with `a / b`, `a/ b`, `a /b` glued into one fraction token."""
    out: list[str] = []
    for token in cell.split():
        if out and (out[-1].endswith("/") or token.startswith("/")):
            out[-1] += token
        else:
            out.append(token)
    return out


def _row_tokens(cells: list[str], layout: Columns, row: _Row) -> dict[str, str]:
    if len(cells) != len(layout):
        raise ParseError(f"expected {len(layout)} cells, got {len(cells)}", row.line_no, row.line)
    out: dict[str, str] = {}
    for cell, cols in zip(cells, layout, strict=True):
        tokens = _tokens(cell)
        if "name" in cols and len(tokens) > len(cols):  # a name with spaces: give it the rest
            at = cols.index("name")
            extra = len(tokens) - len(cols)
            tokens[at : at + extra + 1] = [" ".join(tokens[at : at + extra + 1])]
        if len(tokens) != len(cols):
            message = f"expected {len(cols)} values in {cell.strip()!r}"
            raise ParseError(message, row.line_no, row.line)
        out.update(zip(cols, tokens, strict=True))
    return out


def _required_int(token: str, what: str, row: _Row) -> int:
    value = values.parse_int(token, line_no=row.line_no, line=row.line)
    if value is None:
        raise ParseError(f"{what} is absent", row.line_no, row.line)
    return value


def _mib_pair(token: str, row: _Row) -> tuple[int | None, int | None]:
    used, total = values.parse_fraction(token, line_no=row.line_no, line=row.line)
    return (
        None if used is None else used * values.MIB,
        None if total is None else total * values.MIB,
    )


def _chip_fields(tokens: dict[str, str], row: _Row) -> dict[str, Any]:
    """TableChip keyword arguments from the tokens of one data row, in base units."""
    kw: dict[str, Any] = {}
    at: _At = {"line_no": row.line_no, "line": row.line}
    for key, token in tokens.items():
        if key == "npu":
            kw["npu"] = _required_int(token, "NPU ID", row)
        elif key == "chip":
            kw["chip"] = _required_int(token, "Chip", row)
        elif key in ("name", "health", "bus"):
            kw[{"bus": "bus_id"}.get(key, key)] = values.optional_text(token)
        elif key in ("device", "phy"):
            kw[{"device": "logic_id", "phy": "phy_id"}[key]] = values.parse_int(token, **at)
        elif key == "power":
            kw["power_watts"] = values.parse_float(token, **at)
        elif key == "temp":
            kw["temperature_celsius"] = values.parse_float(token, **at)
        elif key in ("aicore", "npu_util"):
            kw[f"{key}_ratio"] = values.percent_to_ratio(token, **at)
        elif key == "hugepages":
            kw["hugepages_used"], kw["hugepages_total"] = values.parse_fraction(token, **at)
        else:  # memory, hbm
            kw[f"{key}_used_bytes"], kw[f"{key}_total_bytes"] = _mib_pair(token, row)
    return kw


_CHIP_DEFAULTS: dict[str, Any] = {
    "chip": 0,  # the 950 layout has no chip column: one chip per NPU
    "name": None,
    "health": None,
    "power_watts": None,
    "temperature_celsius": None,
    "hugepages_used": None,
    "hugepages_total": None,
    "bus_id": None,
    "aicore_ratio": None,
    "memory_used_bytes": None,
    "memory_total_bytes": None,
    "hbm_used_bytes": None,
    "hbm_total_bytes": None,
}


def _heartbeat_lost(chip: TableChip) -> bool:
    """A 950 row whose readings npu-smi skipped: when `dcmiv2_check_device_heartbeat_state`
    fails, `query_card_chip_total_info` (hicann driver `npu_info.c`, NPU_SMI_V2) reads only the
    health and name and prints the zeroed rest: power 0.0, temperature 0, HBM `0 / 0`. A
    chip that answers has HBM (its total is read whenever the heartbeat holds) and a die above
    0 C, so the three zeros together are the skip, not a reading."""
    return chip.hbm_total_bytes == 0 and chip.power_watts == 0.0 and chip.temperature_celsius == 0.0


def _process(cells: list[str], layout: tuple[str, ...], row: _Row) -> TableProcess:
    if len(cells) != len(layout):
        raise ParseError(f"expected {len(layout)} cells, got {len(cells)}", row.line_no, row.line)
    kw: dict[str, Any] = {"chip": None, "name": None, "memory_bytes": None}
    at: _At = {"line_no": row.line_no, "line": row.line}
    for cell, key in zip(cells, layout, strict=True):
        if key == "ids":
            ids = cell.split()
            if len(ids) not in (1, 2):
                raise ParseError("expected 'NPU Chip' ids", row.line_no, row.line)
            kw["npu"] = _required_int(ids[0], "NPU ID", row)
            kw["chip"] = _required_int(ids[1], "Chip", row) if len(ids) == 2 else None
        elif key == "pid":
            kw["pid"] = _required_int(cell, "Process id", row)
        elif key == "name":
            kw["name"] = values.optional_text(cell)  # empty when a container cannot see the PID
        elif key == "memory":
            kw["memory_bytes"] = values.mib_to_bytes(cell, **at)
    return TableProcess(**kw)


class _Parser:
    """Line-by-line state: title, device header (2 rows), device rows (pairs), processes."""

    def __init__(self) -> None:
        self.npu_smi_version: str | None = None
        self.version: str | None = None
        self.header1: list[str] | None = None
        self.layout: tuple[Columns, Columns] | None = None
        self.pending: dict[str, Any] | None = None  # first row of a chip, waiting for its second
        self.chips: dict[tuple[int, int], TableChip] = {}
        self.lost: list[tuple[int, int]] = []
        self.process_layout: tuple[str, ...] | None = None
        self.processes: list[TableProcess] = []
        self.process_entries = 0  # process rows and "No running processes" lines
        self.seen_table = False
        self.ends_with_border = False  # the last table line read was a separator

    def feed(self, row: _Row) -> None:
        stripped = row.line.strip()
        if not stripped or stripped.startswith("[WARNING]"):  # driver warnings: not read
            return
        if stripped.startswith("+"):
            if not _SEPARATOR.match(stripped):
                raise ParseError("malformed separator line", row.line_no, row.line)
            self._no_pending(row)
            self.ends_with_border = True
        elif stripped in _ELISION and self.layout is not None:
            self._no_pending(row)  # a paste that left chips out
        elif stripped.startswith("|"):
            self.seen_table = True
            self.ends_with_border = False
            self._table_row(_cells(stripped, row), row)
        elif not self.seen_table and "npu-smi" in stripped:
            return  # the shell prompt and command echoed above the table
        else:
            raise ParseError("unexpected line in npu-smi info output", row.line_no, row.line)

    def _no_pending(self, row: _Row) -> None:
        if self.pending is not None or self.header1 is not None:
            raise ParseError("a two-row entry is cut short", row.line_no, row.line)

    def _table_row(self, cells: list[str], row: _Row) -> None:
        texts = [" ".join(c.split()) for c in cells]
        layout = self.layout
        if self.header1 is not None:
            self._set_layout(self.header1, cells, row)
        elif layout is None and "Health" in texts:
            self.header1 = cells
        elif layout is None and len(cells) == 1:
            self._title(texts[0], row)
        elif layout is None:
            raise ParseError("table row before the header", row.line_no, row.line)
        elif any(t.lower() == "process id" for t in texts):
            self._process_header(texts, row)
        elif self.process_layout is not None:
            self.process_entries += 1
            if not (len(texts) == 1 and _NO_PROCESSES.match(texts[0])):
                self.processes.append(_process(cells, self.process_layout, row))
        else:
            self._device_row(cells, layout, row)

    def _title(self, text: str, row: _Row) -> None:
        tokens = text.split()
        if self.npu_smi_version or self.version or "Version:" not in tokens:
            raise ParseError("expected the 'npu-smi ... Version: ...' title", row.line_no, row.line)
        for i, token in enumerate(tokens[:-1]):
            if token == "npu-smi":
                self.npu_smi_version = tokens[i + 1]
            elif token == "Version:":
                self.version = tokens[i + 1]

    def _set_layout(self, header1: list[str], cells: list[str], row: _Row) -> None:
        first = tuple(_columns(c, row) for c in header1)
        second = tuple(_columns(c, row) for c in cells)
        keys = [k for cell in first + second for k in cell]
        if len(keys) != len(set(keys)) or "npu" not in first[0]:
            raise ParseError("unsupported npu-smi info header", row.line_no, row.line)
        self.layout, self.header1 = (first, second), None

    def _device_row(self, cells: list[str], layout: tuple[Columns, Columns], row: _Row) -> None:
        if self.pending is None:
            self.pending = _chip_fields(_row_tokens(cells, layout[0], row), row)
            return
        kw = {**_CHIP_DEFAULTS, **self.pending}
        kw.update(_chip_fields(_row_tokens(cells, layout[1], row), row))
        self.pending = None
        chip = TableChip(**kw)
        if (chip.npu, chip.chip) in self.chips or (chip.npu, chip.chip) in self.lost:
            raise ParseError(f"NPU {chip.npu} chip {chip.chip} twice", row.line_no, row.line)
        if self.one_chip_npus() and _heartbeat_lost(chip):
            self.lost.append((chip.npu, chip.chip))
        else:
            self.chips[(chip.npu, chip.chip)] = chip

    def one_chip_npus(self) -> bool:
        """The 950 (NPU_SMI_V2) header: an NPU ID column and no chip column."""
        return self.layout is not None and not any(
            "chip" in cell for half in self.layout for cell in half
        )

    def _process_header(self, texts: list[str], row: _Row) -> None:
        self._no_pending(row)
        ids = _columns(texts[0], row)
        rest = [_PROCESS_CELL.get(t.lower()) for t in texts[1:]]
        if self.process_layout is not None or ids not in (("npu", "chip"), ("npu",)):
            raise ParseError("unexpected process table header", row.line_no, row.line)
        if None in rest or "pid" not in rest:
            raise ParseError("unknown process table column", row.line_no, row.line)
        self.process_layout = ("ids", *(key for key in rest if key is not None))

    def cut_short(self) -> str | None:
        """Why the chip list may be incomplete, or None when it is whole.

        The driver prints a header, then each chip's two rows, each chip block closed by a
        border; then, on some boards only, a process section (docs/architecture.md, "The
        npu-smi table"). So the chips are whole once a border follows a complete chip block,
        with or without a process section after it. A cut between two chip blocks looks whole:
        `-m` and the chips of earlier polls catch it (`chip_missing`).
        """
        if self.header1 is not None or self.layout is None:
            return "the output ends inside the header"
        if self.pending is not None:
            return "the last chip has only one of its two rows"
        if not self.chips and not self.lost:
            return "no chip after the header"
        if self.process_layout is None and not self.ends_with_border:
            return "no closing border after the last chip"
        return None

    def processes_cut(self) -> str | None:
        """Why the process list is incomplete, or None when it is whole (or the board prints
        none). A cut between two NPUs' entries looks whole: not every real table has an entry
        for every NPU (the 910B2C capture lists only NPU 0), so the count cannot be checked."""
        if self.process_layout is None:
            return None
        if self.process_entries == 0:
            return "a process section without rows"
        return None if self.ends_with_border else "no closing border"

    def finish(self) -> InfoTable:
        if not self.seen_table:
            raise ParseError("no npu-smi info table header found", 0, "")
        processes_cut = self.processes_cut()
        return InfoTable(
            npu_smi_version=self.npu_smi_version,
            version=self.version,
            chips=tuple(self.chips.values()),
            processes=() if processes_cut else tuple(self.processes),
            cut_short=self.cut_short(),
            processes_cut=processes_cut,
            one_chip_npus=self.one_chip_npus(),
            lost=tuple(self.lost),
        )


def parse_info(text: str) -> InfoTable:
    """`npu-smi info`: every chip (both rows merged) and the process table, in base units."""
    parser = _Parser()
    for line_no, line in enumerate(text.splitlines(), start=1):
        parser.feed(_Row(line_no, line))
    return parser.finish()
