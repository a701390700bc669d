"""Scenario validation and the node state over time: deterministic, varying, events in windows."""

from __future__ import annotations

import pytest

from npumon.simulator.loader import load_scenario
from npumon.simulator.model import ScenarioError
from npumon.simulator.render import render
from npumon.simulator.scenario import parse_scenario
from npumon.simulator.state import SimChip, SimNode, node_state


def _chip(node: SimNode, npu: int, chip: int = 0) -> SimChip:
    card = node.card(npu)
    assert card is not None, f"NPU {npu} missing"
    return card.chips[chip]


def test_unknown_key_is_named_with_its_path() -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario("family: 910b\nload:\n  base_percent: 50\n  wobble: 3\n", "x.yaml")
    assert "x.yaml" in str(err.value)
    assert "load.wobble" in str(err.value)


def test_bad_family_lists_the_allowed_ones() -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario("family: 920z\n")
    assert "family" in str(err.value)
    assert "'910b'" in str(err.value) and "'310p-duo'" in str(err.value)


def test_every_problem_is_reported_at_once() -> None:
    text = "family: a3\nperiod: -1\nevents:\n  - {kind: idle, npu: 1, start: 50, end: 10}\n"
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text)
    assert "period" in str(err.value)
    assert "end must be after start" in str(err.value)


def test_ids_must_exist_in_the_family() -> None:
    with pytest.raises(ScenarioError, match="npu 5 does not exist"):
        parse_scenario("family: 310p-duo\nevents:\n  - {kind: disappear, npu: 5}\n")
    with pytest.raises(ScenarioError, match="chip 1 does not exist"):
        parse_scenario("family: 910b\nprocesses:\n  - {npu: 0, chip: 1, pid: 9, hbm_mb: 1}\n")


def test_unknown_builtin_and_missing_file() -> None:
    with pytest.raises(ScenarioError, match="unknown scenario 'nope'.*910b-8"):
        load_scenario("nope")
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario("/nonexistent/dir/s.yaml")


def test_env_var_is_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NPUMON_SIM_SCENARIO", "a3-8x2")
    assert load_scenario().family == "a3"
    monkeypatch.delenv("NPUMON_SIM_SCENARIO")
    with pytest.raises(ScenarioError, match="no scenario"):
        load_scenario()


def test_state_is_deterministic_and_load_varies() -> None:
    sc = load_scenario("910b-8")
    assert node_state(sc, 1000.0) == node_state(sc, 1000.0)
    loads = {_chip(node_state(sc, float(t)), 0).aicore_percent for t in range(0, 600, 30)}
    assert len(loads) > 5
    assert all(0 <= v <= 100 for v in loads)


def test_period_loops_the_scenario() -> None:
    sc = load_scenario("910b-8")
    assert sc.period == 600
    assert node_state(sc, 200.0) == node_state(sc, 200.0 + 3 * 600)


def test_family_shapes() -> None:
    b = node_state(load_scenario("910b-8"), 0.0)
    assert [c.npu for c in b.cards] == list(range(8))
    assert _chip(b, 0).hbm_total_mb == 65536 and _chip(b, 0).memory_total_mb == 0
    a3 = node_state(load_scenario("a3-8x2"), 0.0)
    assert [len(c.chips) for c in a3.cards] == [2] * 8
    assert [ch.phy_id for c in a3.cards for ch in c.chips] == list(range(16))
    assert all(c.chips[1].power_watts is None and c.chips[0].power_watts for c in a3.cards)
    duo = node_state(load_scenario("310p-duo"), 0.0)
    assert [c.npu for c in duo.cards] == [0, 96, 32768, 32896]
    assert all(ch.power_watts is None and ch.hbm_total_mb is None for ch in duo.cards[0].chips)


@pytest.mark.parametrize(
    ("t", "inside"), [(119.0, False), (130.0, True), (299.0, True), (300.0, False)]
)
def test_overheat_only_inside_its_window(t: float, inside: bool) -> None:
    chip = _chip(node_state(load_scenario("910b-8"), t), 3)
    assert (chip.aicore_current_mhz < chip.aicore_rated_mhz) is inside
    if inside:
        assert chip.aicore_percent >= 90  # load stays high while clocked down
        assert chip.aicore_current_mhz == 1100


def test_overheat_ramps_temperature_toward_target() -> None:
    sc = load_scenario("910b-8")
    temps = [_chip(node_state(sc, t), 3).temperature_celsius for t in (125.0, 150.0, 200.0)]
    assert temps[0] < temps[1] < temps[2] == 96


@pytest.mark.parametrize(("t", "health"), [(239.0, "OK"), (240.0, "Alarm"), (420.0, "OK")])
def test_alarm_only_inside_its_window(t: float, health: str) -> None:
    chip = _chip(node_state(load_scenario("910b-8"), t), 5)
    assert chip.health == health
    assert bool(chip.error_codes) is (health == "Alarm")


def test_idle_chip_keeps_its_process_and_memory() -> None:
    chip = _chip(node_state(load_scenario("910b-8"), 77.0), 6)
    assert chip.aicore_percent == 0
    assert chip.aicore_current_mhz == 800  # idle down-clock, not throttling
    assert [p.pid for p in chip.processes] == [31337]
    assert chip.hbm_used_mb is not None and chip.hbm_used_mb > 20480


def test_disappear_only_inside_its_window() -> None:
    sc = load_scenario("310p-duo")
    assert node_state(sc, 299.0).card(32768) is not None
    assert node_state(sc, 300.0).card(32768) is None
    assert node_state(sc, 420.0).card(32768) is not None


def test_dcmi_fail_and_hang_windows() -> None:
    text = (
        "family: 910b\nevents:\n"
        "  - {kind: dcmi_fail, start: 10, end: 20}\n"
        "  - {kind: hang, argv: [-t, usages], seconds: 0.5, start: 30, end: 40}\n"
    )
    sc = parse_scenario(text)
    assert node_state(sc, 5.0).dcmi_fail_code is None
    assert node_state(sc, 15.0).dcmi_fail_code == -8005
    hung = node_state(sc, 35.0)
    assert render(["info", "-t", "usages", "-i", "1"], hung).hang_seconds == 0.5
    assert render(["info", "-t", "common", "-i", "1"], hung).hang_seconds == 0.0
    assert render(["info", "-t", "usages", "-i", "1"], node_state(sc, 45.0)).hang_seconds == 0.0


def test_npus_override_gives_a_bigger_node_of_the_same_family() -> None:
    """bench/daemon_bench.py's 64-chip node: A3 with 32 NPUs x 2 dies."""
    scenario = parse_scenario(
        "family: a3\nnpus: 32\nprocesses:\n"
        "  - {npu: 31, chip: 1, pid: 7, name: python3, hbm_mb: 1024}\n"
    )
    node = node_state(scenario, 100.0)
    assert [card.npu for card in node.cards] == list(range(32))
    assert sum(len(card.chips) for card in node.cards) == 64
    assert render(["info"], node).stdout.count("Ascend910") >= 64
    with pytest.raises(ScenarioError):
        parse_scenario(
            "family: a3\nnpus: 4\nprocesses:\n  - {npu: 5, pid: 7, name: python3, hbm_mb: 1024}\n"
        )
