"""Static facts per simulated chip family: ids, names, capacities, clocks, power range."""

from __future__ import annotations

from typing import NamedTuple


class Family(NamedTuple):
    key: str
    npu_ids: tuple[int, ...]
    chips_per_npu: int
    table_name: str  # Name column of `npu-smi info` ("910B3", "Ascend910", "310P3")
    chip_type: str  # -t board -c "Chip Type"
    chip_name: str  # -t board -c "Chip Name"; -m prints "<type> <name>" (A3: name only)
    has_hbm: bool
    hbm_total_mb: int | None
    ddr_total_mb: tuple[int, ...]  # per chip index; 910B/A3 print 0
    reserved_mb: int  # memory the driver/runtime holds on an otherwise empty chip
    rated_mhz: int
    idle_mhz: int
    aicore_count: int | None
    power_idle_watts: float | None  # None: the table prints NA (310P)
    power_max_watts: float | None
    temp_idle_celsius: int
    pci_device_id: str
    product_name: str
    mcu_id: int
    bus_numbers: tuple[int, ...]  # PCIe bus per NPU
    # a SoC board (310B): no PCIe (Bus-Id NA), and `npu-smi info` prints no process section,
    # as the driver's print_total_info does on every 310B and 310 SoC board
    soc: bool = False

    @property
    def a3(self) -> bool:
        return self.key == "a3"

    @property
    def v2(self) -> bool:
        """npu-smi built with NPU_SMI_V2 (the Ascend 950): one chip per NPU ID, no Chip Count or
        Chip ID lines, `-c` refused, its own table, -m and board layouts."""
        return self.key == "950"

    @property
    def p310(self) -> bool:
        """The 310 family's layouts (310P, 310B): the 106-wide table and its detail texts."""
        return self.key in ("310p-duo", "310b")


FAMILIES: dict[str, Family] = {
    "910b": Family(
        key="910b",
        npu_ids=tuple(range(8)),
        chips_per_npu=1,
        table_name="910B3",
        chip_type="Ascend",
        chip_name="910B3",
        has_hbm=True,
        hbm_total_mb=65536,
        ddr_total_mb=(0,),
        reserved_mb=3352,
        rated_mhz=1800,
        idle_mhz=800,
        aicore_count=20,
        power_idle_watts=92.0,
        power_max_watts=392.0,
        temp_idle_celsius=38,
        pci_device_id="0xD802",
        product_name="IT21HMDC_Bin5",
        mcu_id=1,
        bus_numbers=(0xC1, 0x01, 0x41, 0x42, 0x81, 0x82, 0xC2, 0x02),
    ),
    "a3": Family(
        key="a3",
        npu_ids=tuple(range(8)),
        chips_per_npu=2,
        table_name="Ascend910",
        chip_type="Ascend",
        chip_name="Ascend910",
        has_hbm=True,
        hbm_total_mb=65536,
        ddr_total_mb=(0, 0),
        reserved_mb=2876,
        rated_mhz=1800,
        idle_mhz=800,
        aicore_count=24,
        power_idle_watts=160.0,
        power_max_watts=560.0,
        temp_idle_celsius=36,
        pci_device_id="0xD803",
        product_name="IT22SMDC",
        mcu_id=2,
        bus_numbers=(0x9C, 0x37, 0x1B, 0x5A, 0xBC, 0xDB, 0x83, 0xA3),
    ),
    # Atlas 350 cards (4P): figures from the 950 npu-smi manual's examples (HBM 131072 MB,
    # 4439 MB used idle, 32 AI Cores at 1650 MHz, 100 MHz idle, PCI device 0xD806, product name
    # "A5 PCIe Card"); the manual redacts the chip name, so `950PR` here is invented.
    "950": Family(
        key="950",
        npu_ids=(0, 1, 2, 3),
        chips_per_npu=1,
        table_name="950PR",
        chip_type="Ascend",
        chip_name="950PR",
        has_hbm=True,
        hbm_total_mb=131072,
        ddr_total_mb=(0,),
        reserved_mb=4439,
        rated_mhz=1650,
        idle_mhz=100,
        aicore_count=32,
        power_idle_watts=204.4,
        power_max_watts=600.0,
        temp_idle_celsius=53,
        pci_device_id="0xD806",
        product_name="A5 PCIe Card",
        mcu_id=-1,
        bus_numbers=(0x91, 0x92, 0xF1, 0xF2),
    ),
    "310p-duo": Family(
        key="310p-duo",
        npu_ids=(0, 96, 32768, 32896),
        chips_per_npu=2,
        table_name="310P3",
        chip_type="Ascend",
        chip_name="310P3",
        has_hbm=False,
        hbm_total_mb=None,
        ddr_total_mb=(44278, 43693),
        reserved_mb=1240,
        rated_mhz=1080,
        idle_mhz=960,
        aicore_count=None,
        power_idle_watts=None,
        power_max_watts=None,
        temp_idle_celsius=55,
        pci_device_id="0xD500",
        product_name="Atlas 300I Duo",
        mcu_id=2,
        bus_numbers=(0x01, 0x03, 0x81, 0x84),
    ),
    "310b": Family(
        key="310b",
        npu_ids=(0,),
        chips_per_npu=1,
        table_name="310B4",
        chip_type="Ascend",
        chip_name="310B4",
        has_hbm=False,
        hbm_total_mb=None,
        ddr_total_mb=(15609,),
        reserved_mb=3628,
        rated_mhz=1000,
        idle_mhz=1000,
        aicore_count=None,
        power_idle_watts=7.7,
        power_max_watts=20.0,
        temp_idle_celsius=54,
        pci_device_id="0xD105",
        product_name="Atlas 200I DK A2",
        mcu_id=1,
        bus_numbers=(0,),
        soc=True,
    ),
}


def family_of(key: str, npus: int | None = None) -> Family:
    """The family, or for a scenario that sets `npus` (the 64-chip bench node) the same family
    with NPU IDs 0..npus-1 (bus numbers reused in turn)."""
    fam = FAMILIES[key]
    if npus is None or npus == len(fam.npu_ids):
        return fam
    buses = tuple(fam.bus_numbers[i % len(fam.bus_numbers)] for i in range(npus))
    return fam._replace(npu_ids=tuple(range(npus)), bus_numbers=buses)
