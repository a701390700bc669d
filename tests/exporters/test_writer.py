"""The exposition writer against prometheus_client, its reference: every golden fixture node
rendered both ways, in both formats, parses to the same samples (prometheus_client's parsers,
the OpenMetrics one strict), and promtool finds nothing to say about either text output
(promtool reads the text format only)."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_om
from prometheus_client.parser import text_string_to_metric_families as parse_text

from npumon.exporters import writer
from npumon.exporters.spec import Gauge
from tests.helpers.exposition import promtool_problems
from tests.support import NODES, fixture_agent

TIMED = "npumon_scrape_collector_duration_seconds"  # wall time of each render: values differ


def _parsed(text: str, openmetrics: bool) -> dict[Any, tuple[str, str, float]]:
    """{(sample name, labels): (family type, family help, value)}; TIMED values as 0."""
    out = {}
    for family in (parse_om if openmetrics else parse_text)(text):
        for s in family.samples:
            value = 0.0 if s.name == TIMED else s.value
            out[s.name, frozenset(s.labels.items())] = (family.type, family.documentation, value)
    return out


@pytest.mark.parametrize("node", sorted(p.name for p in NODES.iterdir() if p.is_dir()))
def test_every_golden_node_writes_as_prometheus_client_does(node: str) -> None:
    agent = fixture_agent(node)
    agent.collect_once()  # one poll of every source
    for openmetrics in (False, True):
        reference = (generate_openmetrics if openmetrics else generate_latest)(agent.registry)
        ours = agent.collector.exposition(openmetrics) + (b"# EOF\n" if openmetrics else b"")
        assert _parsed(ours.decode(), openmetrics) == _parsed(reference.decode(), openmetrics)
        assert len(ours.splitlines()) == len(reference.splitlines())
        if not openmetrics:
            assert promtool_problems(ours) == "" and promtool_problems(reference) == ""


def _write(family: Metric, openmetrics: bool) -> str:
    return (writer.openmetrics if openmetrics else writer.text)([family]).decode()


@pytest.mark.parametrize("openmetrics", [False, True], ids=["text", "openmetrics"])
def test_label_values_and_help_are_escaped_per_the_format(openmetrics: bool) -> None:
    family = CounterMetricFamily("npu_x", 'a "quoted" help \\ with\na line feed', labels=("path",))
    family.add_metric(['C:\\dir "x"\nnext'], 2.0)
    ours = _write(family, openmetrics)
    assert 'npu_x_total{path="C:\\\\dir \\"x\\"\\nnext"} 2.0\n' in ours
    reference = (
        (generate_openmetrics if openmetrics else generate_latest)(_One(family))
        .decode()
        .removesuffix("# EOF\n")
    )  # type: ignore[arg-type]
    assert ours == reference


VALUES = [0.0, 1.0, -1.0, 93.4, 1e-05, 1e20, 1234567.0, 45965377536.0, 0.1 + 0.2, -2.5e9, 7]
SPECIAL = [float("inf"), float("-inf"), float("nan")]


@pytest.mark.parametrize("openmetrics", [False, True], ids=["text", "openmetrics"])
def test_values_and_label_sets_are_written_byte_for_byte_as_prometheus_client(
    openmetrics: bool,
) -> None:
    family = Metric("npu_z", "doc", "gauge")
    for i, value in enumerate([*VALUES, *SPECIAL]):
        family.add_sample("npu_z", {"npu": str(i), "chip": "0"}, value)
    family.add_sample("npu_z", {"b": "x", "a": "y", "c": "z"}, 3.0)  # other names, unsorted
    family.add_sample("npu_z", {"only": 'one "quoted"'}, 4.0)
    family.add_sample("npu_z", {}, 5.0)
    family.add_sample("npu_z", {"chip": "1", "npu": "1"}, 6.0)  # the first names again
    reference = (
        (generate_openmetrics if openmetrics else generate_latest)(_One(family))  # type: ignore[arg-type]
        .decode()
        .removesuffix("# EOF\n")
    )
    assert _write(family, openmetrics) == reference


def test_other_families_go_to_prometheus_client() -> None:
    timed = GaugeMetricFamily("npu_y", "doc", labels=("a",))
    timed.add_metric(["1"], 1.0, timestamp=12.5)  # npumon never stamps samples; still right
    assert _write(timed, False) == generate_latest(_One(timed)).decode()  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "labels"), [("npu-bad", ()), ("npu_ok", ("bad-label",)), ("npu_ok", ("__reserved",))]
)
def test_a_bad_name_fails_when_the_table_is_built(name: str, labels: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="invalid"):
        if labels:
            writer.label_names(labels)
        else:
            Gauge(name, "doc", "power_watts")


class _One:
    def __init__(self, family: Metric) -> None:
        self._family = family

    def collect(self) -> list[Metric]:
        return [self._family]
