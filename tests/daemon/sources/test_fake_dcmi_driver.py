"""The fake libdcmi answers what the driver answers per board (tests/fixtures/dcmi/
driver_answers.csv, each row from the driver source or manual): a chip that holds every value
still gets -8255 where the driver refuses the call, so a reader cannot pass against the fake
by asking a call the driver refuses (AI Cube as utilization type 14 on 910B, DDR on 910B)."""

from __future__ import annotations

import csv
import ctypes
from ctypes import byref, c_int, c_uint
from pathlib import Path

import pytest

from npumon.daemon.sources.dcmi_abi import EccBuffer, MemoryInfoV3, MultiUtilizationInfo
from tests.helpers.fake_dcmi import STATE_ENV, build_fake_dcmi
from tests.support import FIXTURES

pytestmark = pytest.mark.integration

ROWS = list(csv.DictReader((FIXTURES / "dcmi" / "driver_answers.csv").open()))
# one chip holding every value the rows ask about
KEYS = " ".join(
    [*(f"util{t}=7" for t in range(1, 15)), "power=900", "mem_total=100", "mem_available=50"]
    + [f"ecc{t}_enable=1" for t in range(3)]
)


def _answer(library: ctypes.CDLL, function: str, kind: int) -> int:
    call = getattr(library, function)
    if function == "dcmi_get_device_utilization_rate":
        return int(call(0, 0, kind, byref(c_uint())))
    if function == "dcmi_get_device_ecc_info":
        return int(call(0, 0, kind, byref(EccBuffer())))
    struct = {
        "dcmi_get_device_multi_utilization_rate": MultiUtilizationInfo,
        "dcmi_get_device_memory_info_v3": MemoryInfoV3,
    }.get(function)
    return int(call(0, 0, byref(struct() if struct else c_int())))


def test_the_fake_refuses_what_the_driver_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    library_path = build_fake_dcmi(tmp_path / "lib")
    got, wanted = [], []
    for board in sorted({row["board"] for row in ROWS}):
        state = tmp_path / f"{board}.state"
        state.write_text(f"board {board}\nchip 0 0 0 0 {KEYS}\n")
        monkeypatch.setenv(STATE_ENV, str(state))
        # a fresh copy per board: dlopen hands back the loaded library for a path it knows
        copy = tmp_path / f"lib-{board}.so"
        copy.write_bytes(library_path.read_bytes())
        library = ctypes.CDLL(str(copy))
        init = int(library.dcmi_init())
        for row in (r for r in ROWS if r["board"] == board):
            key = (row["function"], row["type"], board)
            wanted.append((*key, int(row["rc"])))
            answer = init if init != 0 else _answer(library, row["function"], int(row["type"]))
            got.append((*key, answer))
    assert got == wanted
