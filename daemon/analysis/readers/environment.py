"""The environment variables torch_npu records with a profile
(``profiler_metadata.json``'s ``ENV_VARIABLES``, "" when unset), judged by rules/env_vars.py."""

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
