"""The default image has no pandas or numpy (they are the npumon[profiling] extra, Dockerfile
VARIANT): `npumon run` without them polls, serves its metrics and stops cleanly, and never
tries to import them (only the profiling analysis worker, a child process, does)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.http import get
from tests.helpers.processes import reported_port, stop
from tests.helpers.wait import wait_for
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
    code = WITHOUT_HEAVY + "from npumon.daemon.cli import main\nsys.exit(main())\n"
    argv = [sys.executable, "-c", code, "run", "--config", str(config)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*argv, "--web.listen-address", "127.0.0.1:0"],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
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
