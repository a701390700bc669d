"""A validated scenario as plain immutable records: what the per-call runtime path consumes.

This module must not import pydantic or yaml: every npu-smi call is a new process, and a cached
scenario is rebuilt from JSON here without paying for the validation machinery (see loader.py).
The records are NamedTuples, not frozen dataclasses, on purpose: a frozen dataclass class
exec()s its generated methods when it is created and needs `import dataclasses`, both paid on
every call; a NamedTuple class is cheaper to create (bench/simulator_bench.py prints what
`import dataclasses` costs).
"""

from __future__ import annotations

from typing import Any, NamedTuple


class ScenarioError(ValueError):
    """A scenario that cannot be found, read or validated; the message lists every problem."""


class Load(NamedTuple):
    """AI Core load: base % plus a sine wave plus deterministic noise per (chip, time bucket)."""

    base_percent: float
    amplitude_percent: float
    sine_period_seconds: float
    noise_percent: float
    noise_bucket_seconds: float


class ChipLoad(NamedTuple):
    npu: int
    chip: int | None  # None: every chip of the NPU
    base_percent: float


class Process(NamedTuple):
    npu: int
    chip: int
    pid: int
    name: str
    hbm_mb: int


class Vnpu(NamedTuple):
    npu: int
    chip: int
    vnpu_id: int
    memory_mb: int


class Overheat(NamedTuple):
    start: float  # seconds after the scenario epoch
    end: float | None  # None: forever
    npu: int
    chip: int | None
    temperature_celsius: int
    ramp_seconds: float
    throttled_mhz: int
    load_percent: float


class Alarm(NamedTuple):
    start: float  # seconds after the scenario epoch
    end: float | None  # None: forever
    npu: int
    chip: int | None
    health: str
    error_codes: tuple[str, ...]
    error_information: tuple[str, ...]


class Disappear(NamedTuple):
    start: float  # seconds after the scenario epoch
    end: float | None  # None: forever
    npu: int


class Idle(NamedTuple):
    start: float  # seconds after the scenario epoch
    end: float | None  # None: forever
    npu: int
    chip: int | None


class Hang(NamedTuple):
    start: float  # seconds after the scenario epoch
    end: float | None  # None: forever
    argv: tuple[str, ...]  # tokens that must appear in order
    seconds: float


class DcmiFail(NamedTuple):
    start: float  # seconds after the scenario epoch
    end: float | None  # None: forever
    code: int


Event = Overheat | Alarm | Disappear | Idle | Hang | DcmiFail


class NetEvent(NamedTuple):
    """A `network.events` entry: what the simulated hccn_tool shows (scenario.py says each)."""

    kind: str  # flap, link_down, crc_errors, pfc_storm, optical_rx_low
    start: float
    end: float | None
    npu: int
    chip: int | None
    per_second: float
    period_seconds: float
    ramp_seconds: float
    rx_power_mw: float


def active(event: Event, elapsed_seconds: float) -> bool:
    """Whether the event is on at this many seconds after the epoch."""
    return event.start <= elapsed_seconds and (event.end is None or elapsed_seconds < event.end)


_EVENTS: dict[str, type[Event]] = {
    "overheat": Overheat,
    "alarm": Alarm,
    "disappear": Disappear,
    "idle": Idle,
    "hang": Hang,
    "dcmi_fail": DcmiFail,
}
_TUPLE_FIELDS = ("error_codes", "error_information", "argv")


class Scenario(NamedTuple):
    family: str  # a key of families.FAMILIES
    npu_smi_version: str
    epoch: float
    period: float | None
    seed: int
    load: Load
    chip_loads: tuple[ChipLoad, ...]
    processes: tuple[Process, ...]
    events: tuple[Event, ...]
    network: tuple[NetEvent, ...] = ()  # the `network` section (hccn_tool)
    npus: int | None = None  # families.family_of: more NPUs than the family's own
    vnpus: tuple[Vnpu, ...] = ()  # what DCMI reports (simulator/dcmi.py); npu-smi prints none

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
        network=tuple(NetEvent(**e) for e in data.get("network", {}).get("events", ())),
        npus=None if data.get("npus") is None else int(data["npus"]),
        vnpus=tuple(Vnpu(**v) for v in data.get("vnpus", ())),
    )
