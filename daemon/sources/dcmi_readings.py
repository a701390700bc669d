"""DCMI answers into the model types the npu-smi parsers produce, in base units (dcmi.md §3, §5).

Pure: the helper's raw answers (rc, value) in, an ``InfoTable`` out, or a ``DcmiRefusal`` saying
why npu-smi must answer instead. Units: power 0.1 W, HBM and DDR MB, process memory bytes,
utilization %, hugepages in pages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from npumon.daemon.model.npu_smi import InfoTable, TableChip, TableProcess
from npumon.daemon.sources.dcmi_client import Call, DcmiChip

MIB = 1024 * 1024
NOT_SUPPORTED = -8255
MISSING_SYMBOL = -99998
# dcmi.md §5: what each code asks for; the reason is the failure-counter label
RETRY = {-8006: "dcmi_timeout", -8012: "dcmi_not_ready", -8017: "dcmi_busy", -8020: "dcmi_busy"}
GONE = frozenset({-8007, -8008})  # the device left: re-enumerate
HEALTH = {0: "OK", 1: "Warning", 2: "Alarm", 3: "Critical"}
UTIL_AICORE = 2
TABLE_CALLS = ("health", "power", "temperature", "hbm", "memory", "utilization", "processes",
               "chip", "pcie")


class DcmiRefusal(Exception):
    """DCMI cannot give this answer; npu-smi must. ``function`` is set when the refusal is the
    function's for good (missing, no permission): the caller stops asking it for a while."""

    def __init__(self, reason: str, message: str, function: str | None = None,
                 re_enumerate: bool = False) -> None:
        self.reason = reason
        self.message = message
        self.function = function
        self.re_enumerate = re_enumerate
        super().__init__(f"{reason}: {message}")


def table_calls(chips: Sequence[DcmiChip], skip: Callable[[str, DcmiChip], bool]) -> list[Call]:
    """The requests behind `npu-smi info` (``skip``: known unsupported for that chip)."""
    return [(name, c.card, c.device, UTIL_AICORE if name == "utilization" else 0)
            for c in chips for name in TABLE_CALLS if not skip(name, c)]


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
        raise DcmiRefusal("dcmi_permission", f"{where}: -8002 operation not permitted; see "
                          "docs/privileges.md (device nodes, the HwHiAiUser group)", name)
    if rc == -8012 and name == "health":  # npu-exporter's sign of a dropped card
        raise DcmiRefusal("dcmi_chip_gone", f"{where}: -8012: the card may have dropped",
                          re_enumerate=True)
    if rc in RETRY:
        raise DcmiRefusal(RETRY[rc], f"{where}: {rc}, asked again next poll")
    if rc in GONE or rc == -8001:
        raise DcmiRefusal("dcmi_chip_gone", f"{where}: {rc}: the chip list is stale",
                          re_enumerate=True)
    raise DcmiRefusal("dcmi_internal", f"{where}: {rc} (-8005 is the driver's catch-all)")


def _ratio(percent: Any) -> float:
    return float(percent) / 100.0


def _bus(p: Mapping[str, int]) -> str:
    return f"{p['domain']:04X}:{p['bdf_busid']:02X}:{p['bdf_deviceid']:02X}.{p['bdf_funcid']:X}"


def _memory(m: Mapping[str, int] | None) -> dict[str, int]:
    """DDR and hugepages as npu-smi prints them: 0 / 0 where the chip has none (-8255)."""
    if m is None:
        return {"memory_used_bytes": 0, "memory_total_bytes": 0, "hugepages_used": 0,
                "hugepages_total": 0}
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
    util, pcie = values.get("utilization"), values.get("pcie")
    return TableChip(
        npu=chip.card,
        chip=chip.device,
        name=info["chip_name"] or None if info else None,
        health=None if health is None else HEALTH.get(health, "UNKNOWN"),
        power_watts=None if power is None else power / 10.0,
        temperature_celsius=None if temperature is None else float(temperature),
        bus_id=_bus(pcie) if pcie else None,
        aicore_ratio=None if util is None else _ratio(util),
        hbm_used_bytes=hbm["memory_usage"] * MIB if hbm else None,
        hbm_total_bytes=hbm["memory_size"] * MIB if hbm else None,
        **_memory(values.get("memory")),
    )


def table_processes(chip: DcmiChip, listed: Sequence[Sequence[int]],
                    name_of: Callable[[int], str | None]) -> list[TableProcess]:
    return [TableProcess(npu=chip.card, chip=chip.device, pid=pid, name=name_of(pid),
                         memory_bytes=used) for pid, used in listed]


def info_table(
    chips: Sequence[DcmiChip],
    calls: Sequence[Call],
    answers: Sequence[tuple[int, Any]],
    *,
    versions: tuple[str | None, str | None],
    name_of: Callable[[int], str | None],
    unsupported: Callable[[str, DcmiChip], None],
) -> InfoTable:
    """The `npu-smi info` table from DCMI answers; ``unsupported`` hears each -8255."""
    by_chip: dict[tuple[int, int], DcmiChip] = {(c.card, c.device): c for c in chips}
    values: dict[tuple[int, int], dict[str, Any]] = {key: {} for key in by_chip}
    for (name, card, device, _), (rc, value) in zip(calls, answers, strict=True):
        chip = by_chip[(card, device)]
        if check(name, chip, rc):
            values[(card, device)][name] = value
        else:
            unsupported(name, chip)
    rows = [table_chip(chip, values[key]) for key, chip in by_chip.items()]
    processes = [p for key, chip in by_chip.items()
                 for p in table_processes(chip, values[key].get("processes") or (), name_of)]
    return InfoTable(npu_smi_version=versions[0], version=versions[1], chips=tuple(rows),
                     processes=tuple(processes), has_process_table=True)
