"""The per-field fallback's map: every field a DCMI function changes in a query's model is listed
for it (else npu-smi would not fill it when the function is refused), and the merge takes
exactly those fields from npu-smi's answer."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from npumon.daemon.sources.dcmi.client import DcmiChip
from npumon.daemon.sources.dcmi.fields import FIELDS, merge
from npumon.daemon.sources.dcmi.reader import DETAIL, INTERCONNECT
from npumon.daemon.sources.dcmi.readings import (
    HEARTBEAT_LOST,
    TABLE_CALLS,
    info_table,
    value_key,
)

MIB = 1024 * 1024
CHIP = DcmiChip(card=3, device=0, logic_id=3, phy_id=3)
ECC = {
    "single_bit_error_cnt": 2,
    "double_bit_error_cnt": 1,
    "total_single_bit_error_cnt": 7,
    "total_double_bit_error_cnt": 3,
}


def _answer(name: str, arg: int) -> Any:
    """A value of every DCMI call, none of them 0 (so that absent and present differ)."""
    return {
        "health": 1,
        "errors": [0xA4025021],
        "power": 3596,
        "temperature": 58,
        "hbm": {"memory_size": 65536, "memory_usage": 3000, "temp": 50, "bandwith_util_rate": 9},
        "memory": {
            "memory_size": 16384,
            "memory_available": 4000,
            "hugepages_total": 30,
            "hugepages_free": 10,
        },
        "utilization": 10 + arg,
        "multi_utilization": {"aic_util": 41, "aiv_util": 42, "aicore_util": 43, "npu_util": 44},
        "aicore": {"freq": 1800, "cur_freq": 1000},
        "ecc": ECC,
        "processes": [[77, 5 * MIB]],
        "chip": {"chip_name": "310P3", "aicore_cnt": 8},
        "pcie": {"domain": 0, "bdf_busid": 0x42, "bdf_deviceid": 0, "bdf_funcid": 0},
    }[name]


def _model(query: str, without: str | None) -> Any:
    wanted = TABLE_CALLS if query == "info" else DETAIL[query][0]
    values = {value_key(n, a): _answer(n, a) for n, a in wanted if n != without}
    if query == "info":
        return info_table({CHIP: values}, versions=(None, None), name_of=lambda pid: "python3")
    return DETAIL[query][1](CHIP.card, [CHIP], {CHIP: values})


def _rows(model: Any) -> list[Any]:
    return list(model.chips) if hasattr(model, "chips") else [model]


def _changed(a: Any, b: Any) -> set[str]:
    return {
        f.name
        for ra, rb in zip(_rows(a), _rows(b), strict=True)
        for f in dataclasses.fields(ra)
        if getattr(ra, f.name) != getattr(rb, f.name)
    }


CASES = [
    (query, name)
    for query in ("info", *DETAIL)
    if query not in INTERCONNECT  # one function set fills them whole: see test_dcmi_readings
    for name in sorted({n for n, _ in (TABLE_CALLS if query == "info" else DETAIL[query][0])})
]


@pytest.mark.parametrize(("query", "name"), CASES)
def test_every_field_a_function_fills_is_in_the_map(query: str, name: str) -> None:
    full, lacking = _model(query, None), _model(query, name)
    changed = _changed(full, lacking)
    assert changed <= set(FIELDS[query][name]), f"{query}: {name} also fills {changed}"
    if query == "info" and name == "processes":
        assert full.processes != lacking.processes
    elif query == "info" and name == "errors":  # which chips are lost: the test below
        assert changed == set()
    else:
        assert changed, f"{query}: {name} fills nothing the test can see"


@pytest.mark.parametrize(("query", "name"), CASES)
def test_the_merge_takes_only_the_refused_functions_fields(query: str, name: str) -> None:
    """npu-smi's answer here is DCMI's full one; DCMI's lacks the function."""
    merged = merge(query, _model(query, name), _model(query, None), [name])
    assert merged == _model(query, None)
    untouched = merge(query, _model(query, name), _model(query, None), [])
    assert untouched == _model(query, name)


def test_a_950_chip_with_heartbeat_loss_is_lost_and_the_merge_takes_npu_smis_lost() -> None:
    """The 950's table leaves out a chip whose error list holds 40F84E00 (npu-smi prints it
    zeroed); with the error list refused, npu-smi's table says which chips are lost."""
    chip = dataclasses.replace(CHIP, pci_device_id=0xD806)
    values = {value_key(n, a): _answer(n, a) for n, a in TABLE_CALLS}
    table = info_table({chip: values}, versions=(None, None), name_of=lambda pid: "python3")
    assert table.one_chip_npus and table.lost == () and len(table.chips) == 1
    values["errors"] = [HEARTBEAT_LOST]
    lost = info_table({chip: values}, versions=(None, None), name_of=lambda pid: "python3")
    assert (lost.chips, lost.processes, lost.lost) == ((), (), ((3, 0),))
    assert merge("info", table, lost, ["errors"]) == lost
