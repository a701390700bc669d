"""Physical chip IDs: the ID the device plugin, hccn_tool `-i` and npu-exporter's `id` use.

npu-smi's NPU ID and chip index are a card view; the physical ID is printed only on some layouts.
One function answers for every layout and says which evidence it used:

- ``table``: the A3 `npu-smi info` table prints `Phy-ID` on each chip's second row;
- ``mapping``: A3 and 950 `npu-smi info -m` print `Chip Phy-ID`;
- ``logic_id``: 910A/910B (`-m` without a physical column, or the 310 table's Device column):
  on bare metal the physical ID equals the logic ID (a container may remap them: the driver's
  `-t phyid-remap` shows it; not read yet, so a remapped container node is attributed wrongly).
"""

from __future__ import annotations

from dataclasses import dataclass

from npumon.daemon.model.chips import ChipResults

ChipKey = tuple[int, int]


@dataclass(frozen=True, slots=True)
class PhysicalId:
    value: int
    evidence: str  # table, mapping, logic_id


def physical_ids(results: ChipResults) -> dict[ChipKey, PhysicalId]:
    """(npu, chip) -> physical ID, for every chip of the latest table whose ID can be told."""
    table = results.table
    if table is None:
        return {}
    mapped = {(m.npu, m.chip): m for m in (results.mapping.chips if results.mapping else ())}
    found: dict[ChipKey, PhysicalId] = {}
    for chip in table.chips:
        key = (chip.npu, chip.chip)
        m = mapped.get(key)
        if chip.phy_id is not None:
            found[key] = PhysicalId(chip.phy_id, "table")
        elif m is not None and m.phy_id is not None:
            found[key] = PhysicalId(m.phy_id, "mapping")
        elif m is not None and m.logic_id is not None:
            found[key] = PhysicalId(m.logic_id, "logic_id")
        elif chip.logic_id is not None:
            found[key] = PhysicalId(chip.logic_id, "logic_id")
    return found
