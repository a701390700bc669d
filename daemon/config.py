"""YAML config into frozen pydantic models; every problem reported at once with its dotted path."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ByteSize,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from npumon.daemon import config_messages
from npumon.daemon.faults import load_fault_table
from npumon.daemon.model.profile import AnalysisLimits, Thresholds
from npumon.yamlfile import LineOf, YamlFileError, load_yaml, on_line

log = logging.getLogger(__name__)

_DURATION = re.compile(r"(?P<num>\d+(\.\d+)?)(?P<unit>ms|s|m|h|d)\Z")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def _duration(value: Any) -> Any:
    """``"15s"``, ``"500ms"``, ``"1h"`` or a bare number of seconds -> float seconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration like '15s', got true/false")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        match = _DURATION.match(value.strip())
        if match:
            return float(match["num"]) * _UNIT_SECONDS[match["unit"]]
    raise ValueError(
        "expected a duration like '500ms', '15s', '10m' or '1h', "
        f"got {config_messages.kind_of(value)}"
    )


Duration = Annotated[float, BeforeValidator(_duration), Field(gt=0)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Intervals(_Model):
    table: Duration = 5.0
    detail: Duration = 15.0
    health: Duration = 60.0
    identity: Duration = 3600.0


class Chips(_Model):
    """How the chips are read, whichever backend answers (npu-smi or DCMI)."""

    timeout: Duration = 10.0
    intervals: Intervals = Intervals()
    max_processes_per_chip: int = Field(default=8, ge=0, le=64)
    # who answers `npu-smi info`: libdcmi through the helper when it loads, initialises and
    # agrees with npu-smi (auto), libdcmi whenever it loads (dcmi), or always npu-smi (cli)
    backend: Literal["auto", "dcmi", "cli"] = "auto"


class NpuSmi(_Model):
    """The npu-smi CLI: the cli backend, and what auto and dcmi fall back on."""

    command: tuple[str, ...] = Field(default=("npu-smi",), min_length=1)


class HccnTool(_Model):
    """The hccn_tool source (RoCE NIC ports and optics); off by itself where it is not installed."""

    command: tuple[str, ...] = Field(
        default=("/usr/local/Ascend/driver/tools/hccn_tool",), min_length=1
    )
    interval: Duration = 30.0
    identity_interval: Duration = 3600.0  # -ip, -lldp, the 950 port list
    timeout: Duration = 10.0


class Dcmi(_Model):
    """The DCMI backend (chips.backend); None: search where npu-exporter searches."""

    library: Path | None = None


class Limits(_Model):
    temperature_celsius: float = Field(default=85.0, gt=0)
    power_watts: float = Field(default=400.0, gt=0)


class Throttle(_Model):
    frequency_ratio: float = Field(default=0.95, gt=0, le=1)
    min_aicore_utilization: float = Field(default=0.5, ge=0, le=1)
    default_limits: Limits = Limits()
    limits: dict[str, Limits] = Field(default_factory=dict)

    def limits_for(self, model: str | None) -> Limits:
        """Exact chip name first, then the longest configured prefix, then the default."""
        if not model:
            return self.default_limits
        if model in self.limits:
            return self.limits[model]
        prefixes = [name for name in self.limits if model.startswith(name)]
        return self.limits[max(prefixes, key=len)] if prefixes else self.default_limits


class Web(_Model):
    # [host]:port; an IPv6 host in brackets
    listen_address: str = Field(default=":9732", pattern=r"^(\[[0-9A-Fa-f:.]+\]|[^:\[\]]*):\d+$")
    config_file: Path | None = None
    max_requests: int = Field(default=40, ge=1, le=10000)
    max_connections: int = Field(default=1024, ge=1, le=1_000_000)


class Textfile(_Model):
    path: Path | None = None


class Node(_Model):
    cann_version: str | None = None


class Compat(_Model):
    # also serve Huawei npu-exporter's names, units and labels (exporters/compat.py)
    npu_exporter_names: bool = False


class Faults(_Model):
    # the device plugin's faultCode.json on the node (it may be customised); None: the shipped one
    code_table: Path | None = None

    @field_validator("code_table")
    @classmethod
    def _readable_table(cls, path: Path | None) -> Path | None:
        if path is not None:
            load_fault_table(path)  # FaultTableError is a ValueError: reported with its path
        return path


class Logging(_Model):
    level: Literal["debug", "info", "warning", "error"] = "info"
    format: Literal["logfmt", "json"] = "logfmt"


CollectorName = Literal[
    "identity",
    "health",
    "utilization",
    "power",
    "memory",
    "clocks",
    "ecc",
    "dcmi",
    "network",
    "network_detail",
    "optical",
    "optical_detail",
    "interconnect",
    "interconnect_detail",
    "processes",
    "kubernetes",
    "capture",
    "sources",
    "node",
    "profiles",
    "npu_exporter_compat",
]
"""The exporters' collectors (a test keeps this equal to exporters.collector.COLLECTOR_NAMES)."""


class Kubernetes(_Model):
    """The kubelet pod-resources source (off while the socket does not exist)."""

    pod_resources_socket: Path = Path("/var/lib/kubelet/pod-resources/kubelet.sock")
    interval: Duration = 30.0
    timeout: Duration = 5.0
    # prefixes, not names: vNPU resource names carry the template (huawei.com/Ascend910-2c)
    resource_prefixes: tuple[str, ...] = Field(
        default=("huawei.com/Ascend", "huawei.com/npu"), min_length=1
    )


DetailCollectorName = Literal["network_detail", "optical_detail", "interconnect_detail"]
"""The default-off collectors `collectors.enabled` switches on (exporters.collector)."""


class Collectors(_Model):
    disabled: tuple[CollectorName, ...] = ()
    enabled: tuple[DetailCollectorName, ...] = ()

    @model_validator(mode="after")
    def _not_both(self) -> Collectors:
        both = sorted(set(self.disabled) & set(self.enabled))
        if both:
            raise ValueError(f"{', '.join(both)}: both enabled and disabled; keep one")
        return self


CaptureMode = Literal["msprof_attach", "torch_npu_config"]
_WORKLOAD_NAME = r"^[A-Za-z0-9_.:-]{1,64}$"
# below state_directory: each workload's latest analysis, <workload>.json and .html, served
# at /reports/<workload>.html and .json
REPORTS = "reports"


class ProfilingTarget(_Model):
    """A job to profile, matched by process name and/or command line (regexes, all must match)."""

    workload: str = Field(pattern=_WORKLOAD_NAME)
    process_name: str | None = None
    cmdline: str | None = None
    mode: CaptureMode = "msprof_attach"
    config_dir: Path | None = None  # torch_npu_config: the dir given to dynamic_profile.init()
    interval: Duration | None = None  # None: profiling.interval
    # NPU IDs the job runs on, for jobs whose PIDs npu-smi cannot show (another PID namespace):
    # their chips are marked npu_profiling_active during a capture
    npus: tuple[int, ...] = ()

    @field_validator("process_name", "cmdline")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as error:
                raise ValueError(f"not a valid regular expression: {error}") from None
        return value

    @model_validator(mode="after")
    def _complete(self) -> ProfilingTarget:
        if self.process_name is None and self.cmdline is None:
            raise ValueError("give process_name and/or cmdline to match the job's processes")
        if self.mode == "torch_npu_config" and self.config_dir is None:
            raise ValueError("mode torch_npu_config needs config_dir")
        return self


class CaptureTimeouts(_Model):
    start: Duration = 30.0
    stop: Duration = 120.0
    export: Duration = 600.0
    analysis: Duration = 600.0


class Msprof(_Model):
    command: tuple[str, ...] = Field(default=("msprof",), min_length=1)


class Ingest(_Model):
    paths: tuple[Path, ...] = ()
    interval: Duration = 60.0
    settle: Duration = 60.0


class Baseline(_Model):
    captures: int = Field(default=20, ge=1, le=1000)
    min_captures: int = Field(default=5, ge=1)
    # a regression held this long is the job's new pace: the slow captures become the baseline
    # (None: only `npumon baseline accept WORKLOAD` accepts it)
    accept_regression_after: Duration | None = 86400.0


class StepLog(_Model):
    """The job's own step times from its container log (daemon/profiling/steplog.py): the
    capture's measured inflation."""

    enabled: bool = False
    root: Path = Path("/var/log/pods")  # the kubelet's pod log directory (--pod-logs-dir)
    # the bytes read from the end of each container log after a capture
    tail_bytes: ByteSize = Field(default=ByteSize(1 << 20), ge=4096, le=64 << 20)


def _keep_raw(value: object) -> object:
    """true and false, as older configs say it, are "all" and "none"."""
    if value is True:
        return "all"
    if value is False:
        return "none"
    return value


# raw captures kept after analysis: none, the last one per workload, or all (within disk_quota)
KeepRaw = Annotated[Literal["none", "last", "all"], BeforeValidator(_keep_raw)]


class Profiling(_Model):
    enabled: bool = False
    interval: Duration = 600.0
    # msprof attach: the first capture's length; later ones last long enough for the
    # regression gate's steps at the job's own pace (the previous capture's), up to max_duration
    duration: Duration = 5.0
    max_duration: Duration = 300.0
    # torch_npu_config captures: enough steps for the regression gate's median (it needs
    # thresholds.regression_min_steps after warm-up and partial edge steps)
    steps: int = Field(default=50, ge=1, le=100)
    timeouts: CaptureTimeouts = CaptureTimeouts()
    discover: bool = True
    max_workloads: int = Field(default=16, ge=1, le=256)
    targets: tuple[ProfilingTarget, ...] = ()
    msprof: Msprof = Msprof()
    ingest: Ingest = Ingest()
    disk_quota: ByteSize = ByteSize(2 * 1024**3)
    keep_raw: KeepRaw = "last"
    top_n: int = Field(default=10, ge=1, le=100)
    thresholds: Thresholds = Thresholds()  # the diagnosis rules' own model, unchanged to the worker
    limits: AnalysisLimits = AnalysisLimits()  # table size caps and worker memory, to the worker
    baseline: Baseline = Baseline()
    step_log: StepLog = StepLog()

    @model_validator(mode="after")
    def _durations(self) -> Profiling:
        if self.max_duration < self.duration:
            raise ValueError(
                f"max_duration ({self.max_duration:g}s) is shorter than duration "
                f"({self.duration:g}s), the first capture's length"
            )
        return self

    def active(self) -> bool:
        """Captures are on, or ingest paths alone turn ingest on."""
        return self.enabled or bool(self.ingest.paths)


class Config(_Model):
    chips: Chips = Chips()
    npu_smi: NpuSmi = NpuSmi()
    hccn_tool: HccnTool = HccnTool()
    dcmi: Dcmi = Dcmi()
    throttle: Throttle = Throttle()
    web: Web = Web()
    textfile: Textfile = Textfile()
    node: Node = Node()
    state_directory: Path = Path("/var/lib/npumon")
    logging: Logging = Logging()
    profiling: Profiling = Profiling()
    collectors: Collectors = Collectors()
    faults: Faults = Faults()
    compat: Compat = Compat()
    kubernetes: Kubernetes = Kubernetes()


class ConfigError(Exception):
    """Every problem of one config file, each as ``dotted.path: message``."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(f"{source}: " + "; ".join(problems))


# Before 0.2.0 the chip settings were keys of npu_smi; a file that still writes them there loads
# as if it wrote them under chips (with a warning) until this release removes that.
ALIAS_REMOVED_IN = "0.3.0"
_CHIP_KEYS = frozenset(Chips.model_fields)


def _chips_under_npu_smi(data: Mapping[str, Any]) -> list[str]:
    """The chip settings (chips.*) a file writes under npu_smi, as an older config did."""
    section = data.get("npu_smi")
    return [str(k) for k in section if k in _CHIP_KEYS] if isinstance(section, Mapping) else []


def _deprecation(moved: list[str]) -> str:
    old = ", ".join(f"npu_smi.{key}" for key in moved)
    new = ", ".join(f"chips.{key}" for key in moved)
    return (
        f"{old}: deprecated, write {new} (npu_smi keeps only command); "
        f"the old keys are read until npumon {ALIAS_REMOVED_IN}"
    )


def log_deprecation(source: str, message: str) -> None:
    """How the daemon tells a deprecated key: a warning each time the file is loaded."""
    log.warning("event=config_deprecated file=%s message=%r", source, message)


def parse_config(
    data: Any,
    source: str = "<config>",
    lines: LineOf | None = None,
    deprecated: Callable[[str, str], None] = log_deprecation,
) -> Config:
    """Validate already-loaded YAML data (None means an empty file: all defaults); ``lines``
    tells the line of a key path in the file it came from. Chip settings under npu_smi are read
    as chips.* and told once to ``deprecated(source, message)``; problems name the key as
    written."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(
            source,
            [
                "(top level): expected a mapping (key: value lines), got "
                + config_messages.kind_of(data)
            ],
        )
    moved = _chips_under_npu_smi(data)
    if moved and "chips" in data:
        raise ConfigError(
            source,
            [
                f"{on_line(lines(('npu_smi', key)) if lines else None)}npu_smi.{key}: a chips "
                f"setting, and this file also has chips; move it to chips.{key}"
                for key in moved
            ],
        )
    if moved:
        npu_smi = data["npu_smi"]
        data = {
            **data,
            "chips": {key: npu_smi[key] for key in moved},
            "npu_smi": {k: v for k, v in npu_smi.items() if k not in _CHIP_KEYS},
        }

    def written(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
        """Where a key the problem names is in the file: npu_smi for a moved chip setting."""
        return ("npu_smi", *loc[1:]) if loc[:1] == ("chips",) and moved else loc

    try:
        config = Config.model_validate(data)
    except ValidationError as error:
        raise ConfigError(source, config_messages.problems(error, Config, lines, written)) from None
    if moved:
        deprecated(source, _deprecation(moved))
    return config


def load_config(path: Path, deprecated: Callable[[str, str], None] = log_deprecation) -> Config:
    """Read and validate one YAML file (within the yamlfile limits); ConfigError lists every
    problem."""
    try:
        document = load_yaml(path)
    except YamlFileError as error:
        raise ConfigError(str(path), [str(error)]) from None
    return parse_config(document.data, str(path), document.line, deprecated)
