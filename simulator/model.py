"""A validated scenario as plain frozen dataclasses: what the per-call runtime path consumes.

This module must not import pydantic or yaml: every npu-smi call is a new process, and a cached
scenario is rebuilt from JSON here without paying for the validation machinery (see loader.py).
"""

from __future__ import annotations

from dataclasses import dataclass

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every call ~3 ms
if TYPE_CHECKING:
    from typing import Any


class ScenarioError(ValueError):
    """A scenario that cannot be found, read or validated; the message lists every problem."""


@dataclass(frozen=True, slots=True)
class Load:
    """AI Core load: base % plus a sine wave plus deterministic noise per (chip, time bucket)."""

    base_percent: float
    amplitude_percent: float
    sine_period_seconds: float
    noise_percent: float
    noise_bucket_seconds: float


@dataclass(frozen=True, slots=True)
class ChipLoad:
    npu: int
    chip: int | None  # None: every chip of the NPU
    base_percent: float


@dataclass(frozen=True, slots=True)
class Process:
    npu: int
    chip: int
    pid: int
    name: str
    hbm_mb: int


@dataclass(frozen=True, slots=True)
class _Event:
    start: float
    end: float | None  # None: forever

    def active(self, elapsed_seconds: float) -> bool:
        return self.start <= elapsed_seconds and (self.end is None or elapsed_seconds < self.end)


@dataclass(frozen=True, slots=True)
class Overheat(_Event):
    npu: int
    chip: int | None
    temperature_celsius: int
    ramp_seconds: float
    throttled_mhz: int
    load_percent: float


@dataclass(frozen=True, slots=True)
class Alarm(_Event):
    npu: int
    chip: int | None
    health: str
    error_codes: tuple[str, ...]
    error_information: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Disappear(_Event):
    npu: int


@dataclass(frozen=True, slots=True)
class Idle(_Event):
    npu: int
    chip: int | None


@dataclass(frozen=True, slots=True)
class Hang(_Event):
    argv: tuple[str, ...]  # tokens that must appear in order
    seconds: float


@dataclass(frozen=True, slots=True)
class DcmiFail(_Event):
    code: int


Event = Overheat | Alarm | Disappear | Idle | Hang | DcmiFail

_EVENTS: dict[str, type[Event]] = {
    "overheat": Overheat,
    "alarm": Alarm,
    "disappear": Disappear,
    "idle": Idle,
    "hang": Hang,
    "dcmi_fail": DcmiFail,
}
_TUPLE_FIELDS = ("error_codes", "error_information", "argv")


@dataclass(frozen=True, slots=True)
class Scenario:
    family: str  # a key of families.FAMILIES
    npu_smi_version: str
    epoch: float
    period: float | None
    seed: int
    load: Load
    chip_loads: tuple[ChipLoad, ...]
    processes: tuple[Process, ...]
    events: tuple[Event, ...]

    def elapsed(self, t: float) -> float:
        """Seconds since the epoch, looped when the scenario has a period."""
        elapsed = max(0.0, t - self.epoch)
        return elapsed % self.period if self.period else elapsed


def _event(data: dict[str, Any]) -> Event:
    fields: dict[str, Any] = {
        k: tuple(v) if k in _TUPLE_FIELDS else v for k, v in data.items() if k != "kind"
    }
    return _EVENTS[data["kind"]](**fields)


def scenario_from_dict(data: dict[str, Any]) -> Scenario:
    """Build from a validated, complete JSON-able dict (pydantic's model_dump(mode="json")).

    Raises KeyError/TypeError on a dict of the wrong shape, e.g. a stale or corrupt cache entry.
    """
    return Scenario(
        family=str(data["family"]),
        npu_smi_version=str(data["npu_smi_version"]),
        epoch=float(data["epoch"]),
        period=None if data["period"] is None else float(data["period"]),
        seed=int(data["seed"]),
        load=Load(**data["load"]),
        chip_loads=tuple(ChipLoad(**c) for c in data["chip_loads"]),
        processes=tuple(Process(**p) for p in data["processes"]),
        events=tuple(_event(e) for e in data["events"]),
    )
