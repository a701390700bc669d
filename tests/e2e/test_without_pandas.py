"""The default image has no pandas or numpy (they are the npumon[profiling] extra, Dockerfile
VARIANT): `npumon run` without them polls, serves its metrics and stops cleanly, and never
tries to import them (only the profiling analysis worker, a child process, does)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.http import get
from tests.helpers.processes import reported_port, stop
from tests.helpers.wait import scaled, wait_for
from tests.support import fake_npu_smi

pytestmark = pytest.mark.integration

HEAVY = ("pandas", "numpy")
# The interpreter as the default image has it: pandas and numpy cannot be imported (a None in
# sys.modules makes `import` raise ImportError), and every attempt is written to stderr.
WITHOUT_HEAVY = (
    "import sys\n"
    "class Absent:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    f"        if name.split('.')[0] in {HEAVY!r}:\n"
    "            print(f'npumon-test: import of {name} attempted', file=sys.stderr, flush=True)\n"
    "            raise ModuleNotFoundError(name)\n"
    "        return None\n"
    "sys.meta_path.insert(0, Absent())\n"
    f"for name in {HEAVY!r}:\n"
    "    sys.modules.pop(name, None)\n"
)
CLI = "from npumon.daemon.cli import main\nsys.exit(main())\n"


def _run(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    """``npumon run`` on a loopback port of its own choosing, its output in ``log``."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [*argv, "--web.listen-address", "127.0.0.1:0"],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def test_npumon_run_without_pandas_or_numpy_serves_and_never_imports_them(
    tmp_path: Path,
) -> None:
    config, log = tmp_path / "npumon.yaml", tmp_path / "npumon.log"
    config.write_text(
        yaml.safe_dump(
            {
                "npu_smi": {"command": fake_npu_smi("910b4-1_25.2.2")},
                "state_directory": str(tmp_path),
            }
        )
    )
    code = WITHOUT_HEAVY + CLI
    argv = [sys.executable, "-c", code, "run", "--config", str(config)]
    process = _run(argv, log)
    try:
        port = reported_port(log, process=process)
        metrics: list[str] = []

        def chips_served() -> bool:
            metrics[:] = [get(f"http://127.0.0.1:{port}/metrics")]
            return "npu_chip_info{" in metrics[0]

        wait_for(chips_served, 30, "npu_chip_info on /metrics", tolerate=(OSError,))
    finally:
        stop(process)
    assert process.returncode == 0, log.read_text()[-2000:]
    assert "import of" not in log.read_text(), log.read_text()[-2000:]


def test_profiling_on_without_pandas_is_off_said_once_and_shown(tmp_path: Path) -> None:
    """Profiling asked for where the analysis cannot run: no capture is taken to fail, the log
    says what to install once (a reload does not repeat it), `npumon_source_*{source="profiling"}`
    shows why, and `check-config` warns."""
    config, log = tmp_path / "npumon.yaml", tmp_path / "npumon.log"
    config.write_text(
        yaml.safe_dump(
            {
                "npu_smi": {"command": fake_npu_smi("910b4-1_25.2.2")},
                "state_directory": str(tmp_path / "state"),
                "profiling": {"enabled": True},
            }
        )
    )
    check = subprocess.run(
        [sys.executable, "-c", WITHOUT_HEAVY + CLI, "check-config", str(config)],
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert check.returncode == 0, check.stderr
    assert "warning: profiling is on but pandas and numpy not installed" in check.stderr
    assert "npumon[profiling]" in check.stderr and "-profiling image" in check.stderr
    argv = [sys.executable, "-c", WITHOUT_HEAVY + CLI, "run", "--config", str(config)]
    process = _run(argv, log)
    try:
        port = reported_port(log, process=process)
        metrics: list[str] = []

        def profiling_shown() -> bool:
            metrics[:] = [get(f"http://127.0.0.1:{port}/metrics")]
            shown = 'npumon_source_up{source="profiling"} 0' in metrics[0]
            return shown and "npu_chip_info{" in metrics[0]  # the chips are served all the same

        wait_for(profiling_shown, 30, "chips and profiling down on /metrics", tolerate=(OSError,))
        reloads = log.read_text().count("event=reloaded")
        process.send_signal(signal.SIGHUP)
        wait_for(
            lambda: log.read_text().count("event=reloaded") > reloads,
            30,
            "the reload to be logged",
        )
        metrics[:] = [get(f"http://127.0.0.1:{port}/metrics")]
    finally:
        stop(process)
    text = log.read_text()
    assert process.returncode == 0, text[-2000:]
    assert text.count("event=profiling_off reason=pandas_missing") == 1, text[-2000:]
    assert "npumon[profiling]" in text
    assert "analysis exited" not in text and "ModuleNotFoundError" not in text, text[-2000:]
    assert (
        'npumon_source_failures_total{reason="pandas_missing",source="profiling"} 1' in metrics[0]
        or 'npumon_source_failures_total{source="profiling",reason="pandas_missing"} 1'
        in metrics[0]
    ), metrics[0]
