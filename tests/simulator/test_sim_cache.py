"""The validated-scenario cache: a hit skips pydantic and yaml; a bad entry is only a miss."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from npumon.simulator import loader, scenario
from npumon.simulator.model import Alarm, Hang, ScenarioError
from npumon.simulator.scenario import parse_scenario
from tests.helpers.wait import scaled

SCRIPT = str(Path(sys.executable).parent / "npumon-sim-npu-smi")
TEXT = """family: a3
period: 600
chip_loads: [{npu: 2, chip: 1, base_percent: 10}]
processes: [{npu: 1, chip: 1, pid: 42, hbm_mb: 100}]
events:
  - {kind: alarm, npu: 3, start: 5, end: 9, error_codes: [A1, B2]}
  - {kind: hang, argv: [info, -t, common], seconds: 2}
  - {kind: overheat, npu: 0, chip: 1}
  - {kind: idle, npu: 4}
  - {kind: disappear, npu: 5, start: 1}
  - {kind: dcmi_fail, code: -1, start: 100, end: 200}
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path / f"npumon-sim-{os.getuid()}"


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def test_hit_equals_a_fresh_validation_without_validating(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = parse_scenario(TEXT)  # validated directly, no cache
    assert loader.load_text(TEXT) == expected  # the miss
    assert len(_entries(cache)) == 1

    def no_validation(text: str, source: str = "") -> None:
        raise AssertionError("a cache hit must not validate")

    monkeypatch.setattr(scenario, "validate", no_validation)
    again = loader.load_text(TEXT)
    assert again == expected
    alarm, hang = again.events[0], again.events[1]
    assert isinstance(alarm, Alarm) and alarm.error_codes == ("A1", "B2")  # tuples, not lists
    assert isinstance(hang, Hang) and hang.argv == ("info", "-t", "common")


def test_key_follows_the_text(cache: Path) -> None:
    loader.load_text(TEXT)
    loader.load_text(TEXT + "# a comment changes the hash\n")
    assert len(_entries(cache)) == 2
    assert loader.cache_key(TEXT) != loader.cache_key(TEXT + " ")


@pytest.mark.parametrize(
    "garbage",
    ["not json {", "[]", '{"family": "910b"}', '{"family": 1, "events": [{"kind": "nope"}]}', ""],
)
def test_corrupt_entry_falls_back_to_validation(cache: Path, garbage: str) -> None:
    expected = loader.load_text(TEXT)
    (entry,) = _entries(cache)
    entry.write_text(garbage)
    assert loader.load_text(TEXT) == expected
    assert entry.read_text() != garbage  # rewritten with the validated scenario


def test_invalid_scenario_is_never_cached(cache: Path) -> None:
    for _ in range(2):
        with pytest.raises(ScenarioError, match="bogus"):
            loader.load_text("family: 910b\nbogus: 1\n")
    assert _entries(cache) == []


def test_folder_others_can_write_is_not_used(cache: Path) -> None:
    cache.mkdir()
    cache.chmod(0o777)
    assert loader.cache_dir() is None
    assert loader.load_text(TEXT).family == "a3"
    assert _entries(cache) == []


@pytest.mark.integration
def test_console_script_hit_imports_neither_pydantic_nor_yaml(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPUMON_SIM_")}
    argv = [sys.executable, "-X", "importtime", SCRIPT, "--scenario", "dcmi-fail", "info"]
    runs = [
        subprocess.run(
            argv,
            env={**env, "TMPDIR": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=scaled(30),
            check=False,
        )
        for _ in range(2)
    ]
    assert [r.stdout for r in runs] == ["dcmi module initialize failed. ret is -8005\n"] * 2
    imported = [{line.split("|")[-1].strip() for line in r.stderr.splitlines()} for r in runs]
    assert {"pydantic", "yaml"} <= imported[0]  # the miss validated
    assert not {"pydantic", "yaml", "dataclasses"} & imported[1]
