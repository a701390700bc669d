"""Parsers for the per-NPU detail commands: -t usages, common, power, temp, memory, ecc.

Each takes the whole output of `npu-smi info -t X -i N` (card header, then chip blocks) or of
`... -i N -c M` (just that chip's lines, without NPU ID or Chip ID): pass ``npu``/``chip`` for
the ids the output does not print. Unknown keys are ignored; a known key with a value that is
not a number is a ParseError.
"""

from __future__ import annotations

from typing import Any

from npumon.daemon.model.chips import (
    ChipCommon,
    ChipEcc,
    ChipUsage,
    CommonReport,
    EccReport,
    MemoryReport,
    UsagesReport,
)
from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.keyvalue import (
    KvDocument,
    Record,
    build,
    field_bytes,
    field_float,
    field_hertz,
    field_int,
    field_ratio,
    resolve_chip,
    resolve_npu,
    spec,
    split_records,
)

# Aliases: 910-family prints "DDR ...", 310/310B print "Memory ..."/"Hugepages ..." instead.
# Not read: the DDR, HBM and hugepages usage rates (the table's used/total bytes carry them).
_USAGES = spec(
    [
        (["Aicore Usage Rate(%)"], "aicore_ratio", field_ratio),
        (["Aivector Usage Rate(%)"], "aivector_ratio", field_ratio),
        (["Aicube Usage Rate(%)"], "aicube_ratio", field_ratio),
        (["Aicpu Usage Rate(%)"], "aicpu_ratio", field_ratio),
        (["Ctrlcpu Usage Rate(%)"], "ctrlcpu_ratio", field_ratio),
        (["Vectorcore Usage Rate(%)"], "vectorcore_ratio", field_ratio),
        (["NPU Utilization(%)"], "npu_util_ratio", field_ratio),
        (["DDR Capacity(MB)", "Memory Capacity(MB)"], "memory_total_bytes", field_bytes),
        (["DDR Hugepages Total(page)", "Hugepages Total(page)"], "hugepages_total", field_int),
        (["HBM Capacity(MB)"], "hbm_total_bytes", field_bytes),
        (
            ["DDR Bandwidth Usage Rate(%)", "Memory Bandwidth Usage Rate(%)"],
            "memory_bandwidth_ratio",
            field_ratio,
        ),
        (["HBM Bandwidth Usage Rate(%)"], "hbm_bandwidth_ratio", field_ratio),
    ]
)

_COMMON = spec(
    [
        (["Aicore Usage Rate(%)"], "aicore_ratio", field_ratio),
        (["Aicore Freq(MHZ)"], "aicore_rated_hertz", field_hertz),
        (["Aicore curFreq(MHZ)"], "aicore_current_hertz", field_hertz),
        (["Aicore Count"], "aicore_count", field_int),
        (["Temperature(C)", "Temperature (C)"], "temperature_celsius", field_float),
        # 310/310B label the same DCMI power reading "Rated Power Dissipation" (npu-smi source).
        (["NPU Real-time Power(W)", "Rated Power Dissipation(W)"], "power_watts", field_float),
    ]
)

_MEMORY = spec(
    [
        # 310P/310B also print a card-level "Total (DDR) Capacity(MB)" first: not the chip's.
        (["DDR Capacity(MB)", "Capacity(MB)"], "memory_total_bytes", field_bytes),
        (["HBM Capacity(MB)"], "hbm_total_bytes", field_bytes),
        (["HBM Temperature(C)"], "hbm_temperature_celsius", field_float),
    ]
)

_ECC = spec(
    [
        ([f"{mem} {bits} Bit {what}"], f"{mem.lower()}_{bits.lower()}_bit_{name}", field_int)
        for mem in ("HBM", "DDR")
        for bits in ("Single", "Double")
        for what, name in (
            ("Error Count", "errors"),
            ("Aggregate Total Err Cnt", "aggregate_total"),
        )
    ]
)


def _chips(
    doc: KvDocument, chip: int | None, *, mcu_only_ok: bool = False
) -> list[tuple[int, Record]]:
    """(chip index, record) for every non-MCU record; at least one must exist.

    ``mcu_only_ok``: 310P's `-t power` skips every NPU chip (not supported) and prints only
    the MCU block, which is a valid answer with no chip readings.
    """
    one = doc.one_chip_npu
    out = [(resolve_chip(r, chip, one_chip_npu=one), r) for r in doc.records if not r.is_mcu]
    if not out and not (mcu_only_ok and any(r.is_mcu for r in doc.records)):
        raise ParseError("no chip block in the output", 0, "")
    seen: set[int] = set()
    for index, record in out:
        if index in seen:
            first = record.fields[0]
            raise ParseError(f"chip {index} printed twice", first.line_no, first.line)
        seen.add(index)
    return out


def parse_usages(text: str, *, npu: int | None = None, chip: int | None = None) -> UsagesReport:
    """`npu-smi info -t usages -i N [-c M]`: chip blocks END with `Chip ID`."""
    doc = split_records(text, chip_id_ends_block=True)
    chips = tuple(ChipUsage(chip=i, **build(r.fields, _USAGES)) for i, r in _chips(doc, chip))
    return UsagesReport(npu=resolve_npu(doc.npu, npu), chips=chips)


def parse_common(text: str, *, npu: int | None = None, chip: int | None = None) -> CommonReport:
    """`npu-smi info -t common -i N`: chip blocks START with `Chip ID`; then an MCU block
    (its temperature and board power, not read). The 950's one chip has no Chip ID line."""
    doc = split_records(text, chip_id_ends_block=False)
    chips = tuple(
        ChipCommon(chip=i, **_common_fields(build(r.fields, _COMMON), doc))
        for i, r in _chips(doc, chip)
    )
    return CommonReport(npu=resolve_npu(doc.npu, npu), chips=chips)


def _common_fields(kw: dict[str, Any], doc: KvDocument) -> dict[str, Any]:
    """The NPU_SMI_V2 build (950) prints the overall NPU utilization (the multi-utilization
    call's `npu_util`) under the key "Aicore Usage Rate(%)" in `-t common`
    (`npu_get_chip_common_info_npu_usage`, hicann driver `npu_chip_info.c`): read it as
    what it holds."""
    if doc.one_chip_npu and "aicore_ratio" in kw:
        kw["npu_util_ratio"] = kw.pop("aicore_ratio")
    return kw


def parse_memory(text: str, *, npu: int | None = None, chip: int | None = None) -> MemoryReport:
    """`npu-smi info -t memory -i N [-c M]` for one chip: the only one, or ``chip``."""
    doc = split_records(text, chip_id_ends_block=True)
    records = [r for r in doc.records if not r.is_mcu]
    if len(records) > 1:  # a whole card: keep the chip asked for
        records = [r for r in records if chip is not None and r.chip == chip]
    if len(records) != 1:
        raise ParseError("expected one chip block (pass chip= for a multi-chip card)", 0, "")
    record = records[0]
    return MemoryReport(
        npu=resolve_npu(doc.npu, npu),
        chip=record.chip if record.chip is not None else chip,
        **build(record.fields, _MEMORY),
    )


def parse_ecc(text: str, *, npu: int | None = None, chip: int | None = None) -> EccReport:
    """`npu-smi info -t ecc -i N [-c M]`: 40-char keys, chip blocks END with `Chip ID`."""
    doc = split_records(text, chip_id_ends_block=True)
    chips = tuple(ChipEcc(chip=i, **build(r.fields, _ECC)) for i, r in _chips(doc, chip))
    return EccReport(npu=resolve_npu(doc.npu, npu), chips=chips)
