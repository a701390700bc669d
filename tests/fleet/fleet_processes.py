"""Processes of the live fleet test (daemons, simulated jobs, Prometheus), every one reaped."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import psutil

from tests.helpers.http import get
from tests.helpers.processes import PROMETHEUS_LISTENING, listening_port, reported_port, stop
from tests.helpers.wait import scaled, wait_for

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

    def prometheus_agent(self, binary: str, folder: Path) -> str:
        """Prometheus in agent mode on ``folder``/prometheus.yml (scrape and remote write only,
        its WAL beside it); returns its URL."""
        log = folder / "prometheus.log"
        process = self.start(
            [
                binary,
                "--enable-feature=agent",
                f"--config.file={folder / 'prometheus.yml'}",
                f"--storage.agent.path={folder / 'wal'}",
                "--web.listen-address=127.0.0.1:0",
            ],
            log,
        )
        return f"http://127.0.0.1:{reported_port(log, PROMETHEUS_LISTENING, process)}"

    def listening(self, argv: list[str], log: Path, health: str) -> str:
        """Starts a server that binds 127.0.0.1:0 without logging the port; returns its URL
        once ``health`` (a path) answers."""
        process = self.start(argv, log)
        ports: list[int] = []

        def bound() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"{argv[0]} exited ({process.returncode}); see {log}")
            port = listening_port(process.pid)
            if port:
                ports.append(port)
            return bool(ports)

        wait_for(bound, 60, f"{argv[0]} to listen", poll=0.1)
        url = f"http://127.0.0.1:{ports[0]}"
        wait_for(lambda: bool(get(f"{url}{health}")), 60, f"{url}{health}", tolerate=(OSError,))
        return url

    def victoriametrics(self, folder: Path, scrape_config: Path) -> str:
        """A single-node victoria-metrics scraping what ``scrape_config`` (Prometheus' format)
        lists, its data in ``folder``; returns its URL."""
        return self.listening(
            [
                "victoria-metrics",
                f"-storageDataPath={folder / 'vmdata'}",
                "-httpListenAddr=127.0.0.1:0",
                f"-promscrape.config={scrape_config}",
                # answer up to the query time, as Prometheus does (default: 30 s before now)
                "-search.latencyOffset=0s",
                "-search.disableCache",
            ],
            folder / "victoria-metrics.log",
            "/health",
        )

    def vmalert(
        self, folder: Path, rules: Path, url: str, interval: str, query_step: str, notifier: str
    ) -> str:
        """vmalert evaluating ``rules`` against the VictoriaMetrics at ``url`` every
        ``interval``, writing recording rules and ALERTS back to it, sending firing alerts to
        ``notifier`` (an Alertmanager's URL; it must name one); returns its URL."""
        return self.listening(
            [
                "vmalert",
                f"-rule={rules}",
                f"-datasource.url={url}",
                f"-remoteWrite.url={url}",
                f"-evaluationInterval={interval}",
                f"-notifier.url={notifier}",
                # the `step` of each query (VictoriaMetrics' lookback for a bare selector,
                # default 5 minutes): a few of the fleet's scrape intervals
                f"-datasource.queryStep={query_step}",
                "-httpListenAddr=127.0.0.1:0",
            ],
            folder / "vmalert.log",
            "/health",
        )

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
