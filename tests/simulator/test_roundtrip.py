"""Every simulated command parses back, through the daemon's parsers, to the simulator's state.

The parsers' truth is the real samples; here we only check that the simulator and the parsers
agree on units and absent values (bytes = MB * 2**20, ratio = % / 100, hertz = MHz * 1e6).
"""

from __future__ import annotations

import pytest

from npumon.daemon.parsers.board import parse_board
from npumon.daemon.parsers.detail import (
    parse_common,
    parse_ecc,
    parse_memory,
    parse_usages,
)
from npumon.daemon.parsers.health import parse_health
from npumon.daemon.parsers.mapping import parse_mapping
from npumon.daemon.parsers.table import parse_info
from npumon.simulator.loader import load_scenario
from npumon.simulator.render import render
from npumon.simulator.state import SimChip, SimNode, node_state

MIB = 1024 * 1024


def _mb(value: int | None) -> int | None:
    return None if value is None else value * MIB


def _pct(value: int | None) -> float | None:
    return None if value is None else value / 100


# (scenario, t): a quiet moment plus a moment inside every event window of that scenario
CASES = [
    ("910b-8", 10.0),  # NPU 6 idle-but-allocated (whole period)
    ("910b-8", 200.0),  # NPU 3 overheating and clocked down
    ("910b-8", 300.0),  # NPU 5 in Alarm
    ("a3-8x2", 100.0),  # NPU 2 die 1 overheating
    ("a3-8x2", 400.0),  # NPU 6 Warning
    ("310p-duo", 150.0),  # NPU 96 chip 1 Alarm
    ("310p-duo", 350.0),  # NPU 32768 gone
    ("disappear", 100.0),
    ("310b", 60.0),  # a SoC board: no process section
    ("950-4", 100.0),  # NPU_SMI_V2: NPU 1 overheating, NPU 2 idle
    ("950-4", 350.0),  # NPU 3's heartbeat lost: its row zeroed, served as lost
]


@pytest.fixture(params=CASES, ids=[f"{s}@{t:g}" for s, t in CASES])
def node(request: pytest.FixtureRequest) -> SimNode:
    name, t = request.param
    return node_state(load_scenario(name), t)


def _out(argv: str, node: SimNode) -> str:
    result = render(argv.split(), node)
    assert result.exit_code == 0, result.stdout
    return result.stdout


def _text(printed: str) -> str | None:
    """What a parser makes of a printed text: NA (a SoC board's Bus-Id) is absent."""
    return None if printed == "NA" else printed


def _chips(node: SimNode) -> list[SimChip]:
    return [chip for card in node.cards for chip in card.chips]


def _lost(chip: SimChip) -> bool:
    return "40F84E00" in chip.error_codes


def _where(npu: int, chip: int, node: SimNode) -> str:
    """`-i N -c M`; the 950's npu-smi refuses `-c`."""
    return f"-i {npu}" if node.family.v2 else f"-i {npu} -c {chip}"


def test_the_950_refuses_the_chip_option() -> None:
    node = node_state(load_scenario("950-4"), 10.0)
    result = render(["info", "-t", "health", "-i", "0", "-c", "0"], node)
    assert result.exit_code == 215
    assert result.stdout == "This device does not support input parameter of -c.\n"


def test_info_table(node: SimNode) -> None:
    table = parse_info(_out("info", node))
    fam = node.family
    assert table.npu_smi_version == node.npu_smi_version
    assert table.one_chip_npus == fam.v2
    served = [c for c in _chips(node) if not (fam.v2 and _lost(c))]
    assert table.lost == tuple((c.npu, c.chip) for c in _chips(node) if c not in served)
    assert [(c.npu, c.chip) for c in table.chips] == [(c.npu, c.chip) for c in served]
    for got, chip in zip(table.chips, served, strict=True):
        assert got.name == fam.table_name
        assert got.health == chip.health
        assert got.power_watts == chip.power_watts
        assert got.temperature_celsius == chip.temperature_celsius
        assert (got.hugepages_used, got.hugepages_total) == (0, 0)
        assert got.bus_id == _text(chip.bus_id)
        if fam.v2:  # "NPU Util(%)" in place of "AICore(%)"
            assert (got.aicore_ratio, got.npu_util_ratio) == (None, _pct(chip.npu_util_percent))
        else:
            assert got.aicore_ratio == _pct(chip.aicore_percent)
        assert got.memory_used_bytes == _mb(chip.memory_used_mb)
        assert got.memory_total_bytes == _mb(chip.memory_total_mb)
        assert got.hbm_used_bytes == _mb(chip.hbm_used_mb)
        assert got.hbm_total_bytes == _mb(chip.hbm_total_mb)
        assert got.logic_id == (chip.logic_id if fam.p310 else None)
        assert got.phy_id == chip.phy_id
    expected = [
        (chip.npu, None if fam.v2 else chip.chip, p.pid, p.name or None, p.memory_mb * MIB)
        for chip in _chips(node)
        for p in chip.processes
    ]
    got_procs = [(p.npu, p.chip, p.pid, p.name, p.memory_bytes) for p in table.processes]
    assert got_procs == expected


def test_mapping(node: SimNode) -> None:
    mapping = parse_mapping(_out("info -m", node))
    if node.family.v2:  # Slot ID and Chip Phy-ID, no Chip Logic ID column
        expected = [(c.npu, c.chip, None, c.logic_id) for c in _chips(node)]
    else:
        expected = [(c.npu, c.chip, c.logic_id, c.phy_id) for c in _chips(node)]
    assert [(m.npu, m.chip, m.logic_id, m.phy_id) for m in mapping.chips] == expected


def test_usages(node: SimNode) -> None:
    for card in node.cards:
        report = parse_usages(_out(f"info -t usages -i {card.npu}", node))
        assert report.npu == card.npu
        for got, chip in zip(report.chips, card.chips, strict=True):
            assert got.chip == chip.chip
            assert got.aicore_ratio == _pct(chip.aicore_percent)
            assert got.aivector_ratio == _pct(chip.aivector_percent)
            assert got.aicube_ratio == _pct(chip.aicube_percent)
            assert got.npu_util_ratio == _pct(chip.npu_util_percent)
            assert got.vectorcore_ratio == _pct(chip.vectorcore_percent)
            assert got.aicpu_ratio == _pct(chip.aicpu_percent)
            assert got.ctrlcpu_ratio == _pct(chip.ctrlcpu_percent)
            assert got.memory_total_bytes == _mb(chip.memory_total_mb)
            assert got.hbm_total_bytes == _mb(chip.hbm_total_mb)
            assert got.hbm_bandwidth_ratio == _pct(chip.hbm_bandwidth_percent)
            assert got.memory_bandwidth_ratio == _pct(chip.memory_bandwidth_percent)


def test_common(node: SimNode) -> None:
    for card in node.cards:
        report = parse_common(_out(f"info -t common -i {card.npu}", node))
        assert report.npu == card.npu
        for got, chip in zip(report.chips, card.chips, strict=True):
            assert got.chip == chip.chip
            if node.family.v2:  # its "Aicore Usage Rate(%)" holds the NPU utilization
                assert got.aicore_ratio is None
                assert got.npu_util_ratio == _pct(chip.npu_util_percent)
            else:
                assert got.aicore_ratio == _pct(chip.aicore_percent)
            assert got.aicore_rated_hertz == chip.aicore_rated_mhz * 1e6
            assert got.aicore_current_hertz == chip.aicore_current_mhz * 1e6
            assert got.aicore_count == chip.aicore_count
            assert got.temperature_celsius == chip.temperature_celsius
            assert got.power_watts == chip.power_watts


def _check_memory(node: SimNode) -> None:
    for card in node.cards:
        for chip in card.chips:
            argv = f"info -t memory {_where(card.npu, chip.chip, node)}"
            memory = parse_memory(_out(argv, node), npu=card.npu, chip=chip.chip)
            assert (memory.npu, memory.chip) == (card.npu, chip.chip)
            assert memory.hbm_total_bytes == _mb(chip.hbm_total_mb)
            assert memory.hbm_temperature_celsius == chip.hbm_temperature_celsius
            assert memory.memory_total_bytes == _mb(chip.memory_total_mb)


def test_memory_and_ecc(node: SimNode) -> None:
    _check_memory(node)
    for card in node.cards:
        ecc = parse_ecc(_out(f"info -t ecc -i {card.npu}", node))
        assert [c.chip for c in ecc.chips] == [c.chip for c in card.chips]
        for got, chip in zip(ecc.chips, card.chips, strict=True):
            if node.family.p310:
                assert (got.ddr_double_bit_errors, got.hbm_double_bit_errors) == (0, None)
            else:
                assert got.hbm_single_bit_errors == chip.hbm_single_bit_errors
                assert got.hbm_double_bit_errors == chip.hbm_double_bit_errors


def test_health(node: SimNode) -> None:
    for card in node.cards:
        for chip in card.chips:
            report = parse_health(_out(f"info -t health {_where(card.npu, chip.chip, node)}", node))
            assert report.status == chip.health
            assert report.error_codes == chip.error_codes


def test_board(node: SimNode) -> None:
    for card in node.cards:
        board = parse_board(_out(f"info -t board -i {card.npu}", node))
        assert (board.npu, board.chip) == (card.npu, None)
        assert board.firmware_version == card.firmware_version
        assert board.serial == card.serial
        if node.family.v2:  # no `-c`: the card's board is its one chip's
            assert board.chip_name == node.family.chip_name
            assert board.bus_id == card.bus_id
            continue
        for chip in card.chips:
            chip_board = parse_board(_out(f"info -t board -i {card.npu} -c {chip.chip}", node))
            assert (chip_board.npu, chip_board.chip) == (card.npu, chip.chip)
            assert chip_board.chip_name == node.family.chip_name
            assert chip_board.bus_id == _text(chip.bus_id)
            if not node.family.p310:  # 310P prints "Die ID", not "VDie ID"
                assert chip_board.vdie_id == chip.vdie_id
