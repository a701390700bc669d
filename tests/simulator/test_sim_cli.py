"""The `npumon-sim-npu-smi` console script, as the daemon runs it (a subprocess, marked
integration), and its main() in process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from npumon.simulator import cli
from tests.helpers.wait import scaled

SCRIPT = str(Path(sys.executable).parent / "npumon-sim-npu-smi")


def _run(
    *args: str, env: dict[str, str] | None = None, timeout: float = 30.0
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("NPUMON_SIM_")}
    return subprocess.run(
        [SCRIPT, *args],
        capture_output=True,
        text=True,
        timeout=scaled(timeout),
        env={**base, **(env or {})},
        check=False,
    )


@pytest.mark.integration
def test_console_script_prints_the_table() -> None:
    proc = _run("--scenario", "910b-8", "--time", "100", "info")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1].startswith("| npu-smi 25.2.2 ")
    assert sum(1 for line in lines if "910B3" in line) == 8


@pytest.mark.integration
def test_environment_gives_scenario_and_time() -> None:
    env = {"NPUMON_SIM_SCENARIO": "310p-duo", "NPUMON_SIM_TIME": "350"}
    proc = _run("info", "-t", "common", "-i", "32768", env=env)
    assert proc.stdout.startswith("Invalid card id.\n")  # NPU 32768 is gone at t=350
    assert proc.returncode == 215
    earlier = {**env, "NPUMON_SIM_TIME": "10"}
    assert _run("info", "-t", "common", "-i", "32768", env=earlier).returncode == 0


@pytest.mark.integration
def test_dcmi_failure_exit_status() -> None:
    proc = _run("--scenario", "dcmi-fail", "info")
    assert proc.stdout == "dcmi module initialize failed. ret is -8005\n"
    assert proc.returncode == 187


@pytest.mark.integration
def test_bad_scenario_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("family: 910b\nbogus: 1\n")
    proc = _run("--scenario", str(bad), "info")
    assert proc.returncode == 2
    assert "bogus" in proc.stderr and str(bad) in proc.stderr


@pytest.mark.integration
def test_hang_really_blocks_the_process(tmp_path: Path) -> None:
    scenario = tmp_path / "hang.yaml"
    scenario.write_text("family: 910b\nevents:\n  - {kind: hang, argv: [info], seconds: 60}\n")
    with pytest.raises(subprocess.TimeoutExpired):  # the hang is 60 s
        _run("--scenario", str(scenario), "info", timeout=1.0)
    # (the daemon's own kill-on-timeout is tests/daemon/test_runner.py's)


def test_main_sleeps_then_answers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    slept: list[float] = []
    monkeypatch.setattr("time.sleep", slept.append)
    code = cli.main(["--scenario", "hang", "--time", "5", "info", "-t", "common", "-i", "0"])
    assert slept == [600.0]
    assert code == 0
    assert "Aicore curFreq(MHZ)" in capsys.readouterr().out
    assert cli.main(["--scenario", "hang", "--time", "5", "info", "-m"]) == 0
    assert slept == [600.0]  # only the matching command hangs
