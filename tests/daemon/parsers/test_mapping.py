"""`npu-smi info -m` and `-l` (parsers/mapping.py)."""

from __future__ import annotations

import pytest

from npumon.daemon.model.chips import MappedChip
from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.mapping import parse_mapping
from tests.daemon.parsers.npu_smi_fixtures import fixture_text


# ---------------------------------------------------------------- -m and -l
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("info_m_910a_8chip.txt", [(n, 0, n, "Ascend 910A") for n in range(8)]),
        ("info_m_910a_8chip_24.1rc2.txt", [(n, 0, n, "Ascend 910A") for n in range(8)]),
        ("info_m_910b_8npu_with_mcu.txt", [(n, 0, n, "Ascend xxx") for n in range(8)]),
        ("info_m_310_4chip_npu-smi20.2.txt", [(215, c, c, "MiniD") for c in range(4)]),
        ("info_m_310_4chip_with_mcu.txt", [(6, c, c, "MiniD") for c in range(4)]),
        (
            "info_m_310p_2chip_per_card.txt",
            [(n, c, 2 * i + c, "Ascend xxx") for i, n in enumerate((1, 2, 4, 5)) for c in (0, 1)],
        ),
    ],
)
def test_mapping(name: str, expected: list[tuple[int, int, int, str]]) -> None:
    chips = parse_mapping(fixture_text(name)).chips
    assert [(c.npu, c.chip, c.logic_id, c.name) for c in chips] == expected  # MCU rows dropped


def test_mapping_a3_phy_id_and_no_card() -> None:
    text = (
        "\tNPU ID  Chip ID  Chip Logic ID  Chip Phy-ID  Chip Name\n"
        "\t0       0        0              0            Ascend 910_9391\n"
        "\t0       1        1              1            Ascend 910_9391\n"
        "\t0       2        -              -            Mcu\n"
    )
    assert parse_mapping(text).chips == (
        MappedChip(0, 0, 0, "Ascend 910_9391", 0),
        MappedChip(0, 1, 1, "Ascend 910_9391", 1),
    )
    assert parse_mapping("There is no NPU card on this server.\n").chips == ()
    with pytest.raises(ParseError):
        parse_mapping("Invalid card id.\n")


# ---------------------------------------------------------------- forms printed by npu-smi's source
# Synthetic, written from the printf formats in npu-smi's source (npu-smi.md s.3); no real
# capture of these forms exists in the samples.
def test_mapping_950_header_with_slot_id() -> None:
    text = (
        "\tNPU ID                         Slot ID                        Chip ID        "
        "                Chip Phy-ID                    Chip Name\n"
        "\t0                              1                              0              "
        "                0                              Ascend 950DT\n"
    )
    assert parse_mapping(text).chips == (MappedChip(0, 0, None, "Ascend 950DT", 0),)
