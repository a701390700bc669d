"""`npumon bundle` and `npumon replay`: a simulated node's bundle replays to its exposition,
keeps no secret, renames identities consistently, and stays within its deadline and byte cap."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from npumon.daemon import bundle, replay
from npumon.daemon.cli import main
from npumon.daemon.config import Config
from npumon.daemon.redact import REDACTED, Pseudonyms, scrub
from npumon.simulator.kubelet import scenario_pods, serve
from npumon.simulator.loader import read_scenario_text
from npumon.simulator.scenario import validate
from tests.helpers.exposition import Samples, samples
from tests.helpers.simulator_runner import HCCN_TOOL, NPU_SMI, SimulatorRunner
from tests.helpers.wait import scaled
from tests.support import FROZEN_TIME

BUNDLES = Path(__file__).parents[1] / "fixtures" / "bundles"
MARKER = "Zq8secretMARKERx"


def members(archive: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        return {
            m.name: tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile()
        }


def npu_families(text: str | bytes) -> Samples:
    return {k: v for k, v in samples(text).items() if k[0].startswith("npu_")}


@pytest.fixture
def kubelet(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """The simulator's kubelet for 910b-8 at FROZEN_TIME, in this process."""
    source, text = read_scenario_text("910b-8")
    socket = tmp_path / "kubelet.sock"
    server = serve(socket, scenario_pods(validate(text, source), lambda: FROZEN_TIME))
    yield socket, text
    server.stop(grace=0).wait()


def sim_config(scenario: str, **more: object) -> Config:
    return Config.model_validate(
        {
            "chips": {"backend": "cli"},
            "npu_smi": {"command": [NPU_SMI, "--scenario", scenario]},
            "hccn_tool": {"command": [HCCN_TOOL, "--scenario", scenario]},
            **more,
        }
    )


@pytest.mark.parametrize("scenario", ["910b-8", "a3-8x2"])
@pytest.mark.parametrize("redact", [True, False])
def test_a_bundle_replays_to_the_same_exposition(
    scenario: str, redact: bool, tmp_path: Path, kubelet: tuple[Path, str]
) -> None:
    config = sim_config(scenario, kubernetes={"pod_resources_socket": str(kubelet[0])})
    archive, manifest = bundle.take(config, redact=redact, runner=SimulatorRunner(FROZEN_TIME))
    assert manifest["cut"] == [] and manifest["pod_resources"] == "response"
    path = tmp_path / "node.tar.gz"
    bundle.write(path, archive)
    recorded = replay.read(path)
    assert any(c["args"][:2] == ["info", "-t"] for c in recorded.commands)
    assert any(c["tool"] == "hccn_tool" for c in recorded.commands)
    original = npu_families(recorded.metrics)
    assert any(name == "npu_chip_allocation_info" for name, _ in original)  # the kubelet's pods
    assert npu_families(replay.exposition(path, tmp_path)) == original
    text = b"".join(members(archive).values()).decode()
    for real in ("train-0", "eval-job", "10.0.0.100", "leaf-sim-0"):
        assert (real in text) is not redact, real


def test_a_bundle_of_a_node_with_secrets_holds_none_of_them(tmp_path: Path) -> None:
    web = tmp_path / "web.yml"
    web.write_text(
        f"basic_auth_users:\n  alice: $2y$10${MARKER}\n"
        f"tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n"
        f"extra:\n  api_token: {MARKER}\n  password: {MARKER}\n"
    )
    hccn = [str(tmp_path / "no-hccn"), f"--password={MARKER}"]
    config = sim_config("910b-8", web={"config_file": str(web)}, hccn_tool={"command": hccn})
    log = tmp_path / "npumon.log"
    log.write_text("level=info event=started\n" * 3)
    archive, _ = bundle.take(config, runner=SimulatorRunner(FROZEN_TIME), log_file=log)
    found = members(archive)
    assert all(MARKER.encode() not in data for data in found.values())
    web_seen = json.loads(found[f"{bundle.TOP}/web-config.json"])
    assert web_seen["basic_auth_users"] == {REDACTED: REDACTED}
    assert web_seen["tls_server_config"]["key_file"] == "a.key"  # a path, not a secret
    assert found[f"{bundle.TOP}/log-tail.txt"].count(b"event=started") == 3


def test_a_hung_npu_smi_ends_at_the_bundles_deadline(tmp_path: Path) -> None:
    fake = tmp_path / "npu-smi"
    fake.write_text("#!/bin/sh\nexec sleep 600\n")
    fake.chmod(0o755)
    config = Config.model_validate(
        {"chips": {"backend": "cli", "timeout": 600}, "npu_smi": {"command": [str(fake)]}}
    )
    archive, manifest = bundle.take(config, deadline=scaled(2))
    calls = json.loads(members(archive)[f"{bundle.TOP}/commands.json"])
    assert calls[0]["timed_out"] and calls[0]["args"] == ["info"]
    assert any("(deadline)" in cut for cut in manifest["cut"])


def test_a_huge_answer_is_cut_at_the_byte_cap(tmp_path: Path) -> None:
    fake = tmp_path / "npu-smi"
    fake.write_text("#!/bin/sh\nhead -c 64000000 /dev/zero | tr '\\0' x\n")
    fake.chmod(0o755)
    config = Config.model_validate(
        {"chips": {"backend": "cli"}, "npu_smi": {"command": [str(fake)]}}
    )
    cap = 1024 * 1024
    archive, manifest = bundle.take(config, max_bytes=cap)
    raw = sum(len(data) for data in members(archive).values())
    assert raw <= 2 * cap, raw
    assert any("over the cap" in cut for cut in manifest["cut"])


def test_pseudonyms_are_consistent_and_keep_their_shape() -> None:
    names = Pseudonyms(hostnames=["node-a17"], pods=["train-0"])
    names.learn("\tSerial Number : 0A1B2C\n")
    text = (
        "0A1B2C node-a17 train-0 10.1.2.3 aa:bb:cc:dd:ee:ff 10.1.2.3\nversion 1.2.3.4 255.255.0.0"
    )
    assert names.apply(text) == (
        "SN000001 host-1 pod-1 10.255.0.1 02:00:00:00:00:01 10.255.0.1\nversion 1.2.3.4 255.255.0.0"
    )
    assert scrub({"a": {"token": "x", "key_file": "k"}, "cmd": ["--secret=y"]}) == {
        "a": {"token": REDACTED, "key_file": "k"},
        "cmd": ["--secret=" + REDACTED],
    }


def test_replay_once_prints_the_exposition(capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI prints the bundle's golden exposition (the one this npumon gives; the bundle's
    own metrics.prom is what the npumon that took it served)."""
    assert main(["replay", "--once", str(BUNDLES / "910b-8.tar.gz")]) == 0
    assert npu_families(capsys.readouterr().out) == npu_families(
        (BUNDLES / "910b-8.prom").read_text()
    )


def test_a_file_that_is_not_a_bundle_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "x.tar.gz").write_bytes(b"not gzip")
    assert main(["replay", "--once", str(tmp_path / "x.tar.gz")]) == 1
    assert "not a readable npumon bundle" in capsys.readouterr().err
