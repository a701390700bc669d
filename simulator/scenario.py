"""Scenario files for the npu-smi simulator: YAML validated into frozen pydantic models."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from npumon.simulator.families import FAMILIES

SCENARIO_ENV = "NPUMON_SIM_SCENARIO"


class ScenarioError(ValueError):
    """A scenario that cannot be found, read or validated; the message lists every problem."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Load(_Model):
    """AI Core load: base % plus a sine wave plus deterministic noise per (chip, time bucket)."""

    base_percent: float = Field(default=60.0, ge=0, le=100)
    amplitude_percent: float = Field(default=20.0, ge=0, le=100)
    sine_period_seconds: float = Field(default=300.0, gt=0)
    noise_percent: float = Field(default=5.0, ge=0, le=50)
    noise_bucket_seconds: float = Field(default=5.0, gt=0)


class ChipLoad(_Model):
    """Per-chip override of the base load (chip omitted: every chip of the NPU)."""

    npu: int = Field(ge=0)
    chip: int | None = Field(default=None, ge=0)
    base_percent: float = Field(ge=0, le=100)


class Process(_Model):
    npu: int = Field(ge=0)
    chip: int = Field(default=0, ge=0)
    pid: int = Field(gt=0)
    name: str = Field(default="python3", max_length=15)  # kernel comm: at most 15 chars, may be ""
    hbm_mb: int = Field(ge=0)


class _Event(_Model):
    """A timed event; start/end are seconds after the scenario epoch (end None: forever)."""

    start: float = Field(default=0.0, ge=0)
    end: float | None = None

    @model_validator(mode="after")
    def _window(self) -> _Event:
        if self.end is not None and self.end <= self.start:
            raise ValueError("end must be after start")
        return self

    def active(self, elapsed_seconds: float) -> bool:
        return self.start <= elapsed_seconds and (self.end is None or elapsed_seconds < self.end)


class Overheat(_Event):
    kind: Literal["overheat"]
    npu: int = Field(ge=0)
    chip: int | None = Field(default=None, ge=0)
    temperature_celsius: int = Field(default=95, ge=0, le=150)
    ramp_seconds: float = Field(default=60.0, gt=0)
    throttled_mhz: int = Field(default=1100, gt=0)
    load_percent: float = Field(default=95.0, ge=0, le=100)


class Alarm(_Event):
    kind: Literal["alarm"]
    npu: int = Field(ge=0)
    chip: int | None = Field(default=None, ge=0)
    health: Literal["Warning", "Alarm", "Critical", "UNKNOWN"] = "Alarm"
    error_codes: tuple[str, ...] = ("A4025021",)
    error_information: tuple[str, ...] = ("ascend_monitor adda heart beat lost error",)


class Disappear(_Event):
    kind: Literal["disappear"]
    npu: int = Field(ge=0)


class Idle(_Event):
    kind: Literal["idle"]
    npu: int = Field(ge=0)
    chip: int | None = Field(default=None, ge=0)


class Hang(_Event):
    kind: Literal["hang"]
    argv: tuple[str, ...] = Field(min_length=1)  # tokens that must appear in order
    seconds: float = Field(default=600.0, gt=0)


class DcmiFail(_Event):
    kind: Literal["dcmi_fail"]
    code: int = -8005


Event = Annotated[
    Overheat | Alarm | Disappear | Idle | Hang | DcmiFail, Field(discriminator="kind")
]


class Scenario(_Model):
    family: Literal["910b", "a3", "310p-duo"]
    npu_smi_version: str = "25.2.2"
    epoch: float = 0.0
    period: float | None = Field(default=None, gt=0)
    seed: int = 0
    load: Load = Field(default_factory=Load)
    chip_loads: tuple[ChipLoad, ...] = ()
    processes: tuple[Process, ...] = ()
    events: tuple[Event, ...] = ()

    @model_validator(mode="after")
    def _ids_exist(self) -> Scenario:
        """Every NPU / chip a scenario names must exist in its family."""
        fam = FAMILIES[self.family]
        refs = [*self.chip_loads, *self.processes, *self.events]
        for ref in refs:
            npu, chip = getattr(ref, "npu", None), getattr(ref, "chip", None)
            if npu is not None and npu not in fam.npu_ids:
                raise ValueError(f"npu {npu} does not exist in family {self.family} {fam.npu_ids}")
            if chip is not None and chip >= fam.chips_per_npu:
                raise ValueError(
                    f"chip {chip} does not exist: {self.family} has "
                    f"{fam.chips_per_npu} chip(s) per NPU"
                )
        return self

    def elapsed(self, t: float) -> float:
        """Seconds since the epoch, looped when the scenario has a period."""
        elapsed = max(0.0, t - self.epoch)
        return elapsed % self.period if self.period else elapsed


def builtin_names() -> list[str]:
    folder = resources.files("npumon.simulator") / "scenarios"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def _read(ref: str) -> tuple[str, str]:
    path = Path(ref)
    if path.suffix in (".yaml", ".yml") or os.sep in ref:
        try:
            return str(path), path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ScenarioError(f"cannot read scenario {ref}: {exc.strerror}") from exc
    resource = resources.files("npumon.simulator") / "scenarios" / f"{ref}.yaml"
    if not resource.is_file():
        raise ScenarioError(f"unknown scenario {ref!r}; built-in: {', '.join(builtin_names())}")
    return ref, resource.read_text(encoding="utf-8")


def parse_scenario(text: str, source: str = "<scenario>") -> Scenario:
    """Validate YAML text; every problem is reported with its dotted path."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{source}: not valid YAML: {exc}") from exc
    try:
        return Scenario.model_validate(data if data is not None else {})
    except ValidationError as exc:
        lines = [
            f"  {'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}"
            for err in exc.errors()
        ]
        raise ScenarioError(f"{source}: invalid scenario\n" + "\n".join(lines)) from exc


def load_scenario(ref: str | None = None) -> Scenario:
    """Load a scenario by path or built-in name (``910b-8``); None means $NPUMON_SIM_SCENARIO."""
    ref = ref or os.environ.get(SCENARIO_ENV)
    if not ref:
        raise ScenarioError(f"no scenario: pass --scenario or set {SCENARIO_ENV}")
    source, text = _read(ref)
    return parse_scenario(text, source)
