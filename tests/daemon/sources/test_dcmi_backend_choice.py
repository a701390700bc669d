"""DcmiBackend without processes: which backend serves, what is cached, when npu-smi is asked."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from npumon.daemon.app import build_chip_backend
from npumon.daemon.config import ConfigError, parse_config
from npumon.daemon.model.chips import InfoTable
from npumon.daemon.model.snapshot import BackendInfo
from npumon.daemon.sources import query
from npumon.daemon.sources.dcmi.client import Call, DcmiChip, DcmiHelper, Hello, HelperFailure
from npumon.daemon.sources.dcmi.library import TrustPolicy
from npumon.daemon.sources.dcmi.serving import DcmiBackend, Mode
from npumon.daemon.sources.npu_smi import NpuSmi
from npumon.daemon.sources.wrapper import SourceRun
from tests.daemon.sources.fake_runner import TABLE, Clock, FakeRunner

NPU_910B = 0xD802  # the PCI device id npu-smi reads the chip type from
CHIPS = (DcmiChip(0, 0, 0, 0, NPU_910B), DcmiChip(1, 0, 1, 1, NPU_910B))
# the fixture table's values (power 78.2 / 77.9 W, 40 / 41 C, HBM 64 GiB) in DCMI's units
ANSWERS: dict[str, Any] = {
    "health": 0,
    "power": 782,
    "temperature": 40,
    "utilization": 0,
    "processes": [],
    "hbm": {
        "memory_size": 65536,
        "memory_usage": 3000,
        "temp": 35,
        "bandwith_util_rate": 5,
    },
    "chip": {"chip_name": "910B4", "aicore_cnt": 20},
    "pcie": {"domain": 0, "bdf_busid": 0xC1, "bdf_deviceid": 0, "bdf_funcid": 0},
}


class StubHelper:
    """Answers like the helper from ANSWERS; -8255 for DDR memory; ``fail`` raises."""

    def __init__(self) -> None:
        self.requests: list[list[Call]] = []
        self.fail: HelperFailure | None = None
        self.codes: dict[str, int] = {"memory": -8255}
        self.restarts = 0
        self.temperature: int = ANSWERS["temperature"]

    def hello(self) -> Hello:
        if self.fail is not None:
            raise self.fail
        return Hello(CHIPS, frozenset(), "25.2.2", "25.2.2")

    def call(self, calls: Sequence[Call]) -> list[tuple[int, Any]]:
        self.requests.append(list(calls))
        answers = {**ANSWERS, "temperature": self.temperature}
        return [
            (self.codes[name], None) if name in self.codes else (0, answers[name])
            for name, *_ in calls
        ]

    def restart(self, why: str) -> None:
        self.restarts += 1


def _smi(
    mode: Mode = "auto", table: str = TABLE
) -> tuple[DcmiBackend, StubHelper, FakeRunner, list[BackendInfo], Clock]:
    helper, runner, told, clock = StubHelper(), FakeRunner({"info": table}), [], Clock()
    smi = DcmiBackend(
        NpuSmi(["npu-smi"], 5.0, runner),
        mode=mode,
        helper=cast(DcmiHelper, helper),
        on_backend=told.append,
        proc_root=Path("/nonexistent"),
        monotonic=clock,
    )
    return smi, helper, runner, told, clock


def _table(smi: DcmiBackend, run: SourceRun | None = None) -> InfoTable:
    return smi.ask(run or SourceRun(), query.info())


def test_auto_serves_dcmi_after_the_cross_check_and_asks_npu_smi_once() -> None:
    smi, helper, runner, told, _ = _smi()
    first, second = _table(smi), _table(smi)
    assert runner.calls == ["info"]  # the cross-check; the next poll is DCMI's alone
    assert told == [BackendInfo("dcmi", "cross_check_passed")]
    assert second.chips[0].power_watts == 78.2 and second.version == "25.2.2"
    assert first.chips == second.chips and len(helper.requests) == 2


def test_minus_8255_is_not_asked_again_within_the_hour() -> None:
    smi, helper, _, _, clock = _smi()
    helper.codes["chip"] = -8255
    _table(smi)
    _table(smi)
    assert not [c for c in helper.requests[1] if c[0] == "chip"]
    clock.now += 3600
    _table(smi)  # the hourly cross-check, and the chip info asked again
    assert [c for c in helper.requests[2] if c[0] == "chip"]
    # DDR is not a 910B's: npu-smi never asks memory_info_v3 there, nor does npumon
    assert not [c for request in helper.requests for c in request if c[0] == "memory"]


def test_a_refused_function_is_npu_smis_for_an_hour_then_asked_again() -> None:
    """-8002 from power: not asked, npu-smi's table gives power (78.2 W), the rest DCMI's."""
    smi, helper, runner, told, clock = _smi()
    helper.codes["power"] = -8002
    helper.temperature = 42  # DCMI's, within the cross-check's 3 C of the table's 40 C
    runs = [SourceRun() for _ in range(3)]
    _table(smi, runs[0])  # the cross-check: power refused, npu-smi's power merged in
    found = _table(smi, runs[1])
    assert not [c for c in helper.requests[1] if c[0] == "power"]
    assert runner.calls == ["info", "info"]  # the table's npu-smi run, for power only
    assert found.chips[0].power_watts == 78.2 and found.chips[0].temperature_celsius == 42.0
    assert told == [BackendInfo("dcmi", "cross_check_passed")]
    assert [f.reason for f in runs[0].refusals] == ["dcmi_permission"]
    assert runs[1].refusals == []  # counted once an hour
    clock.now += 3600
    del helper.codes["power"]
    _table(smi, runs[2])
    assert [c for c in helper.requests[2] if c[0] == "power"]  # asked again after the hour


def test_a_late_helper_has_npu_smi_serve_counted_not_down() -> None:
    smi, helper, runner, told, _ = _smi()
    helper.fail = HelperFailure("dcmi_timeout", "no answer")
    run = SourceRun()
    found = _table(smi, run)
    assert found.chips[0].power_watts == 78.2 and runner.calls == ["info"]
    assert [f.reason for f in run.refusals] == ["dcmi_timeout"] and run.failures == []
    assert told[-1] == BackendInfo("cli", "dcmi_timeout")


def test_a_disagreement_in_auto_has_npu_smi_serve_until_the_next_check() -> None:
    smi, helper, runner, told, clock = _smi()
    hot = {**ANSWERS, "temperature": 60}
    helper.call = lambda calls: [(0, hot[n]) if n != "memory" else (-8255, None) for n, *_ in calls]  # type: ignore[method-assign]
    run = SourceRun()
    assert _table(smi, run).chips[0].temperature_celsius == 40.0  # npu-smi's
    assert [f.reason for f in run.refusals] == ["cross_check", "cross_check"]
    _table(smi)
    assert runner.calls == ["info", "info"]
    assert told[-1] == BackendInfo("cli", "cross_check_temperature_celsius")
    clock.now += 3600
    _table(smi)
    assert runner.calls == ["info", "info", "info"]


def test_dcmi_mode_logs_a_disagreement_but_serves() -> None:
    smi, helper, runner, told, _ = _smi("dcmi")
    off = {**ANSWERS, "power": 2000}
    helper.call = lambda calls: [(0, off[n]) if n != "memory" else (-8255, None) for n, *_ in calls]  # type: ignore[method-assign]
    run = SourceRun()
    assert _table(smi, run).chips[0].power_watts == 200.0
    assert told == [BackendInfo("dcmi", "configured")] and run.refusals


def test_a_chip_gone_from_npu_smi_restarts_the_helper() -> None:
    """dcmi_init listed three chips; npu-smi (the fixture table) shows two."""
    smi, helper, _, told, _ = _smi()
    three = Hello((*CHIPS, DcmiChip(2, 0, 2, 2)), frozenset(), None, None)
    helper.hello = lambda: three  # type: ignore[method-assign]
    _table(smi)
    assert helper.restarts == 1 and told[-1] == BackendInfo("cli", "cross_check_ids")


def test_cli_mode_never_touches_the_helper() -> None:
    smi, helper, runner, told, _ = _smi("cli")
    _table(smi)
    _table(smi)
    assert helper.requests == [] and runner.calls == ["info", "info"]
    assert told == [BackendInfo("cli", "configured")]


def test_the_config_keys_and_their_defaults() -> None:
    config = parse_config({})
    assert (config.chips.backend, config.dcmi.library) == ("auto", None)
    assert parse_config({"dcmi": {"library": "/usr/local/dcmi/libdcmi.so"}}).dcmi.library == Path(
        "/usr/local/dcmi/libdcmi.so"
    )
    with pytest.raises(ConfigError, match="chips.backend: expected one of auto, dcmi, cli"):
        parse_config({"chips": {"backend": "nvml"}})


def test_a_refused_library_is_the_reason_cli_serves(tmp_path: Path) -> None:
    told: list[BackendInfo] = []
    library = tmp_path / "libdcmi.so"
    library.write_bytes(b"")
    library.chmod(0o666)
    config = parse_config({"npu_smi": {"command": ["npu-smi"]}, "dcmi": {"library": str(library)}})
    smi = build_chip_backend(
        config,
        FakeRunner({"info": TABLE}),
        Path("/nonexistent"),
        TrustPolicy(owner_uid=os.getuid(), checked_below=tmp_path),
        told.append,
    )
    assert smi.helper is None and told == [BackendInfo("cli", "library_refused")]
    assert _table(smi).chips[0].power_watts == 78.2
