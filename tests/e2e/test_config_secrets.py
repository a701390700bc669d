"""A config or web config that is a symlink to a secret: start-up, check-config and reloads
name the file, the line and the key, never a byte of its content; a YAML alias bomb is refused
at once and a reload with one keeps the running config."""

from __future__ import annotations

import contextlib
import resource
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.helpers.exposition import key, samples
from tests.helpers.http import get
from tests.helpers.processes import NPUMON, reported_port, start_npumon, stop
from tests.helpers.wait import scaled, wait_for
from tests.helpers.yamlbomb import billion_laughs
from tests.support import fake_npu_smi

pytestmark = pytest.mark.integration  # real daemons, real signals

MARKER = "Mk7q2ZsecretMARKER"
SHADOW = f"root:$6${MARKER}$Qx9.tz0:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n"
CONFIG_VALUES = f"""\
chips:
  timeout: {MARKER}
npu_smi:
  command: {MARKER}
web:
  listen_address: {MARKER}
logging:
  level: {MARKER}
state_directory: [{MARKER}]
profiling:
  targets:
    - {{workload: "{MARKER}!", cmdline: "({MARKER}"}}
"""
WEB_VALUES = f"""\
basic_auth_users:
  alice: {MARKER}
http_server_config:
  headers:
    X-Frame-Options: {MARKER}
tls_server_config:
  cert_file: {MARKER}.crt
  key_file: {MARKER}.key
  min_version: {MARKER}
"""
WEB_FILES = (
    f"tls_server_config:\n  cert_file: /nonexistent/{MARKER}.crt\n  key_file: {MARKER}.key\n"
)
# About three times the daemon's address space at rest (630 MiB with its 9 threads), far below
# what an expanded bomb needs.
ADDRESS_SPACE = 2 * 1024**3


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [NPUMON, *args], capture_output=True, text=True, timeout=scaled(60), preexec_fn=_limited
    )


def _good_config(path: Path, **extra: object) -> None:
    data = {
        "npu_smi": {"command": fake_npu_smi("910b4-1_25.2.2")},
        "state_directory": str(path.parent),
        **extra,
    }
    path.write_text(yaml.safe_dump(data))


def _secret(tmp_path: Path, text: str) -> Path:
    secret = tmp_path / "private" / "secret"
    secret.parent.mkdir(exist_ok=True)
    secret.write_text(text)
    return secret


def _link(link: Path, target: Path) -> None:
    link.unlink(missing_ok=True)
    link.symlink_to(target)


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path, Path, int]]:
    """A running daemon whose web config (plain HTTP) is tmp_path/web.yml."""
    config, log, web = tmp_path / "npumon.yaml", tmp_path / "npumon.log", tmp_path / "web.yml"
    web.write_text("{}\n")
    _good_config(config, web={"config_file": str(web)})
    process = start_npumon(config, log, preexec_fn=_limited)
    try:
        yield process, config, log, reported_port(log, process=process)
    finally:
        stop(process)


def _reload_successful(port: int) -> float:
    return samples(get(f"http://127.0.0.1:{port}/metrics"))[
        key("npumon_config_last_reload_successful")
    ]


@pytest.mark.parametrize("text", [SHADOW, CONFIG_VALUES], ids=["shadow", "values"])
def test_a_config_linked_to_a_secret_is_never_quoted(
    tmp_path: Path,
    daemon: tuple[subprocess.Popen[bytes], Path, Path, int],
    text: str,
) -> None:
    link = tmp_path / "linked.yaml"
    _link(link, _secret(tmp_path, text))
    started = _run("run", "--config", str(link), "--web.listen-address", "127.0.0.1:0")
    checked = _run("check-config", str(link))
    assert (started.returncode, checked.returncode) == (1, 1)
    assert "  line " in checked.stderr and f"{link}:" in checked.stderr
    process, config, log, port = daemon
    _link(config, link)
    process.send_signal(signal.SIGHUP)
    wait_for(lambda: "event=reload_failed" in log.read_text(), 30, "the refused reload")
    assert _reload_successful(port) == 0.0 and process.poll() is None
    for output in (started.stdout, started.stderr, checked.stdout, checked.stderr):
        assert MARKER not in output
    assert MARKER not in log.read_text()


@pytest.mark.parametrize("text", [SHADOW, WEB_VALUES, WEB_FILES], ids=["shadow", "values", "files"])
def test_a_web_config_linked_to_a_secret_is_never_quoted(
    tmp_path: Path,
    daemon: tuple[subprocess.Popen[bytes], Path, Path, int],
    text: str,
) -> None:
    secret = _secret(tmp_path, text)
    config, link = tmp_path / "linked.yaml", tmp_path / "linked-web.yml"
    _link(link, secret)
    _good_config(config, web={"config_file": str(link)})
    started = _run("run", "--config", str(config), "--web.listen-address", "127.0.0.1:0")
    checked = _run("check-config", str(config))
    assert (started.returncode, checked.returncode) == (1, 1)
    assert f"{link}:" in checked.stderr
    process, _, log, port = daemon
    _link(tmp_path / "web.yml", secret)  # re-read on the next request
    with contextlib.suppress(OSError):  # a request makes the edge re-read the changed file
        get(f"http://127.0.0.1:{port}/metrics")
    wait_for(lambda: "event=web_config_reload_failed" in log.read_text(), 30, "the re-read")
    for output in (started.stdout, started.stderr, checked.stdout, checked.stderr):
        assert MARKER not in output
    assert MARKER not in log.read_text()


def test_check_config_refuses_an_alias_bomb_at_once(tmp_path: Path) -> None:
    bomb, web_bomb = tmp_path / "bomb.yaml", tmp_path / "web-bomb.yml"
    bomb.write_text(billion_laughs())
    web_bomb.write_text(billion_laughs())
    config = tmp_path / "npumon.yaml"
    config.write_text(f"web:\n  config_file: {web_bomb}\n")
    for path, named in ((bomb, bomb), (config, web_bomb)):
        checked = _run("check-config", str(path))  # within ADDRESS_SPACE, or MemoryError
        assert checked.returncode == 1, checked.stderr
        assert f"refused {named}, line 6: more than the limit of 100000 values" in checked.stderr


def test_sighup_with_an_alias_bomb_keeps_the_running_config(
    daemon: tuple[subprocess.Popen[bytes], Path, Path, int],
) -> None:
    process, config, log, port = daemon
    power = key("npu_power_watts", npu="1", chip="0")
    wait_for(lambda: power in samples(get(f"http://127.0.0.1:{port}/metrics")), 30, "a poll")
    config.write_text(billion_laughs())
    process.send_signal(signal.SIGHUP)
    wait_for(lambda: "event=reload_failed" in log.read_text(), 30, "the refused reload")
    assert "values with its aliases expanded" in log.read_text()
    assert _reload_successful(port) == 0.0 and process.poll() is None
    assert power in samples(get(f"http://127.0.0.1:{port}/metrics"))  # the running config's
