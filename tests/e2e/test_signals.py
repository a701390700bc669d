"""A real `npumon run`: SIGHUP reloads (a bad config is refused), SIGTERM exits from any state."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import yaml

from tests.helpers.exposition import key, samples
from tests.helpers.http import get
from tests.helpers.processes import NPUMON, reported_port, start_npumon, stop
from tests.helpers.wait import scaled, wait_for
from tests.support import fake_npu_smi

pytestmark = pytest.mark.integration  # a real daemon, real signals, real children


NODE = "910b4-1_25.2.2"


def write_config(path: Path, **extra: object) -> None:
    data = {
        "npu_smi": {"command": fake_npu_smi(NODE)},
        "state_directory": str(path.parent),
        **extra,
    }
    path.write_text(yaml.safe_dump(data))


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path, Path]]:
    config, log = tmp_path / "npumon.yaml", tmp_path / "npumon.log"
    write_config(config)
    process = start_npumon(config, log)
    try:
        yield process, config, log
    finally:
        stop(process)


def scrape(port: int) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return samples(get(f"http://127.0.0.1:{port}/metrics"))


def test_sighup_reloads_and_a_bad_config_keeps_the_running_one(
    daemon: tuple[subprocess.Popen[bytes], Path, Path],
) -> None:
    process, config, log = daemon
    port = reported_port(log, process=process)
    wait_for(
        lambda: (
            key(
                "npu_process_hbm_used_bytes",
                npu="0",
                chip="0",
                pid="19334",
                process_name="VLLMWorker_TP",
            )
            in scrape(port)
        ),
        30,
        "a first poll",
    )
    write_config(config, collectors={"disabled": ["processes"]})
    process.send_signal(signal.SIGHUP)
    wait_for(
        lambda: not any(n == "npu_process_hbm_used_bytes" for n, _ in scrape(port)),
        30,
        "the reloaded config (processes collector off)",
    )
    assert scrape(port)[key("npumon_config_last_reload_successful")] == 1.0
    config.write_text("chips:\n  timeout: soon\n")
    process.send_signal(signal.SIGHUP)
    wait_for(
        lambda: scrape(port)[key("npumon_config_last_reload_successful")] == 0.0,
        30,
        "the refused reload",
    )
    assert key("npu_power_watts", npu="1", chip="0") in scrape(port)  # still serving
    assert "chips.timeout" in log.read_text() and process.poll() is None


def _hung_children(marker: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if marker in " ".join(p.info["cmdline"] or ()):
            found.append(p)
    return found


def test_sigterm_during_a_hung_npu_smi_exits_promptly_and_leaves_no_child(
    tmp_path: Path,
) -> None:
    config, log = tmp_path / "npumon.yaml", tmp_path / "npumon.log"
    marker = f"--hang-seconds={3600 + (hash(str(tmp_path)) % 1000)}"  # names our children only
    (tmp_path / "profiles").mkdir()
    data = {
        "npu_smi": {"command": fake_npu_smi(NODE, "--hang-on=info", marker)},
        "chips": {"timeout": "3600s"},
        "profiling": {"ingest": {"paths": [str(tmp_path / "profiles")]}},
        "state_directory": str(tmp_path),
    }
    config.write_text(yaml.safe_dump(data))
    process = start_npumon(config, log)
    try:
        reported_port(log, process=process)
        wait_for(lambda: bool(_hung_children(marker)), 30, "npu-smi hanging")
        state = tmp_path / "profiling" / "profiling-state.json"
        assert not state.exists()  # nothing captured or ingested yet: written at the stop
        logged_before = len(log.read_text())
        process.send_signal(signal.SIGTERM)
        # the call would hang for an hour: an exit at all is the shutdown not waiting for it
        # (the target is 5 s, systemd and Kubernetes allow 30; bench/ has the figure)
        process.wait(timeout=scaled(30))
        assert process.returncode == 0
        wait_for(lambda: not _hung_children(marker), 5, "npu-smi children gone")
        assert state.is_file()  # the profiling state saved on the way out
        # the poll shutdown cut short is no source failure: a clean stop logs no warning
        shutdown = log.read_text()[logged_before:]
        assert "level=warning" not in shutdown and "level=error" not in shutdown, shutdown
    finally:
        stop(process)
        for child in _hung_children(marker):
            child.kill()


def test_a_taken_port_is_one_clear_line_and_exit_1(tmp_path: Path) -> None:
    import socket

    config = tmp_path / "npumon.yaml"
    write_config(config)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [NPUMON, "run", "--config", str(config), "--web.listen-address", f"127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            timeout=scaled(60),
        )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"npumon: cannot listen on '127.0.0.1:{port}': Address already in use; pick another with"
        " --web.listen-address (or web.listen_address)"
    ]
