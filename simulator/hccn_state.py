"""The simulated RoCE port of each chip at time t: a pure function of (scenario, t), driven by the
scenario's `network.events` (flap, link_down, crc_errors, pfc_storm, optical_rx_low).

Counters grow from the scenario epoch and restart when a looping scenario starts over, as the
real ones do on a driver reload or `hccn_tool -stat -c`.
"""

from __future__ import annotations

import math
import random
from typing import NamedTuple

from npumon.simulator.model import NetEvent, Scenario
from npumon.simulator.state import SimChip, SimNode

MAX_RECORDS = 10  # -link_stat prints the newest link changes


class SimPort(NamedTuple):
    chip: SimChip
    device: int  # hccn_tool's -i: the physical ID (A3 Phy-ID; the logic ID on 910B)
    up: bool
    transitions: tuple[tuple[float, bool], ...]  # (seconds after the epoch, up?) oldest first
    rx_bytes: int
    tx_bytes: int
    fcs_errors: int
    pfc_rx: int
    rx_power_mw: tuple[float, ...]  # lanes 0..3
    temperature_celsius: int


def _unit(*key: object) -> float:
    return float(random.Random("/".join(str(k) for k in key)).uniform(0.0, 1.0))


def active(e: NetEvent, el: float) -> bool:
    return e.start <= el and (e.end is None or el < e.end)


def _mine(e: NetEvent, chip: SimChip) -> bool:
    return e.npu == chip.npu and e.chip in (None, chip.chip)


def _seconds_active(e: NetEvent, el: float) -> float:
    end = el if e.end is None else min(el, e.end)
    return max(0.0, end - e.start)


def _flap(e: NetEvent, el: float) -> list[tuple[float, bool]]:
    """Down at the start of every period, up at its middle; up when the event ends."""
    out: list[tuple[float, bool]] = []
    stop = el if e.end is None else min(el, e.end)
    k = 0
    while e.start + k * e.period_seconds < stop and k < 100_000:
        at = e.start + k * e.period_seconds
        out.append((at, False))
        if at + e.period_seconds / 2 < stop:
            out.append((at + e.period_seconds / 2, True))
        k += 1
    if e.end is not None and el >= e.end and out and not out[-1][1]:
        out.append((e.end, True))
    return out


def _transitions(events: list[NetEvent], el: float) -> list[tuple[float, bool]]:
    found: list[tuple[float, bool]] = []
    for e in events:
        if e.kind == "flap":
            found += _flap(e, el)
        elif e.kind == "link_down" and el >= e.start:
            found.append((e.start, False))
            if e.end is not None and el >= e.end:
                found.append((e.end, True))
    return sorted(found)


def _rx_power(sc: Scenario, chip: SimChip, events: list[NetEvent], el: float) -> tuple[float, ...]:
    lanes = [
        round(0.85 + 0.2 * _unit(sc.seed, chip.npu, chip.chip, "rx", lane), 4) for lane in range(4)
    ]
    for e in events:
        if e.kind == "optical_rx_low" and active(e, el):
            fall = min(1.0, (el - e.start) / e.ramp_seconds)
            lanes[0] = round(lanes[0] - (lanes[0] - e.rx_power_mw) * fall, 4)
    return tuple(lanes)


def sim_port(sc: Scenario, chip: SimChip, el: float) -> SimPort:
    events = [e for e in sc.network if _mine(e, chip)]
    transitions = _transitions(events, el)
    down_now = (
        any(e.kind in ("flap", "link_down") and active(e, el) for e in events)
        and bool(transitions)
        and not transitions[-1][1]
    )
    rate = 1.5e9 * (0.4 + 0.6 * _unit(sc.seed, chip.npu, chip.chip, "rate"))  # bytes/s
    return SimPort(
        chip=chip,
        device=chip.phy_id if chip.phy_id is not None else chip.logic_id,
        up=not down_now,
        transitions=tuple(transitions),
        rx_bytes=int(rate * el),
        tx_bytes=int(rate * 0.97 * el),
        fcs_errors=int(
            sum(e.per_second * _seconds_active(e, el) for e in events if e.kind == "crc_errors")
        ),
        pfc_rx=int(
            sum(e.per_second * _seconds_active(e, el) for e in events if e.kind == "pfc_storm")
        ),
        rx_power_mw=_rx_power(sc, chip, events, el),
        temperature_celsius=42 + math.floor(chip.aicore_percent / 10),
    )


def sim_ports(sc: Scenario, node: SimNode, t: float) -> dict[int, SimPort]:
    """Every present chip's port by hccn_tool device ID."""
    el = sc.elapsed(t)
    ports = (sim_port(sc, chip, el) for card in node.cards for chip in card.chips)
    return {p.device: p for p in ports}
