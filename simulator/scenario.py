"""Scenario files validated with pydantic: clear errors with dotted paths, unknown keys rejected.

Imported only on a scenario-cache miss (see loader.py): the runtime path uses model.py instead.
The imports go one way: loader.py (find + cache) calls ``validate`` here; this module knows
nothing of files, the cache or the loader, so there is no import cycle.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from npumon.simulator.families import family_of
from npumon.simulator.model import Scenario, ScenarioError, scenario_from_dict

__all__ = ["ScenarioError", "ScenarioSpec", "parse_scenario", "validate"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LoadSpec(_Model):
    """AI Core load: base % plus a sine wave plus deterministic noise per (chip, time bucket)."""

    base_percent: float = Field(default=60.0, ge=0, le=100)
    amplitude_percent: float = Field(default=20.0, ge=0, le=100)
    sine_period_seconds: float = Field(default=300.0, gt=0)
    noise_percent: float = Field(default=5.0, ge=0, le=50)
    noise_bucket_seconds: float = Field(default=5.0, gt=0)


class ChipLoadSpec(_Model):
    """Per-chip override of the base load (chip omitted: every chip of the NPU)."""

    npu: int = Field(ge=0)
    chip: int | None = Field(default=None, ge=0)
    base_percent: float = Field(ge=0, le=100)


class ProcessSpec(_Model):
    npu: int = Field(ge=0)
    chip: int = Field(default=0, ge=0)
    pid: int = Field(gt=0)
    name: str = Field(default="python3", max_length=15)  # kernel comm: at most 15 chars, may be ""
    hbm_mb: int = Field(ge=0)


class VnpuSpec(_Model):
    """A vNPU carved from a chip (310P `npu-smi set -t create-vnpu`), as DCMI reports it: busy
    as its chip, its memory used in the same share."""

    npu: int = Field(ge=0)
    chip: int = Field(default=0, ge=0)
    vnpu_id: int = Field(ge=0)
    memory_mb: int = Field(gt=0)


class _EventSpec(_Model):
    """A timed event; start/end are seconds after the scenario epoch (end None: forever)."""

    start: float = Field(default=0.0, ge=0)
    end: float | None = None

    @model_validator(mode="after")
    def _window(self) -> _EventSpec:
        if self.end is not None and self.end <= self.start:
            raise ValueError("end must be after start")
        return self


class OverheatSpec(_EventSpec):
    kind: Literal["overheat"]
    npu: int = Field(ge=0)
    chip: int | None = Field(default=None, ge=0)
    temperature_celsius: int = Field(default=95, ge=0, le=150)
    ramp_seconds: float = Field(default=60.0, gt=0)
    throttled_mhz: int = Field(default=1100, gt=0)
    load_percent: float = Field(default=95.0, ge=0, le=100)


class AlarmSpec(_EventSpec):
    kind: Literal["alarm"]
    npu: int = Field(ge=0)
    chip: int | None = Field(default=None, ge=0)
    health: Literal["Warning", "Alarm", "Critical", "UNKNOWN"] = "Alarm"
    error_codes: tuple[str, ...] = ("A4025021",)
    error_information: tuple[str, ...] = ("ascend_monitor adda heart beat lost error",)


class DisappearSpec(_EventSpec):
    kind: Literal["disappear"]
    npu: int = Field(ge=0)


class IdleSpec(_EventSpec):
    kind: Literal["idle"]
    npu: int = Field(ge=0)
    chip: int | None = Field(default=None, ge=0)


class HangSpec(_EventSpec):
    kind: Literal["hang"]
    argv: tuple[str, ...] = Field(min_length=1)  # tokens that must appear in order
    seconds: float = Field(default=600.0, gt=0)


class DcmiFailSpec(_EventSpec):
    kind: Literal["dcmi_fail"]
    code: int = -8005


EventSpec = Annotated[
    OverheatSpec | AlarmSpec | DisappearSpec | IdleSpec | HangSpec | DcmiFailSpec,
    Field(discriminator="kind"),
]


# ---------------------------------------------------------------- network (hccn_tool) section
class NetworkEventSpec(_EventSpec):
    """What the simulated hccn_tool shows for one chip's RoCE port (simulator/hccn.py):

    flap: the link goes down for the first half of every ``period_seconds`` (carrier changes);
    link_down: down for the whole window; crc_errors: FCS/bad packets at ``per_second``;
    pfc_storm: PFC pause frames received at ``per_second``; optical_rx_low: lane 0's RX power
    sinks linearly over ``ramp_seconds`` to ``rx_power_mw`` (below the module's low threshold);
    hccs_crc_errors / sio_crc_errors: CRC errors at ``per_second`` on the chip's last HCCS link
    (npu-smi -t hccs) or its die-to-die link (-t sio-info, A3).
    """

    kind: Literal[
        "flap",
        "link_down",
        "crc_errors",
        "pfc_storm",
        "optical_rx_low",
        "hccs_crc_errors",
        "sio_crc_errors",
    ]
    npu: int = Field(ge=0)
    chip: int | None = Field(default=None, ge=0)
    per_second: float = Field(default=5.0, ge=0)
    period_seconds: float = Field(default=20.0, gt=0)
    ramp_seconds: float = Field(default=60.0, gt=0)
    rx_power_mw: float = Field(default=0.05, ge=0)


class NetworkSpec(_Model):
    events: tuple[NetworkEventSpec, ...] = ()


# ---------------------------------------------------------------- kubernetes (npumon-sim-kubelet)
class ContainerSpec(_Model):
    """A container and the device IDs the kubelet handed it (free text: malformed ones too)."""

    name: str = Field(min_length=1)
    resource: str = "huawei.com/Ascend910"
    devices: tuple[str, ...] = ()


class PodSpec(_EventSpec):
    """A pod present from ``start`` to ``end`` (seconds after the epoch, looped by the period)."""

    namespace: str = "default"
    name: str = Field(min_length=1)
    containers: tuple[ContainerSpec, ...] = Field(min_length=1)


class KubernetesSpec(_Model):
    """What the fake kubelet's pod-resources `List` answers; read by npumon-sim-kubelet only."""

    pods: tuple[PodSpec, ...] = ()
    hang_seconds: float = Field(default=0.0, ge=0)  # every List blocks this long first


class ScenarioSpec(_Model):
    family: Literal["910b", "a3", "950", "310p-duo", "310b"]
    npu_smi_version: str = "25.2.2"
    epoch: float = 0.0
    period: float | None = Field(default=None, gt=0)
    seed: int = 0
    load: LoadSpec = Field(default_factory=LoadSpec)
    chip_loads: tuple[ChipLoadSpec, ...] = ()
    processes: tuple[ProcessSpec, ...] = ()
    vnpus: tuple[VnpuSpec, ...] = ()
    events: tuple[EventSpec, ...] = ()
    network: NetworkSpec = Field(default_factory=NetworkSpec)
    kubernetes: KubernetesSpec | None = None
    # more NPUs than the family's own (bench/daemon_bench.py's 64-chip node): IDs 0..npus-1
    npus: int | None = Field(default=None, ge=1, le=256)

    @model_validator(mode="after")
    def _ids_exist(self) -> ScenarioSpec:
        """Every NPU / chip a scenario names must exist in its family."""
        fam = family_of(self.family, self.npus)
        refs = [
            *self.chip_loads,
            *self.processes,
            *self.vnpus,
            *self.events,
            *self.network.events,
        ]
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


def validate(text: str, source: str = "<scenario>") -> dict[str, Any]:
    """Validate YAML text into a complete JSON-able dict; every problem is named by its path."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{source}: not valid YAML: {exc}") from exc
    try:
        spec = ScenarioSpec.model_validate(data if data is not None else {})
    except ValidationError as exc:
        lines = [
            f"  {'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}"
            for err in exc.errors()
        ]
        raise ScenarioError(f"{source}: invalid scenario\n" + "\n".join(lines)) from exc
    return spec.model_dump(mode="json")


def parse_scenario(text: str, source: str = "<scenario>") -> Scenario:
    """Validate YAML text into the runtime scenario (no cache)."""
    return scenario_from_dict(validate(text, source))
