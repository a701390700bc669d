"""NpuCollector: exact samples of merged hand-built chips, absent values, error boundaries."""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields, replace
from typing import get_args

import pytest
from exp_helpers import (
    MIB,
    chip_310p,
    chip_910b,
    chips_a3,
    key,
    merged,
    node,
    render,
    samples,
    table_chip,
)

from npumon.daemon.config import CollectorName, DetailCollectorName
from npumon.daemon.model.chips import ChipEcc, HealthReport
from npumon.daemon.model.reading import ChipParts
from npumon.daemon.model.snapshot import NodeSnapshot, SourceStatus
from npumon.exporters import collector
from npumon.exporters.collector import (
    COLLECTOR_NAMES,
    COLLECTORS,
    DETAIL_COLLECTORS,
    OFF_BY_DEFAULT,
    Collector,
    NpuCollector,
)
from tests.helpers.exposition import promtool_problems

ID = {"npu": "0", "chip": "0"}


def test_910b_chip_exact_samples() -> None:
    got = samples(render(node(chip_910b())))
    expected = {
        "npu_power_watts": 78.2,  # table wins over -t common's 80
        "npu_temperature_celsius": 40.0,
        "npu_hbm_temperature_celsius": 44.0,
        "npu_hbm_used_bytes": 61825 * MIB,
        "npu_hbm_total_bytes": 65536 * MIB,
        "npu_memory_used_bytes": 0.0,  # the table prints "0 / 0": a value, not absent
        "npu_memory_total_bytes": 0.0,
        "npu_hugepages_used_pages": 0.0,
        "npu_hugepages_total_pages": 0.0,  # not *_total: promtool rejects a gauge so named
        "npu_aicore_utilization_ratio": 0.35,  # -t usages wins over common (0.33) and table (0)
        "npu_aivector_utilization_ratio": 0.2,
        "npu_aicube_utilization_ratio": 0.3,
        "npu_aicpu_utilization_ratio": 0.01,
        "npu_ctrlcpu_utilization_ratio": 0.05,
        "npu_utilization_ratio": 0.4,
        "npu_hbm_bandwidth_utilization_ratio": 0.12,
        "npu_aicore_frequency_hertz": 1.8e9,
        "npu_aicore_rated_frequency_hertz": 1.8e9,
        "npu_profiling_active": 0.0,
    }
    for name, value in expected.items():
        assert got[key(name, **ID)] == pytest.approx(value), name
    assert key("npu_memory_bandwidth_utilization_ratio", **ID) not in got  # None in usages
    info = key(
        "npu_chip_info",
        **ID,
        logic_id="0",
        name="910B4-1",
        bus_id="0000:0E:00.0",
        serial="SN0001",
        vdie_id="AB12",
        firmware_version="7.7.0.1.231",
    )
    assert got[info] == 1.0
    assert got[key("npu_node_info", npu_smi_version="25.2.2", driver_version="25.2.2")] == 1.0
    assert got[key("npumon_build_info", version="1.2.3")] == 1.0
    assert got[key("npumon_chips")] == 1.0


def test_processes_named_and_unnamed() -> None:
    got = samples(render(node(chip_910b())))
    procs = {k: v for k, v in got.items() if k[0] == "npu_process_hbm_used_bytes"}
    assert procs == {
        key("npu_process_hbm_used_bytes", **ID, pid="19334", process_name="VLLMWorker_TP"): 58472
        * MIB,
        key("npu_process_hbm_used_bytes", **ID, pid="777"): 100 * MIB,  # no process_name label
    }


def test_a3_die_without_power_has_no_power_sample() -> None:
    got = samples(render(node(*chips_a3())))
    assert got[key("npu_power_watts", npu="1", chip="0")] == pytest.approx(167.1)
    assert key("npu_power_watts", npu="1", chip="1") not in got
    assert got[key("npu_temperature_celsius", npu="1", chip="1")] == 38.0
    assert got[key("npu_hbm_used_bytes", npu="1", chip="1")] == 10568 * MIB
    info = key(
        "npu_chip_info", npu="1", chip="1", name="Ascend910", bus_id="0000:39:00.0", phy_id="3"
    )
    assert got[info] == 1.0
    assert (
        got[
            key(
                "npu_process_hbm_used_bytes", npu="1", chip="1", pid="990711", process_name="python"
            )
        ]
        == 7746 * MIB
    )
    assert got[key("npumon_chips")] == 2.0


def test_310p_vectorcore_is_aivector_and_no_hbm() -> None:
    got = samples(render(node(chip_310p())))
    ids = {"npu": "6", "chip": "0"}
    assert got[key("npu_aivector_utilization_ratio", **ids)] == pytest.approx(0.12)
    assert got[key("npu_memory_used_bytes", **ids)] == 1839 * MIB
    assert got[key("npu_memory_total_bytes", **ids)] == 21525 * MIB
    names = {k[0] for k in got if dict(k[1]).get("npu") == "6"}
    for absent in (
        "npu_power_watts",
        "npu_hbm_used_bytes",
        "npu_hbm_total_bytes",
        "npu_aicube_utilization_ratio",
        "npu_throttled",
        "npu_hbm_ecc_errors_total",
        "npu_aicore_frequency_hertz",
        "npu_utilization_ratio",
    ):
        assert absent not in names
    info = key("npu_chip_info", **ids, logic_id="0", name="310P3", bus_id="0000:84:00.0")
    assert got[info] == 1.0


def test_all_absent_chip_yields_only_state_samples() -> None:
    snap = node(ChipParts(table=table_chip(3, 0)))
    got = samples(render(snap))
    per_chip = {k[0] for k in got if dict(k[1]).get("npu") == "3"}
    assert per_chip == {"npu_chip_info", "npu_health_state", "npu_profiling_active"}
    assert got[key("npu_health_state", npu="3", chip="0", state="unknown")] == 1.0


def test_health_state_is_one_hot_with_error_codes() -> None:
    health = HealthReport(status="Alarm", error_codes=("80E01801", "80E18402"))
    chip = replace(chip_910b(), health=health)  # the table still says OK: -t health wins
    got = samples(render(node(chip)))
    states = {dict(k[1])["state"]: v for k, v in got.items() if k[0] == "npu_health_state"}
    assert states == {"ok": 0.0, "warning": 0.0, "alarm": 1.0, "critical": 0.0, "unknown": 0.0}
    codes = {
        (dict(k[1])["code"], dict(k[1])["level"]) for k in got if k[0] == "npu_error_code_info"
    }
    assert codes == {("80E01801", "unknown"), ("80E18402", "unknown")}  # no table given here


@pytest.mark.parametrize(
    ("throttle", "expected"),
    [
        ("thermal", {"thermal": 1.0, "power": 0.0, "unknown": 0.0}),
        ("power", {"thermal": 0.0, "power": 1.0, "unknown": 0.0}),
        ("unknown", {"thermal": 0.0, "power": 0.0, "unknown": 1.0}),
        ("none", {"thermal": 0.0, "power": 0.0, "unknown": 0.0}),
        (None, {}),
    ],
)
def test_throttled_state_set(throttle: str | None, expected: dict[str, float]) -> None:
    got = samples(render(node(replace(merged(chip_910b()), throttle=throttle))))
    reasons = {dict(k[1])["reason"]: v for k, v in got.items() if k[0] == "npu_throttled"}
    assert reasons == expected


def test_ecc_prefers_aggregate_total_and_is_a_counter() -> None:
    text = render(node(chip_910b()))
    got = samples(text)
    assert got[key("npu_hbm_ecc_errors_total", **ID, bits="single")] == 17.0  # aggregate
    assert got[key("npu_hbm_ecc_errors_total", **ID, bits="double")] == 0.0  # current count
    assert b"# TYPE npu_hbm_ecc_errors_total counter" in text
    assert not any(k[0] == "npu_memory_ecc_errors_total" for k in got)  # DDR all None
    no_ecc = samples(render(node(replace(chip_910b(), ecc=ChipEcc(chip=0)))))
    assert not any(k[0] == "npu_hbm_ecc_errors_total" for k in no_ecc)


def test_source_self_metrics_and_failure_counters() -> None:
    sources = (
        SourceStatus("npu_smi_info", True, 0.25, 1_699_999_990.0, 0, (("timeout", 2),)),
        SourceStatus("npu_smi_health", False, None, None, 255, (("dcmi_init", 4), ("timeout", 1))),
    )
    got = samples(render(node(chip_910b(), sources=sources)))
    assert got[key("npumon_source_up", source="npu_smi_info")] == 1.0
    assert got[key("npumon_source_up", source="npu_smi_health")] == 0.0
    assert got[key("npumon_source_duration_seconds", source="npu_smi_info")] == 0.25
    assert key("npumon_source_duration_seconds", source="npu_smi_health") not in got
    assert got[key("npumon_source_last_success_timestamp_seconds", source="npu_smi_info")] == (
        1_699_999_990.0
    )
    failures = {k: v for k, v in got.items() if k[0] == "npumon_source_failures_total"}
    assert failures == {
        key("npumon_source_failures_total", source="npu_smi_info", reason="timeout"): 2.0,
        key("npumon_source_failures_total", source="npu_smi_health", reason="dcmi_init"): 4.0,
        key("npumon_source_failures_total", source="npu_smi_health", reason="timeout"): 1.0,
    }


@dataclass(frozen=True)
class _Boom(Collector):
    def render(self, snap: NodeSnapshot, openmetrics: bool) -> bytes:
        raise RuntimeError("renderer bug")


def test_failing_collector_is_contained_reported_and_logged_once(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    boom = _Boom("boom", (), ("",), "a bug", "none")
    monkeypatch.setattr(collector, "COLLECTORS", (*COLLECTORS, boom))
    snap = node(chip_910b())
    npu = NpuCollector(lambda: snap, "1.2.3")
    with caplog.at_level(logging.DEBUG, logger="npumon.exporters.collector"):
        npu.exposition()
        got = samples(npu.exposition())
    assert got[key("npumon_scrape_collector_success", collector="boom")] == 0.0
    assert got[key("npumon_scrape_collector_success", collector="memory")] == 1.0
    assert got[key("npu_power_watts", **ID)] == pytest.approx(78.2)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "collector=boom" in errors[0].getMessage()


def test_builtin_collector_failure_drops_only_its_group() -> None:
    # A wrong type in a reading field makes the utilization collector raise.
    broken = replace(merged(chip_910b()), aicore_ratio="garbage")
    got = samples(render(node(broken)))
    assert got[key("npumon_scrape_collector_success", collector="utilization")] == 0.0
    assert not any(k[0] == "npu_aicore_utilization_ratio" for k in got)
    assert got[key("npu_power_watts", **ID)] == pytest.approx(78.2)
    assert got[key("npu_health_state", **ID, state="ok")] == 1.0


def test_latest_raising_still_serves_self_metrics() -> None:
    def latest() -> NodeSnapshot:
        raise RuntimeError("store broken")

    got = samples(render(latest))
    assert got[key("npumon_scrape_collector_success", collector="snapshot")] == 0.0
    assert got[key("npumon_build_info", version="1.2.3")] == 1.0


def test_vanished_chip_vanishes_and_building_the_collector_does_not_render() -> None:
    a3 = chips_a3()
    current = [node(*a3)]
    calls = []

    def latest() -> NodeSnapshot:
        calls.append(1)
        return current[0]

    npu = NpuCollector(latest, "1.2.3")
    assert calls == []
    assert key("npu_power_watts", npu="1", chip="0") in samples(npu.exposition())
    current[0] = node(a3[1])
    after = samples(npu.exposition())
    assert not any(dict(k[1]).get("chip") == "0" and k[0].startswith("npu_") for k in after)
    assert after[key("npumon_chips")] == 1.0


def test_no_table_yet_has_no_chip_count() -> None:
    snap = NodeSnapshot(taken_at=0.0, node=node().node, chips=(), sources=())
    got = samples(render(snap))
    assert key("npumon_chips") not in got
    assert not any(k[0] == "npumon_snapshot_timestamp_seconds" for k in got)


def test_exposition_passes_promtool() -> None:
    parts = replace(chip_910b(), health=HealthReport(status="Warning", error_codes=("80E01801",)))
    chip = replace(merged(parts), throttle="thermal")
    sources = (SourceStatus("npu_smi_info", False, 0.1, None, 1, (("timeout", 1),)),)
    text = render(node(chip, *chips_a3(), chip_310p(), sources=sources))
    assert promtool_problems(text) == ""


def test_a_disabled_collector_renders_nothing_and_reports_nothing() -> None:
    got = samples(render(node(chip_910b()), disabled=("processes", "ecc")))
    assert not any(k[0] in ("npu_process_hbm_used_bytes", "npu_hbm_ecc_errors_total") for k in got)
    reported = {dict(k[1])["collector"] for k in got if k[0] == "npumon_scrape_collector_success"}
    assert "processes" not in reported and "ecc" not in reported and "memory" in reported
    with pytest.raises(ValueError, match="unknown collectors"):
        NpuCollector(lambda: node(), "1", disabled=("nonesuch",))


def test_each_collector_reports_its_own_render_time() -> None:
    ticks = iter(float(i) for i in range(1000))
    got = samples(render(node(chip_910b()), timer=lambda: next(ticks)))
    durations = {
        dict(k[1])["collector"]: v
        for k, v in got.items()
        if k[0] == "npumon_scrape_collector_duration_seconds"
    }
    assert set(durations) == {"snapshot", *COLLECTOR_NAMES} - OFF_BY_DEFAULT
    assert set(durations.values()) == {1.0}  # one timer tick from start to end of each


def test_config_knows_exactly_the_collectors() -> None:
    assert get_args(CollectorName) == COLLECTOR_NAMES
    assert get_args(DetailCollectorName) == DETAIL_COLLECTORS


def _without_durations(body: bytes) -> list[str]:
    return [
        line
        for line in body.decode().splitlines()
        if not line.startswith("npumon_scrape_collector_duration_seconds")
    ]


@pytest.mark.parametrize("openmetrics", [False, True])
def test_a_kept_exposition_is_the_one_formatted(openmetrics: bool) -> None:
    snap = node(*chips_a3())
    npu = NpuCollector(lambda: snap, "1.2.3", enabled=["npu_exporter_compat"])
    first = npu.exposition(openmetrics)
    assert b"npu_chip_info_utilization" in first
    assert _without_durations(npu.exposition(openmetrics)) == _without_durations(first)


def test_exposition_formats_a_collector_again_only_when_its_inputs_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []

    @dataclass(frozen=True)
    class Counting(Collector):
        def render(self, snap: NodeSnapshot, openmetrics: bool) -> bytes:
            calls.append(self.name)
            return super().render(snap, openmetrics)

    def counting(c: Collector) -> Collector:
        return Counting(**{f.name: getattr(c, f.name) for f in fields(c)})

    monkeypatch.setattr(collector, "COLLECTORS", tuple(counting(c) for c in COLLECTORS))
    current = [node(chip_910b())]
    npu = NpuCollector(lambda: current[0], "1")
    first = npu.exposition()
    assert calls.count("network") == calls.count("memory") == 1
    current[0] = replace(current[0], taken_at=current[0].taken_at + 5)  # same chips, network
    second = npu.exposition()
    assert calls.count("network") == calls.count("memory") == 1  # kept
    assert calls.count("node") == 2  # its input is the whole snapshot
    assert b"npumon_snapshot_timestamp_seconds" in second and first != second
    parts = chip_910b()
    hotter = replace(parts, table=replace(parts.table, power_watts=90.0))
    current[0] = replace(current[0], chips=(merged(hotter),))
    third = samples(npu.exposition())
    assert calls.count("power") == 2 and calls.count("network") == 1
    assert third[key("npu_power_watts", **ID)] == 90.0
    assert third[key("npumon_scrape_collector_success", collector="network")] == 1.0
