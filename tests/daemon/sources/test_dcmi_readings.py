"""DCMI answers into the table's model: units, -8255 as absent, what each error code asks for,
and the cross-check's tolerances."""

from __future__ import annotations

import dataclasses

import pytest

from npumon.daemon.model.chips import (
    ChipCommon,
    ChipUsage,
    CommonReport,
    HealthReport,
    InfoTable,
    TableChip,
    UsagesReport,
)
from npumon.daemon.sources.dcmi.client import DcmiChip
from npumon.daemon.sources.dcmi.crosscheck import detail_disagreement, disagreements
from npumon.daemon.sources.dcmi.readings import (
    COMMON_CALLS,
    TABLE_CALLS,
    USAGES_CALLS,
    DcmiRefusal,
    calls_for,
    check,
    chip_common,
    chip_dcmi,
    chip_ecc,
    chip_usage,
    collect,
    health_report,
    info_table,
    memory_report,
    value_key,
)

MIB = 1024 * 1024
CHIP = DcmiChip(card=4, device=1, logic_id=9, phy_id=9)
VALUES = {
    "health": (0, 2),
    "power": (0, 3596),
    "temperature": (0, 58),
    "hbm": (
        0,
        {
            "memory_size": 65536,
            "memory_usage": 3000,
            "temp": 50,
        },
    ),
    "memory": (-8255, None),
    "utilization2": (0, 37),
    "processes": (0, [[77, 5 * MIB]]),
    "chip": (0, {"chip_name": "910B3", "aicore_cnt": 20}),
    "pcie": (0, {"domain": 0, "bdf_busid": 0xC1, "bdf_deviceid": 0, "bdf_funcid": 0}),
}


def _values(
    answers: dict[str, tuple[int, object]],
    wanted: tuple[tuple[str, int], ...],
    chip: DcmiChip = CHIP,
) -> tuple[dict[str, object], list[str]]:
    calls = calls_for([chip], wanted, lambda call: False)
    unsupported: list[str] = []
    found = collect(
        [chip],
        calls,
        [answers.get(value_key(n, a), (-8255, None)) for n, _, _, a in calls],
        lambda call: unsupported.append(value_key(call[0], call[3])),
    )
    return found[chip], unsupported


def _table(answers: dict[str, tuple[int, object]]) -> tuple[InfoTable, list[str]]:
    values, unsupported = _values(answers, TABLE_CALLS)
    found = info_table({CHIP: values}, versions=("25.2.2", "25.2.2"), name_of=lambda pid: "python3")
    return found, unsupported


def test_units_become_the_parsers_base_units() -> None:
    found, unsupported = _table(VALUES)
    assert found.chips == (
        TableChip(
            npu=4,
            chip=1,
            name="910B3",
            health="Alarm",
            power_watts=359.6,
            temperature_celsius=58.0,
            hugepages_used=0,
            hugepages_total=0,
            bus_id="0000:C1:00.0",
            aicore_ratio=0.37,
            memory_used_bytes=0,
            memory_total_bytes=0,
            hbm_used_bytes=3000 * MIB,
            hbm_total_bytes=65536 * MIB,
        ),
    )
    assert [(p.pid, p.name, p.memory_bytes) for p in found.processes] == [(77, "python3", 5 * MIB)]
    assert unsupported == ["memory"]  # DDR: 0 / 0, as npu-smi prints it for a chip without


def test_ddr_and_hugepages_where_the_chip_has_them() -> None:
    memory = {
        "memory_size": 44280,
        "memory_available": 40000,
        "hugepages_total": 10,
        "hugepages_free": 4,
    }
    found, _ = _table({**VALUES, "memory": (0, memory)})
    chip = found.chips[0]
    assert (chip.memory_used_bytes, chip.memory_total_bytes) == (4280 * MIB, 44280 * MIB)
    assert (chip.hugepages_used, chip.hugepages_total) == (6, 10)


def test_minus_8255_is_absent_never_zero() -> None:
    found, unsupported = _table({**VALUES, "power": (-8255, None)})
    assert found.chips[0].power_watts is None and "power" in unsupported


@pytest.mark.parametrize(
    ("rc", "reason", "function", "re_enumerate"),
    [
        (-8002, "dcmi_permission", "power", False),
        (-99998, "dcmi_missing_symbol", "power", False),
        (-8006, "dcmi_timeout", None, False),
        (-8012, "dcmi_not_ready", None, False),
        (-8017, "dcmi_busy", None, False),
        (-8020, "dcmi_busy", None, False),
        (-8005, "dcmi_internal", None, False),
        (-8008, "dcmi_chip_gone", None, True),
    ],
)
def test_each_code_asks_for_what_dcmi_md_says(
    rc: int, reason: str, function: str | None, re_enumerate: bool
) -> None:
    with pytest.raises(DcmiRefusal) as refused:
        check("power", CHIP, rc)
    assert (refused.value.reason, refused.value.function) == (reason, function)
    assert refused.value.re_enumerate is re_enumerate


def test_cross_check_tolerances() -> None:
    found, _ = _table(VALUES)
    chip = found.chips[0]

    def cli(**changes: object) -> InfoTable:
        return dataclasses.replace(found, chips=(dataclasses.replace(chip, **changes),))

    assert disagreements(found, cli(power_watts=352.0, temperature_celsius=60.0)) == []
    assert [f for f, _ in disagreements(found, cli(power_watts=300.0))] == ["power_watts"]
    assert [f for f, _ in disagreements(found, cli(temperature_celsius=62.0))] == [
        "temperature_celsius"
    ]
    assert [f for f, _ in disagreements(found, cli(hbm_total_bytes=32768 * MIB))] == [
        "hbm_total_bytes"
    ]
    assert disagreements(found, cli(power_watts=None)) == []  # NA on one side: not compared
    moved = dataclasses.replace(found, chips=(dataclasses.replace(chip, npu=5),))
    assert [f for f, _ in disagreements(found, moved)] == ["ids"]


def test_health_not_ready_is_a_dropped_card() -> None:
    with pytest.raises(DcmiRefusal) as refused:
        check("health", CHIP, -8012)
    assert refused.value.re_enumerate and refused.value.reason == "dcmi_chip_gone"


def test_usages_and_common_in_base_units() -> None:
    """A 910B: AI Core, Cube, Vector and NPU % from the multi-utilization call, HBM bandwidth
    from the HBM info, the clocks from the AI Core info, as npu-smi reads them."""
    answers = {
        **VALUES,
        "hbm": (0, {**VALUES["hbm"][1], "bandwith_util_rate": 21}),  # type: ignore[dict-item]
        "multi_utilization": (
            0,
            {"aic_util": 35, "aiv_util": 25, "aicore_util": 37, "npu_util": 40},
        ),
        "utilization3": (0, 2),
        "aicore": (0, {"freq": 1800, "cur_freq": 1300}),
    }
    chip = dataclasses.replace(CHIP, pci_device_id=0xD802)
    calls = calls_for([chip], USAGES_CALLS, lambda call: False, "usages")
    got = [answers.get(value_key(n, a), (-8255, None)) for n, _, _, a in calls]
    values = collect([chip], calls, got, lambda call: None)[chip]
    usage = chip_usage(chip, values)
    assert (usage.aicore_ratio, usage.aivector_ratio, usage.aicube_ratio) == (0.37, 0.25, 0.35)
    assert (usage.npu_util_ratio, usage.aicpu_ratio, usage.ctrlcpu_ratio) == (0.40, 0.02, None)
    assert (usage.hbm_total_bytes, usage.hbm_bandwidth_ratio) == (65536 * MIB, 0.21)
    # no DDR on this chip (not asked): npu-smi prints 0 for the DDR figures, and so do we
    assert (usage.memory_total_bytes, usage.hugepages_total) == (0, 0)
    assert usage.memory_bandwidth_ratio == 0.0
    common = chip_common(chip, _values(answers, COMMON_CALLS, chip)[0])
    assert (common.aicore_current_hertz, common.aicore_rated_hertz) == (1.3e9, 1.8e9)
    assert (common.power_watts, common.temperature_celsius, common.aicore_count) == (
        359.6,
        58.0,
        20,
    )


@pytest.mark.parametrize(
    ("device_id", "asked"),
    [
        # 910B, A3: one multi-utilization call; no type 2/5/12/13/14, no DDR
        (0xD802, {"hbm", "multi_utilization", "utilization3", "utilization4"}),
        (0xD803, {"hbm", "multi_utilization", "utilization3", "utilization4"}),
        # 310P: AI Core type 2, Vectorcore type 12, the DDR figures; no HBM, no multi call
        (0xD500, {"memory", *(f"utilization{t}" for t in (2, 3, 4, 5, 12))}),
    ],
)
def test_usages_asks_what_npu_smi_asks_on_the_chip(device_id: int, asked: set[str]) -> None:
    chip = dataclasses.replace(CHIP, pci_device_id=device_id)
    calls = calls_for([chip], USAGES_CALLS, lambda call: False, "usages")
    assert {value_key(name, arg) for name, _, _, arg in calls} == asked


def test_ddr_ecc_is_not_asked_where_the_driver_refuses_it() -> None:
    """910B, A3: DCMI answers -8255 for DDR ECC and logs an error line; npu-smi never asks."""
    for device_id, kinds in ((0xD802, {2}), (0xD803, {2}), (0xD500, {0}), (0xD801, {0, 2})):
        chip = dataclasses.replace(CHIP, pci_device_id=device_id)
        calls = calls_for([chip], (("ecc", 2), ("ecc", 0)), lambda call: False, "ecc")
        assert {arg for _, _, _, arg in calls} == kinds


def test_a_voltage_sentinel_is_na() -> None:
    assert chip_dcmi({"voltage": 0x7FFE}).voltage_volts is None
    assert chip_dcmi({"voltage": 0x7FFC}).voltage_volts == 327.64


def test_health_ecc_and_memory_as_npu_smi_prints_them() -> None:
    health = health_report(CHIP, {"health": 2, "errors": [0xA4025021, 0, 0x8C03A000]})
    assert (health.status, health.error_codes) == ("Alarm", ("A4025021", "8C03A000"))
    with pytest.raises(DcmiRefusal) as dropped:
        health_report(CHIP, {"health": 0, "errors": [0x40F84E00]})
    assert dropped.value.re_enumerate
    ecc = {
        "single_bit_error_cnt": 2,
        "double_bit_error_cnt": 1,
        "total_single_bit_error_cnt": 7,
        "total_double_bit_error_cnt": 3,
    }
    found = chip_ecc(CHIP, {value_key("ecc", 2): ecc})
    assert (found.hbm_single_bit_errors, found.hbm_double_bit_aggregate_total) == (2, 3)
    assert found.hbm_single_bit_aggregate_total == 7 and found.ddr_single_bit_errors is None
    hbm = {"memory_size": 65536, "memory_usage": 1, "temp": 41}
    memory = memory_report(CHIP, {"hbm": hbm})
    assert (memory.hbm_temperature_celsius, memory.hbm_total_bytes) == (41.0, 65536 * MIB)
    assert memory.memory_total_bytes == 0


def test_voltage_pcie_bandwidth_and_vnpus_in_base_units() -> None:
    bandwidth = {"tx_p_bw": [1, 4, 2], "rx_cpl_bw": [0, 0, 0]}
    found = chip_dcmi({"voltage": 85, "pcie_bandwidth": bandwidth})
    assert found.voltage_volts == 0.85
    assert ("transmit", "posted", "max", 4e9) in found.pcie_bandwidth
    assert ("receive", "completion", "avg", 0.0) in found.pcie_bandwidth
    assert len(found.pcie_bandwidth) == 6
    vnpus = chip_dcmi({"vnpus": [[100, 42, 2048, 512]]}).vnpus
    assert vnpus == ((100, 0.42, 2048 * 1024, 1536 * 1024),)  # KB into bytes, used = total - free
    # -8255 from both: nothing, never 0
    assert chip_dcmi({}).voltage_volts is None and chip_dcmi({}).pcie_bandwidth == ()


def test_the_detail_check_compares_every_value_both_give() -> None:
    """AI Cube 35 % against 0 % is a disagreement; 10 points of AI Core is not; a value one
    side lacks is not compared; the health word and the set of codes must be equal."""
    ours = UsagesReport(0, (ChipUsage(chip=0, aicore_ratio=0.4, aicube_ratio=0.35),))
    same = UsagesReport(0, (ChipUsage(chip=0, aicore_ratio=0.5, aicube_ratio=0.35),))
    assert detail_disagreement(ours, same) is None
    cube = UsagesReport(0, (ChipUsage(chip=0, aicore_ratio=0.4, aicube_ratio=0.0),))
    assert detail_disagreement(ours, cube) == "chip 0 aicube_ratio: dcmi 0.35, npu-smi 0.0"
    lacking = UsagesReport(0, (ChipUsage(chip=0, aicore_ratio=0.4),))
    assert detail_disagreement(ours, lacking) is None
    rated = CommonReport(0, (ChipCommon(chip=0, aicore_rated_hertz=1.8e9),))
    other = CommonReport(0, (ChipCommon(chip=0, aicore_rated_hertz=1.6e9),))
    assert detail_disagreement(rated, other) is not None
    alarm = HealthReport("Alarm", ("A4025021",))
    assert detail_disagreement(alarm, HealthReport("Alarm", ("A4025021",))) is None
    assert detail_disagreement(alarm, HealthReport("OK", ())) is not None
