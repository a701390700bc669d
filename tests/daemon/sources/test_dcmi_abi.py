"""ctypes layouts of the DCMI structs equal gcc's, member by member (a C program prints them)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest

from npumon.daemon.sources.dcmi.child.abi import STRUCTS, EccBuffer, EccInfo
from tests.helpers.fake_dcmi import FAKE_DCMI
from tests.helpers.wait import scaled

pytestmark = pytest.mark.integration


def _c_program() -> str:
    lines = [
        "#include <stddef.h>",
        "#include <stdio.h>",
        '#include "fake_dcmi.h"',
        "int main(void) {",
    ]
    for name, struct in STRUCTS.items():
        lines.append(
            f'printf("{name} %zu %zu\\n", sizeof(struct {name}), _Alignof(struct {name}));'
        )
        for field, _ in struct._fields_:
            lines.append(f'printf("{name}.{field} %zu\\n", offsetof(struct {name}, {field}));')
    lines += ["return 0;", "}"]
    return "\n".join(lines)


def _ctypes_layout() -> str:
    out = []
    for name, struct in STRUCTS.items():
        out.append(f"{name} {ctypes.sizeof(struct)} {ctypes.alignment(struct)}")
        out += [f"{name}.{field} {getattr(struct, field).offset}" for field, _ in struct._fields_]
    return "\n".join(out) + "\n"


def test_every_struct_matches_gcc(tmp_path: Path) -> None:
    gcc = shutil.which("gcc")
    assert gcc
    (tmp_path / "layout.c").write_text(_c_program())
    subprocess.run(
        [
            gcc,
            "-std=c11",
            "-I",
            str(FAKE_DCMI),
            "-o",
            str(tmp_path / "layout"),
            str(tmp_path / "layout.c"),
        ],
        check=True,
        timeout=scaled(120),
    )
    printed = subprocess.run(
        [str(tmp_path / "layout")], check=True, capture_output=True, text=True, timeout=scaled(30)
    ).stdout
    assert printed == _ctypes_layout()
    # dcmi.md §4, measured against Huawei's header on x86_64 and aarch64
    sizes = {
        line.split()[0]: int(line.split()[1])
        for line in printed.splitlines()
        if "." not in line.split()[0]
    }
    assert sizes == {
        "dcmi_base_resource": 64,
        "dcmi_computing_resource": 96,
        "dcmi_media_resource": 56,
        "dcmi_vdev_query_info": 256,
        "dcmi_vdev_query_stru": 264,
        "dcmi_soc_total_resource": 360,
        "dcmi_pcie_link_bandwidth_info": 88,
        "dcmi_chip_info_v2": 132,
        "dcmi_pcie_info_all": 64,
        "dcmi_ecc_info": 36,
        "dcmi_hbm_info": 32,
        "dcmi_get_memory_info_stru": 112,
        "dcmi_proc_mem_info": 16,
        "dcmi_multi_utilization_info": 48,
        # ascend950.md §3, gcc against the driver's own header (H:138)
        "dcmi_aicore_info": 8,
        # the driver's own header (docs/architecture.md, DCMI): the sums of its members, the
        # int before the doubles padded to 8
        "dcmi_hccs_statues": 12,
        "dcmi_hccs_lane_info": 4 + 16 * 4 + 16 * 4,
        "dcmi_hccs_statistic_info_u64": (4 * 16 + 64) * 8,
        "dcmi_hccs_bandwidth_info": 8 + 2 * 8 + 2 * 16 * 8,
        "dcmi_pcie_link_error_info": (5 + 32) * 4,
        "dcmi_sio_crc_err_statistics_info": 12,
    }


def test_the_ecc_buffer_has_room_past_both_struct_forms() -> None:
    assert ctypes.sizeof(EccInfo) == 36
    assert ctypes.sizeof(EccBuffer) >= 36 + 28
