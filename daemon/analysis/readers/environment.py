"""The environment variables torch_npu records with a profile, judged by msprof-analyze's rules.

torch_npu writes ``profiler_metadata.json`` beside ``profiler_info_N.json`` with
``{"ENV_VARIABLES": {"ASCEND_GLOBAL_LOG_LEVEL": "3", "ACLNN_CACHE_LIMIT": "", ...}}``: the
variables it knows, "" when unset. Only what is recorded is judged (older torch_npu versions
record fewer variables: those are unknown, not unset). Each rule is msprof-analyze's environment
variable check (advisor/analyzer/overall/environment_variable_checker.py and
rules/*/environment_variable_info.yaml) with its reason and fix; ``env_vars`` lists every
variable a rule flags.
"""

from __future__ import annotations

from collections.abc import Mapping

FILE = "profiler_metadata.json"
KEY = "ENV_VARIABLES"


def recorded(data: Mapping[str, object] | None) -> dict[str, str] | None:
    """The variables one unit's profiler_metadata.json (layout.metadata) records; None without
    the file or key."""
    env = data.get(KEY) if data else None
    if not isinstance(env, dict):
        return None
    return {str(k): v.strip() for k, v in env.items() if isinstance(v, str)}
