"""Declarative per-chip metric families: each row names a ChipReading field, never a source.

A family table is a tuple of these rows; `render_table` turns one into metric families. Field
names are checked against ChipReading, metric and label names by the writer, when the row is built,
so a typo fails at import.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.samples import Sample

from npumon.daemon.model.reading import ChipReading
from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.writer import label_names, metric_name

CHIP_LABELS = ("npu", "chip")
SAMPLED = "Sampled in the background by npumon; see npumon_source_last_success_timestamp_seconds."
_FIELDS = frozenset(f.name for f in fields(ChipReading))


def ids(c: ChipReading) -> list[str]:
    """The identity label values (npu, chip) of a chip's series."""
    return [str(c.npu), str(c.chip)]


def _gauge(name: str, doc: str, *labels: str, unit: str = "") -> GaugeMetricFamily:
    return GaugeMetricFamily(name, f"{doc} {SAMPLED}", labels=(*CHIP_LABELS, *labels), unit=unit)


def _check(fields: tuple[str, ...], name: str, labels: tuple[str, ...] = ()) -> None:
    unknown = [n for n in fields if n not in _FIELDS]
    if unknown:
        raise ValueError(f"no ChipReading field {unknown}; add it in daemon/model/reading.py")
    metric_name(name)
    label_names(tuple(sorted((*CHIP_LABELS, *labels))))


@dataclass(frozen=True)
class Gauge:
    """One sample per chip whose ``field`` is known (None: no sample).

    npu_power_watts{npu="0",chip="0"} 93.4
    """

    name: str
    help: str
    field: str
    unit: str = ""

    def __post_init__(self) -> None:
        _check((self.field,), self.name)

    def render(self, chips: Sequence[ChipReading]) -> Metric:
        family = _gauge(self.name, self.help, unit=self.unit)
        for c in chips:
            value = getattr(c, self.field)
            if value is not None:
                family.add_metric(ids(c), float(value))
        return family


@dataclass(frozen=True)
class Counter:
    """A counter per chip and label value, each value from its own field (None: no sample).

    npu_hbm_ecc_errors_total{npu="0",chip="0",bits="single"} 0
    """

    name: str  # without _total
    help: str
    label: str
    fields: tuple[tuple[str, str], ...]  # (label value, ChipReading field)

    def __post_init__(self) -> None:
        _check(tuple(f for _, f in self.fields), f"{self.name}_total", (self.label,))

    def render(self, chips: Sequence[ChipReading]) -> Metric:
        family = CounterMetricFamily(
            self.name, f"{self.help} {SAMPLED}", labels=(*CHIP_LABELS, self.label)
        )
        for c in chips:
            for label_value, field in self.fields:
                value = getattr(c, field)
                if value is not None:
                    family.add_metric([*ids(c), label_value], float(value))
        return family


@dataclass(frozen=True)
class StateSet:
    """1 on the state ``field`` holds, 0 on the others; no series while ``field`` is None.

    npu_health_state{npu="0",chip="0",state="ok"} 1
    npu_health_state{npu="0",chip="0",state="alarm"} 0
    """

    name: str
    help: str
    label: str
    states: tuple[str, ...]
    field: str

    def __post_init__(self) -> None:
        _check((self.field,), self.name, (self.label,))

    def render(self, chips: Sequence[ChipReading]) -> Metric:
        family = _gauge(self.name, self.help, self.label)
        for c in chips:
            current = getattr(c, self.field)
            if current is None:
                continue
            for state in self.states:
                family.add_metric([*ids(c), state], 1.0 if state == current else 0.0)
        return family


@dataclass(frozen=True)
class Members:
    """1 per member of a tuple ``field``; a member is one label value or a tuple of them.

    npu_error_code_info{npu="0",chip="0",code="8C03A000",level="restart_npu"} 1
    """

    name: str
    help: str
    labels: tuple[str, ...]
    field: str

    def __post_init__(self) -> None:
        _check((self.field,), self.name, self.labels)

    def render(self, chips: Sequence[ChipReading]) -> Metric:
        family = _gauge(self.name, self.help, *self.labels)
        for c in chips:
            for member in getattr(c, self.field):
                values = member if isinstance(member, tuple) else (member,)
                family.add_metric([*ids(c), *(str(v) for v in values)], 1.0)
        return family


@dataclass(frozen=True)
class Info:
    """An info metric (always 1) whose labels are the known (name, value) pairs of ``field``;
    no sample for a chip whose ``field`` is None (not read yet).

    npu_chip_info{npu="0",chip="0",name="910B4",bus_id="0000:C1:00.0",logic_id="0"} 1
    """

    name: str
    help: str
    field: str

    def __post_init__(self) -> None:
        _check((self.field,), self.name)

    def render(self, chips: Sequence[ChipReading]) -> Metric:
        family = Metric(self.name, self.help, "gauge")
        for c in chips:
            known = getattr(c, self.field)
            if known is None:  # not read yet: one complete label set later, not two series
                continue
            labels = dict(zip(CHIP_LABELS, ids(c), strict=True)) | dict(known)
            family.samples.append(sample(self.name, labels, 1.0))
        return family


Family = Gauge | Counter | StateSet | Members | Info
Renderer = Callable[[NodeSnapshot], Iterable[Metric]]


def sample(name: str, labels: dict[str, str], value: float) -> Sample:
    """A raw sample: lets one family carry different label sets (unknown labels left out)."""
    return Sample(name, labels, value, None, None)


def render_table(table: Sequence[Family]) -> Renderer:
    """A renderer for a family table (rows with ``render(chips)``)."""

    def render(snap: NodeSnapshot) -> Iterator[Metric]:
        for row in table:
            yield row.render(snap.chips)

    return render
