"""The simulated node at time t: a pure function of (scenario, t) into immutable NamedTuples.

NamedTuples rather than frozen dataclasses: class creation is paid by every simulator call
(see model.py).
"""

from __future__ import annotations

import hashlib
import math
import random
from typing import NamedTuple

from npumon.simulator.families import Family, family_of
from npumon.simulator.model import (
    Alarm,
    DcmiFail,
    Disappear,
    Hang,
    Idle,
    Overheat,
    Scenario,
    active,
)


class SimProcess(NamedTuple):
    pid: int
    name: str
    memory_mb: int


class SimChip(NamedTuple):
    """Every value npu-smi prints for one chip, in npu-smi's own units (%, MB, MHz, W, C)."""

    npu: int
    chip: int
    logic_id: int
    phy_id: int | None  # A3 only
    health: str
    error_codes: tuple[str, ...]
    error_information: tuple[str, ...]
    power_watts: float | None  # None: NA (310P) or "-" (A3 die 1)
    temperature_celsius: int
    hbm_temperature_celsius: int | None
    hugepages_used: int
    hugepages_total: int
    bus_id: str
    aicore_percent: int
    aivector_percent: int | None  # 910B / A3
    aicube_percent: int | None  # 910B / A3
    npu_util_percent: int | None  # 910B / A3
    vectorcore_percent: int | None  # 310P
    aicpu_percent: int
    ctrlcpu_percent: int
    memory_used_mb: int  # DDR; 0 / 0 on 910B and A3
    memory_total_mb: int
    memory_bandwidth_percent: int
    hbm_used_mb: int | None
    hbm_total_mb: int | None
    hbm_bandwidth_percent: int | None
    hbm_clock_mhz: int | None
    ddr_clock_mhz: int
    aicore_rated_mhz: int
    aicore_current_mhz: int
    aicore_count: int | None
    vdie_id: str
    ndie_id: str
    hbm_single_bit_errors: int
    hbm_double_bit_errors: int
    processes: tuple[SimProcess, ...]

    @property
    def memory_usage_percent(self) -> int:
        return self.memory_used_mb * 100 // self.memory_total_mb if self.memory_total_mb else 0

    @property
    def hbm_usage_percent(self) -> int | None:
        if self.hbm_used_mb is None or not self.hbm_total_mb:
            return None
        return self.hbm_used_mb * 100 // self.hbm_total_mb


class SimCard(NamedTuple):
    npu: int
    chips: tuple[SimChip, ...]
    serial: str
    firmware_version: str
    bus_id: str
    mcu_temperature_celsius: int
    mcu_power_watts: float | None  # 310P only
    mcu_sensors_celsius: tuple[tuple[str, int], ...]  # -t temp board sensors


class SimNode(NamedTuple):
    family: Family
    npu_smi_version: str
    cards: tuple[SimCard, ...]  # the cards that are present at t
    dcmi_fail_code: int | None
    hangs: tuple[Hang, ...]

    def card(self, npu: int) -> SimCard | None:
        return next((c for c in self.cards if c.npu == npu), None)


def _unit(*key: object) -> float:
    """A deterministic pseudo-random number in [-1, 1] for the key."""
    return float(random.Random("/".join(str(k) for k in key)).uniform(-1.0, 1.0))


def _hex_words(*key: object) -> str:
    digest = hashlib.sha256("/".join(str(k) for k in key).encode()).hexdigest().upper()
    return " ".join(digest[i : i + 8] for i in range(0, 40, 8))


def _applies(event: Overheat | Alarm | Idle, npu: int, chip: int) -> bool:
    return event.npu == npu and event.chip in (None, chip)


def _load_percent(sc: Scenario, npu: int, chip: int, index: int, elapsed: float) -> float:
    base = sc.load.base_percent
    for override in sc.chip_loads:
        if override.npu == npu and override.chip in (None, chip):
            base = override.base_percent
    phase = 2 * math.pi * (elapsed / sc.load.sine_period_seconds + index / 7.0)
    bucket = int(elapsed // sc.load.noise_bucket_seconds)
    noise = sc.load.noise_percent * _unit(sc.seed, npu, chip, bucket)
    return min(100.0, max(0.0, base + sc.load.amplitude_percent * math.sin(phase) + noise))


class _Drive(NamedTuple):
    """What the events do to one chip at t."""

    load: float
    temperature: int
    current_mhz: int
    health: str
    codes: tuple[str, ...]
    information: tuple[str, ...]


def _drive(sc: Scenario, fam: Family, npu: int, chip: int, index: int, el: float) -> _Drive:
    load = _load_percent(sc, npu, chip, index, el)
    on = [e for e in sc.events if active(e, el)]
    heat = [e for e in on if isinstance(e, Overheat) and _applies(e, npu, chip)]
    alarm = [e for e in on if isinstance(e, Alarm) and _applies(e, npu, chip)]
    if any(isinstance(e, Idle) and _applies(e, npu, chip) for e in on):
        load = 0.0
    if heat:
        load = max(load, heat[0].load_percent)
    wobble = _unit(sc.seed, "t", npu, chip, int(el // 10))
    temp = fam.temp_idle_celsius + round(load * 0.22 + wobble)
    # npu-smi's curFreq drops at idle by design; that alone is not throttling
    mhz = fam.rated_mhz if load >= 5 else fam.idle_mhz
    if heat:
        ramp = min(1.0, (el - heat[0].start) / heat[0].ramp_seconds)
        temp = round(temp + (heat[0].temperature_celsius - temp) * ramp)
        mhz = heat[0].throttled_mhz
    if alarm:
        a = alarm[0]
        return _Drive(load, temp, mhz, a.health, a.error_codes, a.error_information)
    return _Drive(load, temp, mhz, "OK", (), ())


HEARTBEAT_LOST = "40F84E00"  # the driver's heartbeat-loss code


def _chip(sc: Scenario, fam: Family, npu: int, chip: int, index: int, el: float) -> SimChip:
    state = _chip_readings(sc, fam, npu, chip, index, el)
    if fam.v2 and HEARTBEAT_LOST in state.error_codes:
        # the 950's npu-smi reads only health and name when the heartbeat check fails and
        # prints the zeroed rest (`query_card_chip_total_info`, NPU_SMI_V2)
        return state._replace(
            power_watts=0.0,
            temperature_celsius=0,
            bus_id="0000:00:00.0",
            aicore_percent=0,
            npu_util_percent=0,
            hbm_used_mb=0,
            hbm_total_mb=0,
            processes=(),
        )
    return state


def _chip_readings(
    sc: Scenario, fam: Family, npu: int, chip: int, index: int, el: float
) -> SimChip:
    d = _drive(sc, fam, npu, chip, index, el)
    load = round(d.load)
    procs = tuple(
        SimProcess(p.pid, p.name, p.hbm_mb) for p in sc.processes if (p.npu, p.chip) == (npu, chip)
    )
    used = fam.reserved_mb + sum(p.memory_mb for p in procs)
    hbm = fam.has_hbm
    bus = fam.bus_numbers[fam.npu_ids.index(npu)] + (2 * chip if fam.a3 else 0)
    return SimChip(
        npu=npu,
        chip=chip,
        logic_id=index,
        phy_id=index if fam.a3 else None,
        health=d.health,
        error_codes=d.codes,
        error_information=d.information,
        power_watts=_power(sc, fam, npu, chip, el),
        temperature_celsius=d.temperature,
        hbm_temperature_celsius=d.temperature - 3 if hbm else None,
        hugepages_used=0,
        hugepages_total=0,
        bus_id="NA" if fam.soc else f"0000:{bus:02X}:00.0",
        aicore_percent=load,
        aivector_percent=round(load * 0.7) if hbm else None,
        aicube_percent=round(load * 0.95) if hbm else None,
        # overall NPU % (the multi-utilization call's npu_util, which DCMI raises to at least
        # AI Core %): above AI Core on the 950, so a backend reading one for the other shows
        npu_util_percent=(min(100, load + 4) if fam.v2 else load) if hbm else None,
        vectorcore_percent=None if hbm else round(load * 0.6),
        aicpu_percent=round(load * 0.05),
        ctrlcpu_percent=3 + round(2 * abs(_unit(sc.seed, "c", npu, chip, int(el // 5)))),
        memory_used_mb=0 if hbm else min(used, fam.ddr_total_mb[chip]),
        memory_total_mb=fam.ddr_total_mb[chip],
        memory_bandwidth_percent=0 if hbm else round(load * 0.5),
        hbm_used_mb=min(used, fam.hbm_total_mb) if fam.hbm_total_mb else None,
        hbm_total_mb=fam.hbm_total_mb,
        hbm_bandwidth_percent=round(load * 0.55) if hbm else None,
        hbm_clock_mhz=(3200 if fam.v2 else 1600) if hbm else None,
        ddr_clock_mhz=0 if hbm else 3200,
        aicore_rated_mhz=fam.rated_mhz,
        aicore_current_mhz=d.current_mhz,
        aicore_count=fam.aicore_count,
        vdie_id=_hex_words(sc.seed, "vdie", npu, chip),
        ndie_id=_hex_words(sc.seed, "ndie", npu, chip),
        hbm_single_bit_errors=0,
        hbm_double_bit_errors=0,
        processes=procs,
    )


def _power(sc: Scenario, fam: Family, npu: int, chip: int, el: float) -> float | None:
    """Board power: NA on 310P; on A3 reported once per NPU, on die 0 (die 1 prints '-')."""
    if fam.power_idle_watts is None or fam.power_max_watts is None or (fam.a3 and chip == 1):
        return None
    index = fam.npu_ids.index(npu) * fam.chips_per_npu
    dies = range(fam.chips_per_npu)
    load = sum(_drive(sc, fam, npu, c, index + c, el).load for c in dies) / fam.chips_per_npu
    jitter = 1.5 * _unit(sc.seed, "p", npu, int(el // 5))
    span = fam.power_max_watts - fam.power_idle_watts
    return float(round(fam.power_idle_watts + span * load / 100 + jitter, 1))


def _card(sc: Scenario, fam: Family, npu: int, el: float) -> SimCard:
    first = fam.npu_ids.index(npu) * fam.chips_per_npu
    chips = tuple(_chip(sc, fam, npu, c, first + c, el) for c in range(fam.chips_per_npu))
    return SimCard(
        npu=npu,
        chips=chips,
        serial=hashlib.sha256(f"{sc.seed}/sn/{npu}".encode()).hexdigest()[:12].upper(),
        firmware_version="7.5.0.5.220",
        bus_id=chips[0].bus_id,
        mcu_temperature_celsius=max(c.temperature_celsius for c in chips) - 8,
        mcu_power_watts=round(40.0 + 0.3 * chips[0].aicore_percent, 1) if fam.p310 else None,
        mcu_sensors_celsius=(("LM75A_TE", 36), ("LM75B_TE", 35)) if not fam.p310 else (),
    )


def node_state(scenario: Scenario, t: float) -> SimNode:
    """The whole node as npu-smi would report it at wall-clock time t (seconds)."""
    fam = family_of(scenario.family, scenario.npus)
    el = scenario.elapsed(t)
    on = [e for e in scenario.events if active(e, el)]
    gone = {e.npu for e in on if isinstance(e, Disappear)}
    dcmi = next((e.code for e in on if isinstance(e, DcmiFail)), None)
    return SimNode(
        family=fam,
        npu_smi_version=scenario.npu_smi_version,
        cards=tuple(_card(scenario, fam, n, el) for n in fam.npu_ids if n not in gone),
        dcmi_fail_code=dcmi,
        hangs=tuple(e for e in on if isinstance(e, Hang)),
    )
