"""Which model fields each DCMI function fills, per query, and the merge that has npu-smi's
answer fill only those: a function the library lacks or refuses (-8002) is served per field by
the npu-smi query that gives it, the rest of that query's answer stays DCMI's.

Pure: a DCMI model and the npu-smi model of the same query in, one model out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from npumon.daemon.sources.query import Kind

# query -> DCMI request name (child.helper.CALLS) -> the fields of the query's per-chip model it
# fills (TableChip, ChipUsage, ChipCommon, ChipEcc, HealthReport, MemoryReport, and the
# interconnect reports, which one function set fills whole); a test checks every field a
# function changes is listed here
FIELDS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    Kind.INFO: {
        "health": ("health",),
        "power": ("power_watts",),
        "temperature": ("temperature_celsius",),
        "hbm": ("hbm_used_bytes", "hbm_total_bytes"),
        "memory": ("memory_used_bytes", "memory_total_bytes", "hugepages_used", "hugepages_total"),
        "utilization": ("aicore_ratio",),
        "multi_utilization": ("npu_util_ratio",),
        "errors": (),  # which chips are lost (`merge`)
        "chip": ("name",),
        "pcie": ("bus_id",),
        "processes": (),  # the table's process list, merged whole (`merge`)
    },
    Kind.USAGES: {
        "memory": (
            "memory_total_bytes",
            "hugepages_total",
            "memory_bandwidth_ratio",
        ),
        "hbm": ("hbm_total_bytes", "hbm_bandwidth_ratio"),
        "multi_utilization": ("aicore_ratio", "aivector_ratio", "aicube_ratio", "npu_util_ratio"),
        "utilization": (
            "aicore_ratio",
            "aivector_ratio",
            "aicpu_ratio",
            "ctrlcpu_ratio",
            "memory_bandwidth_ratio",
        ),
    },
    Kind.COMMON: {
        "power": ("power_watts",),
        "temperature": ("temperature_celsius",),
        "chip": ("aicore_count",),
        "utilization": ("aicore_ratio",),
        "multi_utilization": ("npu_util_ratio",),
        "aicore": ("aicore_rated_hertz", "aicore_current_hertz"),
    },
    Kind.ECC: {
        "ecc": tuple(
            f"{memory}_{bits}_{count}"
            for memory in ("hbm", "ddr")
            for bits in ("single_bit", "double_bit")
            for count in ("errors", "aggregate_total")
        )
    },
    # npu-smi prints OK for a chip without error codes, whatever the health word
    Kind.HEALTH: {"health": ("status",), "errors": ("status", "error_codes")},
    Kind.MEMORY: {
        "hbm": ("hbm_total_bytes", "hbm_temperature_celsius"),
        "memory": ("memory_total_bytes",),
    },
    Kind.HCCS: {"mainboard": ("links",), "hccs": ("links",)},
    Kind.HCCS_BW: {"mainboard": ("links",), "hccs_bw": ("links",)},
    Kind.PCIE_ERR: {"pcie_errors": ("counts",)},
    Kind.SIO: {"sio": ("counts",)},
}


def fields_of(query: str, functions: Iterable[str]) -> tuple[str, ...]:
    """The model fields ``functions`` fill in ``query``'s answer."""
    table = FIELDS[query]
    return tuple(f for name in functions for f in table.get(name, ()))


def _taken(ours: Any, theirs: Any, fields: tuple[str, ...]) -> Any:
    return dataclasses.replace(ours, **{f: getattr(theirs, f) for f in fields})


def _rows(
    ours: tuple[Any, ...], theirs: tuple[Any, ...], fields: tuple[str, ...]
) -> tuple[Any, ...]:
    """Per-chip rows with ``fields`` from npu-smi's row of the chip (kept where it has none)."""
    key = (lambda r: (r.npu, r.chip)) if ours and hasattr(ours[0], "npu") else (lambda r: r.chip)
    by_key = {key(r): r for r in theirs}
    return tuple(_taken(r, by_key[key(r)], fields) if key(r) in by_key else r for r in ours)


def merge(query: str, dcmi: Any, cli: Any, functions: Iterable[str]) -> Any:
    """DCMI's answer to ``query`` with what ``functions`` fill taken from npu-smi's ``cli``."""
    names = tuple(functions)
    fields = fields_of(query, names)
    if not hasattr(dcmi, "chips"):  # one chip's report
        return _taken(dcmi, cli, fields)
    merged = dataclasses.replace(dcmi, chips=_rows(dcmi.chips, cli.chips, fields))
    if query == Kind.INFO and "processes" in names:
        merged = dataclasses.replace(merged, processes=cli.processes)
    if query == Kind.INFO and "errors" in names:  # npu-smi's lost chips, not DCMI's rows of them
        chips = tuple(c for c in merged.chips if (c.npu, c.chip) not in cli.lost)
        kept = tuple(p for p in merged.processes if (p.npu, p.chip) not in cli.lost)
        merged = dataclasses.replace(merged, chips=chips, processes=kept, lost=cli.lost)
    return merged
