"""The family writer (exporters/spec.py) against its reference, prometheus_client's encoders:
every collector's families, in both formats, byte for byte, on one hand-built node where every
family has samples (label values holding quotes, backslashes and line feeds, values from 0 to
1e20, NaN and infinities); and the writer's own rules (escaping, Go's float text, names checked
when a row is built). The golden expositions (tests/e2e/test_golden.py) hold the real nodes'
bytes; this is the one place prometheus_client's encoders are the reference."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.core import Metric
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from npumon.daemon.model.kubelet import ChipOwner, ProcessOwner
from npumon.daemon.model.network import HccsLink, OpticalReport
from npumon.daemon.model.network_view import ChipLinks, NetworkView, PortReading
from npumon.daemon.model.profile import (
    BOTTLENECK_KINDS,
    Bottleneck,
    CommShare,
    CommTimes,
    Comparison,
    CoreShare,
    FindingSize,
    LinkStat,
    OpShare,
    PartDelta,
    PhaseStat,
    ProfileSummary,
    ProfilingView,
    RankBreakdown,
    StepStats,
    WorkloadProfile,
)
from npumon.daemon.model.rank_hardware import RankHardware
from npumon.daemon.model.reading import ChipReading, ProcessReading
from npumon.daemon.model.snapshot import BackendInfo, NodeIdentity, NodeSnapshot, SourceStatus
from npumon.exporters import profiles
from npumon.exporters.builtin import BUILD, RELOAD, RESULTS
from npumon.exporters.collector import COLLECTORS
from npumon.exporters.spec import Family, write
from tests.helpers.exposition import promtool_problems

FORMATS = pytest.mark.parametrize("openmetrics", [False, True], ids=["text", "openmetrics"])
ODD = 'sw "a"\\b\nc'  # a value to escape: quote, backslash, line feed

CHIP = ChipReading(
    3,
    1,
    identity=(("logic_id", "5"), ("name", "910B4"), ("bus_id", "0000:C1:00.0"), ("serial", ODD)),
    health_state="warning",
    error_codes=(("8C03A000", "restart_npu"), ("80E01801", "unknown")),
    aicore_ratio=0.35,
    aivector_ratio=0.1 + 0.2,
    aicube_ratio=1.0,
    aicpu_ratio=0.0,
    ctrlcpu_ratio=1e-05,
    utilization_ratio=0.4,
    hbm_bandwidth_ratio=0.12,
    memory_bandwidth_ratio=0.5,
    power_watts=93.4,
    temperature_celsius=-2.5,
    hbm_temperature_celsius=44.0,
    hbm_used_bytes=45965377536,
    hbm_total_bytes=68719476736,
    memory_used_bytes=1234567,
    memory_total_bytes=10**20,
    hugepages_used=0,
    hugepages_total=7,
    aicore_frequency_hertz=1.8e9,
    aicore_rated_frequency_hertz=1.8e9,
    aicore_count=24,
    throttle="thermal",
    hbm_ecc_single_bit_errors=3,
    hbm_ecc_double_bit_errors=0,
    memory_ecc_single_bit_errors=999999,
    memory_ecc_double_bit_errors=1,
    processes=(
        ProcessReading(4242, 1 << 30, "python3", "c0ffee", ProcessOwner("ml", "train-0", "main")),
        ProcessReading(777, 100, None, None, ProcessOwner(user="root", slurm_job_id="42")),
        ProcessReading(778, 100, ODD),
    ),
    capture_active=True,
    owners=(ChipOwner("ml", "train-0", "main"), ChipOwner("ml", "nb", "c", vnpu_id=196)),
    allocated=True,
    voltage_volts=0.85,
    pcie_bandwidth=(("receive", "posted", "avg", 6e9), ("transmit", "completion", "max", 0.0)),
    vnpus=((100, 0.42, 1 << 30, 0),),
)
PORT = PortReading(
    3,
    1,
    0,
    up=True,
    speed_bytes_per_second=4e11,
    carrier_up_changes=3,
    carrier_down_changes=2,
    traffic=(
        ("receive_bytes", 45965377536),
        ("transmit_bytes", 0),
        ("receive_packets", 7),
        ("transmit_packets", 999999),
    ),
    receive_errors=(("fcs", 7), ("crc", 1234567)),
    transmit_errors=(("bad", 0),),
    pause_frames=(("receive", "pfc", 9), ("transmit", "mac", 0)),
    pfc_frames=(("receive", "3", 9), ("transmit", "7", 10**20)),
    roce_errors=(("retransmissions", 5),),
    lanes=2,
    max_lanes=4,
    lane_state="downgraded",
    bandwidth=(("transmit", 266.84e6), ("receive", 0.0)),
    ub_packets=(("receive", "ub_compact", 88000000), ("transmit", "unknown", 0)),
    ub_flits=(("receive", 10**19),),
    ub_retries=(("request", 42), ("ack", 40)),
    ub_port_state="initial",
    health_state="fault",
    optical=OpticalReport(
        present=True,
        temperature_celsius=47.5,
        supply_voltage_volts=3.3,
        rx_power_watts=((0, 1e-3), (1, 0.1 + 0.2)),
        tx_power_watts=((0, 8.9e-4),),
        tx_bias_amperes=((0, 0.0065),),
        thresholds=(
            ("temperature_celsius", "high", 70.0),
            ("temperature_celsius", "low", -5.0),
            ("supply_voltage_volts", "low", 2.97),
            ("rx_power_watts", "low", 1.445e-4),
            ("tx_power_watts", "high", 3.16e-3),
        ),
    ),
    info=(("ip", "10.0.0.1"), ("peer_switch", ODD), ("peer_port", "400GE1/1/1:1")),
)
LINKS = ChipLinks(
    3,
    1,
    hccs=(
        HccsLink(6, 4, 5.6e10, 1, 2, 3, 4, 5, 42),
        HccsLink(7, 0, None, 123456789012, 98765432109, 0, 0, None, None),
    ),
    hccs_healthy=False,
    hccs_first_error_link=6,
    hccs_bandwidth=((6, 1e9, 2.5e9), (7, 0.0, 123.456)),
    pcie_errors=(("rx", 991), ("retry", 0)),
    sio_crc_errors=(("receive", 1), ("transmit", 0)),
    ub_link_state="partial",
)
PHASES = (PhaseStat("computing", 0.3, 0.75), PhaseStat("free", 0.1, None))
SUMMARY = ProfileSummary(
    workload="llama",
    layout="torch_npu",
    capture_time_seconds=None,
    step=StepStats(50, 0.4, 0.4, 0.41, 0.42),
    phases=PHASES,
    op_total_seconds=1.0,
    op_time_ratio=(OpShare("MatMul", "ai_core", 0.5, 0.5, 3), OpShare(ODD, "mix", 0.1, 0.1, 1)),
    core_type_time_ratio=(CoreShare("ai_core", 0.5, 0.5),),
    ai_cpu_seconds=None,
    ai_cpu_count=None,
    format_conversion_seconds=None,
    format_conversion_ratio=None,
    dynamic_shape_op_count=None,
    op_types_inferred=False,
    ranks=(RankBreakdown("rank0", 0, 50, 0.4, PHASES),),
    rank_spread=(),
    bottlenecks=(
        Bottleneck(BOTTLENECK_KINDS[0], "", "", 1.0, 0.5, FindingSize(0.2, 0.5, "share x step")),
    ),
    communication=(CommShare("all_reduce", 0.1, 0.25, 4),),
    comm_times=CommTimes(1.0, 0.3, 0.1, 0.0),
    links=(LinkStat("HCCS", 1e9, 0.1, 1e10),),
)
EVERYTHING = NodeSnapshot(
    taken_at=1_700_000_000.5,
    node=NodeIdentity(npu_smi_version="25.2.2", driver_version="25.2.2", cann_version=ODD),
    chips=(CHIP, ChipReading(3, 0, identity=None)),
    sources=(
        SourceStatus("npu_smi_table", True, 0.21, 1.7e9, 0, (("timeout", 2),), None, (("x", 1),)),
        SourceStatus("hccn_tool", False, None, None, 1),
    ),
    has_table=True,
    backend=BackendInfo("dcmi", "cross_check_passed"),
    attribution_problems=(("conflict", 1),),
    network=NetworkView(ports=(PORT, PortReading(3, 1, 1)), chips=(LINKS, ChipLinks(3, 0))),
    profiles=ProfilingView(
        workloads=(
            WorkloadProfile(
                "llama",
                SUMMARY,
                0.4,
                1.7e9,
                120.0,
                0.03,
                True,
                False,
                comparison=Comparison(
                    1.6e9, None, 0.1, (PartDelta("phase", "computing", 0.04, 0.3),)
                ),
                source="master_addr",
                rank_npus=((0, 0), (1, 1)),
                hardware=(RankHardware(1, 1, 0, 4, 0.5, "power", errors=(("cnp", 3),)),),
                capture_inflation_ratio=1.08,
            ),
            WorkloadProfile("idle"),
        ),
        state_errors=(("corrupt", 1),),
        step_log_reads=(("ok", 2), ("no_log", 1)),
    ),
)
SELF = (
    *((f, "1.2.3") for f in BUILD),
    *((f, [("health", 0.00012, True), ("boom", 1e-07, False)]) for f in RESULTS),
    *((f, (True, 1.7e9)) for f in RELOAD),
)


def _reference(families: list[tuple[Family, Any]], openmetrics: bool) -> bytes:
    """prometheus_client's encoding of the rows' samples as its own Metric families."""
    metrics = []
    for f, model in families:
        metric = Metric(f.name, f.help, f.type, f.unit)
        for labels, value in f.samples(model):
            if value is not None:
                named = labels if f.optional else dict(zip(f.labels, map(str, labels), strict=True))
                metric.add_sample(f.sample_name, named, float(value))
        if metric.samples:
            metrics.append(metric)
    registry = SimpleNamespace(collect=lambda: metrics)
    if openmetrics:
        return bytes(generate_openmetrics(registry)).removesuffix(b"# EOF\n")  # type: ignore[no-untyped-call]
    return generate_latest(registry)  # type: ignore[arg-type]


def _rows(name: str) -> list[tuple[Family, Any]]:
    (collector,) = (c for c in COLLECTORS if c.name == name)
    if name == "profiles":  # its families read the view; the skip count of a clean render
        skips = SimpleNamespace(families=[], non_finite=0)
        return [*((f, EVERYTHING.profiles) for f in profiles.FAMILIES), (profiles.SKIPPED, skips)]
    return [(f, EVERYTHING) for f in collector.families]


@FORMATS
@pytest.mark.parametrize("name", [c.name for c in COLLECTORS])
def test_every_family_writes_as_prometheus_client_encodes_it(name: str, openmetrics: bool) -> None:
    (collector,) = (c for c in COLLECTORS if c.name == name)
    ours = collector.render(EVERYTHING, openmetrics)
    assert ours == _reference(_rows(name), openmetrics)
    heads = collector.render(EVERYTHING, True).decode().splitlines()
    written = {line.split(" ")[2] for line in heads if line.startswith("# TYPE")}
    assert written == {f.name for f in collector.families}  # the node has a sample of each


@FORMATS
def test_npumons_own_families_write_as_prometheus_client_encodes_them(openmetrics: bool) -> None:
    assert write(SELF, openmetrics) == _reference(list(SELF), openmetrics)


def test_promtool_finds_nothing_to_say_about_npumons_families() -> None:
    ours = [c for c in COLLECTORS if c.name != "npu_exporter_compat"]  # its names are not ours
    body = b"".join(c.render(EVERYTHING, False) for c in ours) + write(SELF, False)
    assert promtool_problems(body) == ""


def test_label_values_and_help_are_escaped_per_the_format() -> None:
    text = b"".join(c.render(EVERYTHING, False) for c in COLLECTORS).decode()
    assert 'peer_switch="sw \\"a\\"\\\\b\\nc"' in text
    row = Family("npu_x", "counter", 'a "quoted" help \\ with\na line feed', ("path",), list)
    assert row.format([(['C:\\dir "x"\nnext'], 2)], False) == [
        '# HELP npu_x_total a "quoted" help \\\\ with\\na line feed\n# TYPE npu_x_total counter\n',
        'npu_x_total{path="C:\\\\dir \\"x\\"\\nnext"} 2.0\n',
    ]
    assert row.format([], True) == []  # no sample: the family is left out


VALUES = [0.0, 1.0, -1.0, 93.4, 1e-05, 1e20, 1234567.0, 45965377536.0, 0.1 + 0.2, -2.5e9, 7]
SPECIAL = [float("inf"), float("-inf"), float("nan"), True, 10**20]


@FORMATS
def test_values_and_label_sets_are_written_as_prometheus_client_writes_them(
    openmetrics: bool,
) -> None:
    fixed = [(f, None) for f in _value_rows()]
    assert write(fixed, openmetrics) == _reference(fixed, openmetrics)


def _value_rows() -> tuple[Family, ...]:
    values = [*VALUES, *SPECIAL]
    return (
        Family(
            "npu_z",
            "gauge",
            "doc",
            ("npu", "chip"),
            lambda _: [((i, 0), v) for i, v in enumerate(values)],
        ),
        Family(  # label sets that differ per sample: only the known labels
            "npu_w",
            "gauge",
            "doc",
            (),
            lambda _: [({"b": "x", "a": "y", "c": "z"}, 3), ({"only": ODD}, 4), ({}, 5)],
            optional=("a", "b", "c", "only"),
        ),
        Family("npu_ratio", "gauge", "doc", (), lambda _: [((), 0.5)], unit="ratio"),
    )


@pytest.mark.parametrize(
    ("name", "labels"), [("npu-bad", ()), ("npu_ok", ("bad-label",)), ("npu_ok", ("__reserved",))]
)
def test_a_bad_name_fails_when_the_row_is_built(name: str, labels: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="invalid"):
        Family(name, "gauge", "doc", labels, list)


def test_a_row_of_another_type_is_refused() -> None:
    with pytest.raises(ValueError, match="neither gauge nor counter"):
        Family("npu_h", "histogram", "doc", (), list)


def test_a_family_of_an_empty_node_is_left_out() -> None:
    bare = replace(EVERYTHING, network=NetworkView(ports=(PortReading(0, 0, 0, up=False),)))
    (network,) = (c for c in COLLECTORS if c.name == "network")
    assert network.render(bare, False) == (
        b"# HELP npu_network_up 1 when the NIC port's link is up. Sampled in the background by "
        b"npumon; see npumon_source_last_success_timestamp_seconds.\n"
        b"# TYPE npu_network_up gauge\n"
        b'npu_network_up{chip="0",npu="0",port="0"} 0.0\n'
    )
