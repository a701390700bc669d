"""The fake libdcmi answers what the driver answers per board (tests/fixtures/dcmi/
driver_answers.csv, each row from the driver source or manual): a chip that holds every value
still gets -8255 where the driver refuses the call, so a reader cannot pass against the fake
by asking a call the driver refuses (AI Cube as utilization type 14 on 910B, DDR on 910B, v1
on a 950)."""

from __future__ import annotations

import csv
import ctypes
from ctypes import byref, c_int, c_uint
from pathlib import Path

import pytest

from npumon.daemon.sources.dcmi.child.abi import EccBuffer, MemoryInfoV3, MultiUtilizationInfo
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
    """The call on card 0 device 0 (v1) or dev_id 0 (v2)."""
    call = getattr(library, function)
    chip = (0,) if function.startswith("dcmiv2_") else (0, 0)
    if function.endswith("_utilization_rate") and "multi" not in function:
        return int(call(*chip, kind, byref(c_uint())))
    if function.endswith("_ecc_info"):
        return int(call(*chip, kind, byref(EccBuffer())))
    struct = {
        "multi_utilization_rate": MultiUtilizationInfo,
        "memory_info_v3": MemoryInfoV3,
    }.get(function.split("get_device_")[-1])
    return int(call(*chip, byref(struct() if struct else c_int())))


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
        # the helper's order: dcmi_init, then dcmiv2_init where it answered -8255
        inits = {"dcmi_": int(library.dcmi_init()), "dcmiv2_": int(library.dcmiv2_init())}
        for row in (r for r in ROWS if r["board"] == board):
            key = (row["function"], row["type"], board)
            wanted.append((*key, int(row["rc"])))
            init = inits["dcmiv2_" if row["function"].startswith("dcmiv2_") else "dcmi_"]
            if row["function"] == "dcmiv2_init" or init != 0:
                got.append((*key, init))
            else:
                got.append((*key, _answer(library, row["function"], int(row["type"]))))
    assert got == wanted
