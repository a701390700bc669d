"""Processes of the live fleet test (daemons, simulated jobs, Prometheus), every one reaped."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import psutil

from tests.helpers.processes import PROMETHEUS_LISTENING, reported_port, stop
from tests.helpers.wait import scaled

# Every process the test starts carries this variable, and so does everything they start
# (msprof, the analysis worker, npu-smi): the final sweep finds them even after reparenting.
MARKER = "NPUMON_FLEET_TEST_RUN"


class Processes:
    """Starts processes in their own sessions with a marked environment; ``close`` ends them all."""

    def __init__(self, run_id: str, env: dict[str, str]) -> None:
        self.run_id = run_id
        self.env = {**env, MARKER: run_id}
        self.running: list[subprocess.Popen[bytes]] = []

    def start(
        self, argv: list[str], log: Path, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        with log.open("ab") as out:
            process = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**self.env, **(env or {})},
                cwd=log.parent,
                start_new_session=True,
            )
        self.running.append(process)
        return process

    def npumon(self, bin_dir: Path, config: Path, log: Path) -> int:
        """`npumon run` on ``config``, listening on a loopback port it picks; returns the port."""
        argv = [str(bin_dir / "npumon"), "run", "--config", str(config)]
        node = self.start([*argv, "--web.listen-address", "127.0.0.1:0"], log)
        return reported_port(log, process=node)

    def prometheus(self, binary: str, folder: Path) -> str:
        """A Prometheus on ``folder``/prometheus.yml (its TSDB beside it); returns its URL."""
        log = folder / "prometheus.log"
        process = self.start(
            [
                binary,
                f"--config.file={folder / 'prometheus.yml'}",
                f"--storage.tsdb.path={folder / 'tsdb'}",
                "--web.listen-address=127.0.0.1:0",
            ],
            log,
        )
        return f"http://127.0.0.1:{reported_port(log, PROMETHEUS_LISTENING, process)}"

    def stop(self, *processes: subprocess.Popen[bytes]) -> None:
        """SIGTERM, then SIGKILL after 10 s; all of them at once, so the waits overlap."""
        stop(*processes)
        for process in processes:
            if process in self.running:
                self.running.remove(process)

    def close(self) -> list[str]:
        """Stop everything started, then kill any marked straggler; returns those killed."""
        self.stop(*self.running)
        return self.sweep()

    def marked(self) -> list[psutil.Process]:
        found = []
        for process in psutil.process_iter():
            try:
                if process.environ().get(MARKER) == self.run_id:
                    found.append(process)
            except (psutil.Error, OSError):
                continue
        return found

    def sweep(self) -> list[str]:
        stragglers = [p for p in self.marked() if p.pid != os.getpid()]
        killed = []
        for process in stragglers:
            try:
                killed.append(" ".join(process.cmdline()))
                process.kill()
            except psutil.Error:
                continue
        psutil.wait_procs(stragglers, timeout=scaled(10))
        return killed
