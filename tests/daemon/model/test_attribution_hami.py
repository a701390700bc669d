"""HAMi's device IDs ``<VDie ID>-<i>`` get their chip through the chip's ``vdie_id``.

The ID form is HAMi's (Project-HAMi/ascend-device-plugin ``internal/server/server.go:260-263`` at
ed35e1c4: ``fmt.Sprintf("%s-%d", dev.UUID, i)``, the UUID from DCMI's GetDieID(VDIE), five hex
words joined by ``-``, mind-cluster ``devmanager/dcmi/dcmi.go``). Chip 0's VDie ID is the one in
``tests/fixtures/npu-smi/info_t_board_chip_910a.txt``; chip 3's is made up (the fixtures hold
one real VDie ID only), distinct as every real chip's is.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from npumon.daemon.model.attribution import attribute, vdie_key
from npumon.daemon.model.chips import ChipResults, TableProcess
from npumon.daemon.model.kubelet import ChipOwner
from npumon.daemon.parsers.board import parse_board
from npumon.daemon.parsers.mapping import parse_mapping
from npumon.daemon.parsers.pod_resources import parse_pod_resources
from npumon.daemon.parsers.table import parse_info

FIXTURES = Path(__file__).parents[2] / "fixtures" / "npu-smi"
OTHER_VDIE = "185011D4 21104518 A0C4ED94 14CC040A 56102003"


def results() -> ChipResults:
    board = parse_board((FIXTURES / "info_t_board_chip_910a.txt").read_text(), npu=0)
    assert board.vdie_id == "42C711D4 20B03704 4A10C8D4 14CC040A D2102003"
    return ChipResults(
        table=parse_info((FIXTURES / "info_910a_named910b_8chip_24.1.0.txt").read_text()),
        mapping=parse_mapping((FIXTURES / "info_m_910b_8npu_with_mcu.txt").read_text()),
        chip_board={(0, 0): board, (3, 0): replace(board, npu=3, vdie_id=OTHER_VDIE)},
    )


def test_hami_ids_name_the_chip_whose_vdie_id_they_carry() -> None:
    assert vdie_key(OTHER_VDIE) == "185011D4-21104518-A0C4ED94-14CC040A-56102003"
    pods = parse_pod_resources(
        [
            (
                "ml",
                "a",
                "main",
                "huawei.com/Ascend910B2",
                (
                    "42C711D4-20B03704-4A10C8D4-14CC040A-D2102003-0",
                    "42C711D4-20B03704-4A10C8D4-14CC040A-D2102003-3",
                ),
            ),
            (
                "ml",
                "b",
                "main",
                "huawei.com/Ascend910B2",
                ("185011D4-21104518-A0C4ED94-14CC040A-56102003-1",),
            ),
            (
                "ml",
                "c",
                "main",
                "huawei.com/Ascend910B2",
                ("00000000-00000000-00000000-00000000-00000000-0",),
            ),
        ],
        ["huawei.com/Ascend"],
    )
    assert pods.malformed == ()
    found = attribute(results(), pods)
    assert found.owners((0, 0)) == (ChipOwner("ml", "a", "main"),)  # two slices: one owner
    assert found.owners((3, 0)) == (ChipOwner("ml", "b", "main"),)
    assert found.unmapped == ("00000000-00000000-00000000-00000000-00000000-0",)


def test_the_runtime_corrects_a_hami_id_naming_another_chip() -> None:
    """HAMi's Allocate follows its scheduler's annotation, not the kubelet's IDs: where
    ASCEND_VISIBLE_DEVICES says chip 5, chip 5 is the pod's, and the conflict is said."""
    pods = parse_pod_resources(
        [
            (
                "ml",
                "a",
                "main",
                "huawei.com/Ascend910B2",
                ("185011D4-21104518-A0C4ED94-14CC040A-56102003-0",),
            )
        ],
        ["huawei.com/Ascend"],
    )
    chips = results()
    proc = TableProcess(
        npu=5,
        chip=0,
        pid=42,
        name="python",
        memory_bytes=1,
        pod_uid="u1",
        hostname="a",
        visible_devices=(5,),
    )
    assert chips.table is not None
    chips = replace(chips, table=replace(chips.table, processes=(proc,)))
    found = attribute(chips, pods)
    assert found.owners((5, 0)) == (ChipOwner("ml", "a", "main"),)
    assert found.owners((3, 0)) == ()
    assert len(found.conflicts) == 1
