"""The runner: timeouts kill the whole process group; missing programs are reported, not raised."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest

from npumon.daemon.runner import CommandResult, ProcessGroups, resolve_command, run_command
from tests.helpers.wait import scaled, wait_for


@pytest.mark.integration
def test_output_and_exit_code() -> None:
    result = run_command(
        [
            sys.executable,
            "-c",
            "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)",
        ],
        10,
    )
    assert (result.stdout, result.stderr, result.exit_code) == ("out\n", "err\n", 3)
    assert not result.timed_out and not result.not_found


@pytest.mark.integration
def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    script = (
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r} + '.tmp', 'w').write(str(child.pid))\n"
        f"os.replace({str(pidfile)!r} + '.tmp', {str(pidfile)!r})\n"
        "time.sleep(60)\n"
    )
    result = run_command([sys.executable, "-c", script], 1.0)  # real time: a real process group
    assert result.timed_out and result.exit_code is None
    grandchild = int(pidfile.read_text())
    # SIGKILL to the group is delivered asynchronously: give the kernel a moment to finish the
    # grandchild (it would sleep for 60 s if it had escaped the kill)
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(grandchild).wait(timeout=scaled(10))
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


@pytest.mark.integration
def test_stdin_is_fed_in_full_while_stdout_is_read() -> None:
    data = "x" * 1_000_000 + "\n"  # far beyond a pipe buffer both ways
    echo = "import sys; sys.stdout.write(sys.stdin.read())"
    result = run_command([sys.executable, "-c", echo], 30, stdin=data)
    assert (result.exit_code, len(result.stdout)) == (0, len(data))


@pytest.mark.integration
def test_output_beyond_the_cap_is_a_failure_of_its_own() -> None:
    writer = [sys.executable, "-c", "import sys; sys.stdout.write('y' * 300_000)"]
    capped = run_command(writer, 30, max_output_bytes=100_000)
    assert capped.output_too_large and capped.exit_code is None and capped.stdout == ""
    assert not capped.timed_out
    whole = run_command(writer, 30, max_output_bytes=400_000)
    assert not whole.output_too_large and len(whole.stdout) == 300_000


@pytest.mark.integration
def test_50_mb_of_output_does_not_grow_the_daemon() -> None:
    """The reviewer's measure: 50 MB of npu-smi output took RSS from 44 to 610 MB."""
    script = (
        "import json, resource, sys\n"
        "from npumon.daemon.runner import run_command\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "writer = [sys.executable, '-c', 'import sys\\nfor _ in range(50): "
        'sys.stdout.write("z" * 1_000_000)\']\n'
        "result = run_command(writer, 60)\n"
        "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(json.dumps({'grew_kib': after - before,\n"
        "                  'too_large': getattr(result, 'output_too_large', None)}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=scaled(120),
        check=True,
    )
    measured = json.loads(done.stdout)
    assert measured["grew_kib"] < 64 * 1024, measured  # the default cap is 16 MiB
    assert measured["too_large"] is True


@pytest.mark.integration
def test_the_deadline_holds_when_a_helper_outside_the_group_keeps_the_pipe_open(
    tmp_path: Path,
) -> None:
    """npu-smi prints, exits 0, and leaves a helper in its own session holding stdout."""
    pidfile = tmp_path / "helper.pid"
    script = (
        "import subprocess, sys\n"
        "helper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'],\n"
        "                          start_new_session=True)\n"
        f"open({str(pidfile)!r} + '.tmp', 'w').write(str(helper.pid))\n"
        f"os.replace({str(pidfile)!r} + '.tmp', {str(pidfile)!r})\n"
        "print('| a table |', flush=True)\n"
    )
    script = "import os\n" + script
    helper_ran_on = False
    try:
        result = run_command([sys.executable, "-c", script], 1.0)
        # the helper holds the pipe for 600 s: still running means the deadline ended the call
        helper_ran_on = psutil.pid_exists(int(pidfile.read_text()))
    finally:
        with contextlib.suppress(ProcessLookupError, FileNotFoundError, ValueError):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)  # the helper we had started
    # not a good poll: its output is not known to be whole until the pipe closes
    assert result.timed_out and result.exit_code is None
    assert helper_ran_on, "run_command waited for the helper to close the pipe"


def _sleeper(pidfile: Path) -> list[str]:
    """A command that starts a grandchild in its own process group and sleeps."""
    script = (
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r} + '.tmp', 'w').write(str(child.pid))\n"
        f"os.replace({str(pidfile)!r} + '.tmp', {str(pidfile)!r})\n"
        "time.sleep(60)\n"
    )
    return [sys.executable, "-c", script]


def _dead(pid: int) -> bool:
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(pid).wait(timeout=scaled(10))
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"


@pytest.mark.integration
def test_terminate_all_kills_every_command_in_flight_and_refuses_new_ones(
    tmp_path: Path,
) -> None:
    groups = ProcessGroups()
    results: list[CommandResult] = []
    pidfiles = [tmp_path / f"grandchild-{i}.pid" for i in range(3)]
    threads = [
        threading.Thread(
            target=lambda p=p: results.append(run_command(_sleeper(p), 60, groups=groups))
        )
        for p in pidfiles
    ]
    for thread in threads:
        thread.start()
    wait_for(
        lambda: len(groups.live()) == 3 and all(p.exists() for p in pidfiles),
        20,
        "three commands in flight",
    )
    children = set(groups.live())
    assert groups.terminate_all() == 3
    for thread in threads:
        thread.join(timeout=scaled(5))
    assert not any(t.is_alive() for t in threads)
    assert len(results) == 3 and all(r.cancelled and r.exit_code is None for r in results)
    assert all(_dead(pid) for pid in children)
    assert all(_dead(int(p.read_text())) for p in pidfiles)  # grandchildren too
    assert groups.live() == frozenset()
    late = run_command([sys.executable, "-c", "import time; time.sleep(60)"], 60, groups=groups)
    assert late.cancelled and late.exit_code is None  # refused: never started
