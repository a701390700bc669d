"""Shared machinery for npu-smi's `key : value` outputs (-l, -t usages/common/power/temp/...)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from npumon.daemon.parsers import values
from npumon.daemon.parsers.errors import ParseError

# Keys that describe the card, printed once before the per-chip blocks.
NPU_ID = "npu id"
CHIP_COUNT = "chip count"
CHIP_ID = "chip id"
CHIP_NAME = "chip name"
MCU_NAMES = frozenset({"mcu"})  # `Chip Name : mcu` (910/310P) or `MCU` (310, -t temp)


@dataclass(frozen=True, slots=True)
class Field:
    """One `key : value` line. ``key`` is normalised: lower case, single spaces."""

    key: str
    value: str
    line_no: int
    line: str


@dataclass(frozen=True, slots=True)
class Record:
    """The lines of one chip (``chip`` from its `Chip ID` line) or of the MCU."""

    fields: tuple[Field, ...]
    chip: int | None
    is_mcu: bool


@dataclass(frozen=True, slots=True)
class KvDocument:
    """A card header (`NPU ID`, `Chip Count`) and the chip/MCU records after it."""

    npu: int | None
    chip_count: int | None
    records: tuple[Record, ...]

    @property
    def one_chip_npu(self) -> bool:
        """The card-level form of npu-smi's NPU_SMI_V2 build (the Ascend 950): `NPU ID` and no
        `Chip Count` or `Chip ID` line, as `printf_ascend_card_info_header` and
        `printf_ascend_card_chip_id` (hicann driver `npu_card_info.c`) print them there. A
        V2 NPU ID is one chip, index 0 (`npu-smi info -m` prints Chip ID 0 for each)."""
        return (
            self.npu is not None
            and self.chip_count is None
            and all(r.chip is None for r in self.records)
        )


def normalise_key(key: str) -> str:
    """Padding differs (30/40 chars, TAB or spaces); case differs between versions (MHZ/MHz)."""
    return " ".join(key.split()).lower()


def read_fields(text: str) -> list[Field | None]:
    """Every line as a Field, ``None`` for a blank line (the block separator).

    A line without a colon is not key/value output at all (an error text, garbage).
    An empty key is kept: it is how `-t health` continues its Error Information.
    """
    out: list[Field | None] = []
    for line_no, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            out.append(None)
            continue
        key, sep, value = raw.partition(":")
        if not sep:
            raise ParseError("expected 'key : value'", line_no, raw)
        out.append(Field(normalise_key(key), value.strip(), line_no, raw))
    return out


def _record(fields: list[Field]) -> Record:
    chip: int | None = None
    is_mcu = False
    for f in fields:
        if f.key == CHIP_ID:
            chip = field_int(f)
            if chip is None:
                raise ParseError("Chip ID has no value", f.line_no, f.line)
        elif f.key == CHIP_NAME and f.value.lower() in MCU_NAMES:
            is_mcu = True
    return Record(tuple(fields), chip, is_mcu)


def split_records(text: str, *, chip_id_ends_block: bool) -> KvDocument:
    """Group the lines into chip and MCU records.

    ``chip_id_ends_block``: in usages/ecc/temp/power/board (and memory) each chip's lines END
    with `Chip ID` (and the MCU's with `Chip Name : MCU`); in common they START with them.
    A blank line always ends a record too. Lines without any Chip ID (output of `-c M`) make
    one record with ``chip=None``: the caller knows which chip it asked for.
    """
    npu: int | None = None
    chip_count: int | None = None
    records: list[Record] = []
    current: list[Field] = []

    def close() -> None:
        if current:
            records.append(_record(current))
            current.clear()

    for item in read_fields(text):
        if item is None:
            close()
        elif item.key == NPU_ID:
            npu = _single(npu, field_int(item), item)
        elif item.key == CHIP_COUNT:
            chip_count = _single(chip_count, field_int(item), item)
        elif _is_boundary(item):
            if not chip_id_ends_block:
                close()
            current.append(item)
            if chip_id_ends_block:
                close()
        else:
            current.append(item)
    close()
    if npu is None and not records:
        raise ParseError("no npu-smi key : value output", 0, "")
    return KvDocument(npu, chip_count, tuple(records))


def _is_boundary(item: Field) -> bool:
    return item.key == CHIP_ID or (item.key == CHIP_NAME and item.value.lower() in MCU_NAMES)


def _single(old: int | None, new: int | None, item: Field) -> int | None:
    if old is not None and new != old:
        raise ParseError(f"conflicting {item.key!r}", item.line_no, item.line)
    return new


def resolve_npu(doc_npu: int | None, given: int | None) -> int:
    """The NPU ID printed in the output, else the one the caller asked for (`-i N`)."""
    if doc_npu is not None:
        return doc_npu
    if given is None:
        raise ParseError("no NPU ID in the output and none given", 0, "")
    return given


def resolve_chip(record: Record, given: int | None, *, one_chip_npu: bool = False) -> int:
    """The record's Chip ID, else the chip the caller asked for (`-c M`), else chip 0 of a
    one-chip NPU (``KvDocument.one_chip_npu``)."""
    if record.chip is not None:
        return record.chip
    if given is None and one_chip_npu:
        return 0
    if given is None:
        first = record.fields[0]
        raise ParseError("chip block without Chip ID and no chip given", first.line_no, first.line)
    return given


# ---------------------------------------------------------------- value converters
Converter = Callable[[Field], Any]


def field_int(f: Field) -> int | None:
    return values.parse_int(f.value, line_no=f.line_no, line=f.line)


def field_float(f: Field) -> float | None:
    return values.parse_float(f.value, line_no=f.line_no, line=f.line)


def field_ratio(f: Field) -> float | None:
    return values.percent_to_ratio(f.value, line_no=f.line_no, line=f.line)


def field_bytes(f: Field) -> int | None:
    return values.mib_to_bytes(f.value, line_no=f.line_no, line=f.line)


def field_hertz(f: Field) -> float | None:
    return values.mhz_to_hertz(f.value, line_no=f.line_no, line=f.line)


def field_text(f: Field) -> str | None:
    return values.optional_text(f.value)


Spec = Mapping[str, tuple[str, Converter]]


def spec(
    entries: Iterable[tuple[Iterable[str], str, Converter]],
) -> dict[str, tuple[str, Converter]]:
    """Build a lookup from (aliases, field name, converter) rows; aliases are normalised."""
    table: dict[str, tuple[str, Converter]] = {}
    for aliases, name, conv in entries:
        for alias in aliases:
            table[normalise_key(alias)] = (name, conv)
    return table


def build(fields: Iterable[Field], table: Spec) -> dict[str, Any]:
    """Convert the known keys of ``fields``; unknown keys (new driver fields) are skipped.

    Two lines filling the same field in one record is an error: the output is not what
    we think it is, and silently keeping one of them would hide that.
    """
    out: dict[str, Any] = {}
    for f in fields:
        entry = table.get(f.key)
        if entry is None:
            continue
        name, conv = entry
        if name in out:
            raise ParseError(f"{name} given twice", f.line_no, f.line)
        out[name] = conv(f)
    return out
