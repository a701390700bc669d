"""Find, validate (lazily) and cache scenarios; the cached path imports neither pydantic nor yaml.

Every npu-smi call the daemon makes is a new simulator process (~120 a minute per node), so the
validated scenario is cached as JSON keyed by a hash of the scenario text and of the code that
gives it meaning; only a cache miss imports the pydantic validation in scenario.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
from typing import Any

from npumon.simulator.model import Scenario, ScenarioError, scenario_from_dict

SCENARIO_ENV = "NPUMON_SIM_SCENARIO"
_HERE = os.path.dirname(os.path.abspath(__file__))
_BUILTIN = os.path.join(_HERE, "scenarios")
# A change to any of these can change what a scenario text validates into.
_CODE = ("model.py", "scenario.py", "families.py")


def builtin_names() -> list[str]:
    return sorted(name[:-5] for name in os.listdir(_BUILTIN) if name.endswith(".yaml"))


def read_scenario_text(ref: str) -> tuple[str, str]:
    """(source name for messages, YAML text) of a scenario path or built-in name."""
    if ref.endswith((".yaml", ".yml")) or os.sep in ref:
        path = ref
    else:
        path = os.path.join(_BUILTIN, f"{ref}.yaml")
        if not os.path.isfile(path):
            known = ", ".join(builtin_names())
            raise ScenarioError(f"unknown scenario {ref!r}; built-in: {known}")
    try:
        with open(path, encoding="utf-8") as file:
            return ref, file.read()
    except OSError as exc:
        raise ScenarioError(f"cannot read scenario {ref}: {exc.strerror}") from exc


def cache_dir() -> str | None:
    """Our private cache folder under the temp dir; None when it is not safely ours."""
    folder = os.path.join(tempfile.gettempdir(), f"npumon-sim-{os.getuid()}")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError:
        return None
    # the temp dir is shared: never trust a folder another user made or can write into
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        return None
    return folder


def cache_key(text: str) -> str:
    digest = hashlib.sha256()
    for name in _CODE:
        with contextlib.suppress(OSError), open(os.path.join(_HERE, name), "rb") as code:
            digest.update(code.read())
    digest.update(b"\0")
    digest.update(text.encode("utf-8"))
    return digest.hexdigest()[:32]


def _read_cache(path: str) -> Scenario | None:
    try:
        with open(path, encoding="utf-8") as file:
            data: Any = json.load(file)
        return scenario_from_dict(data)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # no entry yet, or a corrupt one: validate again


def _write_cache(path: str, data: dict[str, Any]) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    try:  # written aside then renamed: concurrent readers see the old entry or the new one
        with open(tmp, "w", encoding="utf-8") as file:
            json.dump(data, file)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):  # a full or read-only temp dir only costs speed
            os.unlink(tmp)


def load_text(text: str, source: str = "<scenario>") -> Scenario:
    """The scenario of a YAML text, from the cache when this text was validated before."""
    folder = cache_dir()
    path = os.path.join(folder, f"{cache_key(text)}.json") if folder else None
    cached = _read_cache(path) if path else None
    if cached is not None:
        return cached
    from npumon.simulator.scenario import validate  # pydantic + yaml: only on a miss

    data = validate(text, source)
    if path:
        _write_cache(path, data)
    return scenario_from_dict(data)


def load_scenario(ref: str | None = None) -> Scenario:
    """Load a scenario by path or built-in name (``910b-8``); None means $NPUMON_SIM_SCENARIO."""
    ref = ref or os.environ.get(SCENARIO_ENV)
    if not ref:
        raise ScenarioError(f"no scenario: pass --scenario or set {SCENARIO_ENV}")
    source, text = read_scenario_text(ref)
    return load_text(text, source)
