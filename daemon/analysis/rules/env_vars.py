"""env_vars: the environment variables torch_npu records with a profile, judged by
msprof-analyze's rules.

torch_npu writes ``profiler_metadata.json`` beside ``profiler_info_N.json`` with
``{"ENV_VARIABLES": {"ASCEND_GLOBAL_LOG_LEVEL": "3", "ACLNN_CACHE_LIMIT": "", ...}}``: the
variables it knows, "" when unset. Only what is recorded is judged (older torch_npu versions
record fewer variables: those are unknown, not unset). Each rule is msprof-analyze's environment
variable check (advisor/analyzer/overall/environment_variable_checker.py and
rules/*/environment_variable_info.yaml) with its reason and fix; ``env_vars`` lists every
variable a rule flags.

Two of msprof-analyze's rules flag the defaults, so they read 1 on nearly every job: the host
caches (ACLNN_CACHE_LIMIT, HOST_CACHE_CAPACITY) save host time, so they are judged only when the
host holds the device back (free over ``free_ratio`` of the step, host_bound's measure); and
PYTORCH_NPU_ALLOC_CONF's expandable segments fight device-memory fragmentation, which a profile
does not record, so it is not judged."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from npumon.daemon.analysis.evidence import Evidence
from npumon.daemon.model.profile import Bottleneck, Thresholds

KIND = "env_vars"
ORDER = 170
ADVICE = (
    "Environment variables the profiler recorded differ from the recommended "
    "settings (msprof-analyze's environment check); each is named with its reason. Set them in "
    "the job's launch script and capture again."
)


def _int(value: str) -> int | None:
    try:
        return int(value.strip())
    except ValueError:
        return None


def _set(value: str, t: Thresholds) -> bool:
    return value != ""


def _log_level(value: str, t: Thresholds) -> bool:
    level = _int(value)
    return level is not None and level != 3


def _cache_limit(value: str, t: Thresholds) -> bool:
    limit = _int(value)
    return value == "" or (limit is not None and limit < t.aclnn_cache_limit_min)


def _host_cache(value: str, t: Thresholds) -> bool:
    return value == "" or _int(value) == 0


def _blocking(value: str, t: Thresholds) -> bool:
    return _int(value) == 1


@dataclass(frozen=True, slots=True)
class EnvRule:
    name: str
    flagged: Callable[[str, Thresholds], bool]  # the recorded value ("" unset) is a finding
    reason: str
    fix: str
    host_bound_only: bool = False  # it saves host time: judged only when the host is the limit


RULES = (
    EnvRule(
        "ASCEND_GLOBAL_LOG_LEVEL",
        _log_level,
        "log level below error (0 debug, 1 info, 2 warning) slows training",
        "export ASCEND_GLOBAL_LOG_LEVEL=3",
    ),
    EnvRule(
        "HCCL_RDMA_TC",
        _set,
        "overrides the DSCP of RoCE packets (default 132, DSCP 33): it must match the "
        "network's QoS configuration",
        "check it against the switches' QoS (CANN environment variable reference), else unset",
    ),
    EnvRule(
        "HCCL_RDMA_SL",
        _set,
        "overrides the RDMA NIC priority (default 4): it must equal the NIC's PFC priority or "
        "performance drops",
        "check it against the NIC's PFC priority, else unset",
    ),
    EnvRule(
        "ACLNN_CACHE_LIMIT",
        _cache_limit,
        "the aclnn operator cache keeps its default size or less (rule: unset or under "
        "aclnn_cache_limit_min); a larger cache saves host time when aclnn launches make the "
        "host the bottleneck",
        "export ACLNN_CACHE_LIMIT=100000",
        host_bound_only=True,
    ),
    EnvRule(
        "HOST_CACHE_CAPACITY",
        _host_cache,
        "the dynamic-shape execution cache is off (0, the default): caching the frequent "
        "input shapes saves host time for some host memory",
        "export HOST_CACHE_CAPACITY=20",
        host_bound_only=True,
    ),
    EnvRule(
        "ASCEND_LAUNCH_BLOCKING",
        _blocking,
        "operators run synchronously (a debugging mode): the host waits for every operator",
        "export ASCEND_LAUNCH_BLOCKING=0",
    ),
    EnvRule(
        "HCCL_ALGO",
        _set,
        "pins the cross-server collective algorithm instead of letting HCCL choose by chip, "
        "node count and data size",
        "unset HCCL_ALGO",
    ),
)


def _judge(
    units: Sequence[tuple[str, Mapping[str, str] | None]], t: Thresholds, host_bound: bool
) -> tuple[Bottleneck, ...]:
    """One env_vars finding naming each flagged variable and value (with the ranks, when they
    differ); () when nothing was recorded or nothing is flagged."""
    known = [(name, env) for name, env in units if env is not None]
    rules = [r for r in RULES if host_bound or not r.host_bound_only]
    flagged: dict[tuple[str, str], list[str]] = {}
    for unit, env in known:
        for rule in rules:
            if rule.name in env and rule.flagged(env[rule.name], t):
                flagged.setdefault((rule.name, env[rule.name]), []).append(unit)
    if not flagged:
        return ()
    by_name = {r.name: r for r in RULES}
    items, fixes = [], []
    for (name, value), where in flagged.items():
        ranks = "" if len(where) == len(known) else f" on {', '.join(where)}"
        shown = f"{name}={value}" if value else f"{name} unset"
        items.append(f"{shown}{ranks}: {by_name[name].reason}")
        fix = by_name[name].fix
        if fix not in fixes:
            fixes.append(fix)
    names = {name for name, _ in flagged}
    return (
        Bottleneck(
            KIND,
            f"{len(names)} environment variable(s) recorded with the profile "
            "(profiler_metadata.json or a db export's META_DATA) against msprof-analyze's "
            "recommendations: " + "; ".join(items),
            ADVICE + " Here: " + "; ".join(fixes) + ".",
            float(len(names)),
            0.0,
        ),
    )


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    free = e.phase_ratios.get("free")
    return _judge(e.env, t, free is not None and free > t.free_ratio)
