"""The runner: timeouts kill the whole process group; missing programs are reported, not raised."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import psutil
import pytest

from npumon.daemon.runner import resolve_command, run_command


@pytest.mark.integration
def test_output_and_exit_code() -> None:
    result = run_command([sys.executable, "-c", "import sys; print('out'); "
                          "print('err', file=sys.stderr); sys.exit(3)"], 10)
    assert (result.stdout, result.stderr, result.exit_code) == ("out\n", "err\n", 3)
    assert not result.timed_out and not result.not_found


@pytest.mark.integration
def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
    )
    result = run_command([sys.executable, "-c", script], 1.0)  # real time: a real process group
    assert result.timed_out and result.exit_code is None
    grandchild = int(pidfile.read_text())
    # SIGKILL to the group is delivered asynchronously: give the kernel a moment to finish the
    # grandchild (it would sleep for 60 s if it had escaped the kill)
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(grandchild).wait(timeout=10)
    assert not psutil.pid_exists(grandchild) or psutil.Process(grandchild).status() == "zombie"


def test_missing_program_is_a_result_not_an_exception() -> None:
    result = run_command(["/nonexistent/npu-smi", "info"], 5)
    assert result.not_found and result.exit_code is None
    assert "No such file" in result.stderr


def test_bare_names_resolve_beside_our_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = tmp_path / "npumon-test-only-tool"
    tool.write_text("#!/bin/sh\necho hi\n")
    tool.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    assert resolve_command([tool.name, "-x"]) == (str(tool), "-x")
    assert resolve_command(["/bin/true"]) == ("/bin/true",)
    assert resolve_command(["no-such-tool-anywhere"]) == ("no-such-tool-anywhere",)
