"""The family vocabulary: every family npumon writes is one `Family` row, and `write` is its
one writer (text format 0.0.4 and OpenMetrics 1.0) for /metrics, the textfile and `collect`.

A row names the family (counters without _total), its type, HELP, unit and label names, and
``samples(model)``: the (label values, value) pairs it has in the model it reads (a
NodeSnapshot for the collectors). A value of None is no sample; a family without samples is
left out. Label values are given in the order of ``labels``; a row with ``optional`` labels
(only the known ones are written) gives each sample's labels as a {name: value} mapping.

    Family("npu_power_watts", "gauge", "Chip power draw in watts.", ("npu", "chip"),
           lambda snap: ((ids(c), c.power_watts) for c in snap.chips), unit="watts")

Names are checked when the row is built, so a typo fails at import. The helpers below build
the per-chip rows from a ChipReading field name, checked against ChipReading.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from operator import itemgetter
from typing import Any

from npumon.daemon.model.reading import ChipReading
from npumon.exporters.writer import (
    escaped,
    label_names,
    line_format,
    metric_name,
    openmetrics_head,
    text_head,
    value_text,
)

CHIP_LABELS = ("npu", "chip")
SAMPLED = "Sampled in the background by npumon; see npumon_source_last_success_timestamp_seconds."
TYPES = ("gauge", "counter")
_FIELDS = frozenset(f.name for f in fields(ChipReading))

Samples = Callable[[Any], Iterable[tuple[Any, Any]]]  # model -> (label values, value | None)


@dataclass(frozen=True)
class Family:
    """One metric family: what the docs list and what the writer writes."""

    name: str  # a counter's without _total
    type: str  # gauge or counter
    help: str
    labels: tuple[str, ...]  # the label names every sample has, in the order samples give them
    samples: Samples = field(repr=False, compare=False)
    unit: str = ""  # OpenMetrics' UNIT line; "" for none
    optional: tuple[str, ...] = ()  # label names only the samples that know them carry

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"{self.name}: type {self.type!r} is neither gauge nor counter")
        metric_name(self.name)
        metric_name(self.sample_name)
        label_names(tuple(sorted((*self.labels, *self.optional))))

    @property
    def sample_name(self) -> str:
        """The name on the sample lines (a counter's with _total)."""
        return self.name + ("_total" if self.type == "counter" else "")

    @cached_property
    def _heads(self) -> dict[bool, str]:
        return {
            False: text_head(self.sample_name, self.type, self.help),
            True: openmetrics_head(self.name, self.type, self.help, self.unit),
        }

    @cached_property
    def _template(self) -> tuple[str, Callable[[Sequence[object]], tuple[object, ...]]]:
        """The sample line's %-format, and what picks a sample's label values in its order
        (the label names sorted)."""
        form, names = line_format(self.sample_name, self.labels)
        order = [self.labels.index(n) for n in names]
        if len(order) > 1:
            return form, itemgetter(*order)
        return form, (lambda values: tuple(values[i] for i in order))

    def lines(self, model: Any, openmetrics: bool) -> list[str]:
        """The family's exposition lines for ``model``; none when it has no sample."""
        return self.format(self.samples(model), openmetrics)

    def format(self, samples: Iterable[tuple[Any, Any]], openmetrics: bool) -> list[str]:
        """The family's exposition lines for ``samples``; none when there is none."""
        out: list[str] = []
        if self.optional:  # each sample names its labels
            for labels, value in samples:
                if value is not None:
                    form, names = line_format(self.sample_name, tuple(labels))
                    out.append(form % (*_texts(tuple(labels[n] for n in names)), value_text(value)))
        else:
            form, pick = self._template
            for values, value in samples:
                if value is not None:
                    out.append(form % (*_texts(pick(values)), value_text(value)))
        return [self._heads[openmetrics], *out] if out else []


def _texts(values: tuple[object, ...]) -> tuple[str, ...]:
    """Label values as text (an int lane or link as str() writes it), escaped where needed."""
    try:
        joined = "".join(values)  # type: ignore[arg-type]
    except TypeError:
        values = tuple(map(str, values))
        joined = "".join(values)  # type: ignore[arg-type]
    if "\\" in joined or '"' in joined or "\n" in joined:
        return tuple(escaped(str(v)) for v in values)
    return values  # type: ignore[return-value]


def write(families: Iterable[tuple[Family, Any]], openmetrics: bool) -> bytes:
    """(row, the model it reads) pairs as exposition text, without OpenMetrics' ``# EOF``."""
    return "".join([line for f, model in families for line in f.lines(model, openmetrics)]).encode()


# Per-chip rows from ChipReading fields


def ids(c: ChipReading) -> tuple[str, str]:
    """The identity label values (npu, chip) of a chip's series."""
    return str(c.npu), str(c.chip)


def _check(*names: str) -> None:
    unknown = [n for n in names if n not in _FIELDS]
    if unknown:
        raise ValueError(f"no ChipReading field {unknown}; add it in daemon/model/reading.py")


def gauge(name: str, doc: str, attr: str, unit: str = "") -> Family:
    """One sample per chip whose field ``attr`` is known.

    npu_power_watts{npu="0",chip="0"} 93.4
    """
    _check(attr)
    return Family(
        name,
        "gauge",
        f"{doc} {SAMPLED}",
        CHIP_LABELS,
        lambda snap: ((ids(c), getattr(c, attr)) for c in snap.chips),
        unit,
    )


def counter(name: str, doc: str, label: str, parts: tuple[tuple[str, str], ...]) -> Family:
    """A counter per chip and label value, each from its own field: (label value, field).

    npu_hbm_ecc_errors_total{npu="0",chip="0",bits="single"} 0
    """
    _check(*(f for _, f in parts))
    return Family(
        name,
        "counter",
        f"{doc} {SAMPLED}",
        (*CHIP_LABELS, label),
        lambda snap: (((*ids(c), v), getattr(c, f)) for c in snap.chips for v, f in parts),
    )


def state_set(name: str, doc: str, label: str, states: tuple[str, ...], attr: str) -> Family:
    """1 on the state field ``attr`` holds, 0 on the others; no series while it is None.

    npu_health_state{npu="0",chip="0",state="ok"} 1
    """
    _check(attr)

    def samples(snap: Any) -> Iterable[tuple[tuple[str, ...], float]]:
        for c in snap.chips:
            current = getattr(c, attr)
            if current is not None:
                for s in states:
                    yield (*ids(c), s), 1.0 if s == current else 0.0

    return Family(name, "gauge", f"{doc} {SAMPLED}", (*CHIP_LABELS, label), samples)


def members(name: str, doc: str, labels: tuple[str, ...], attr: str) -> Family:
    """1 per member of a tuple field; a member is one label value or a tuple of them.

    npu_error_code_info{npu="0",chip="0",code="8C03A000",level="restart_npu"} 1
    """
    _check(attr)

    def samples(snap: Any) -> Iterable[tuple[tuple[object, ...], float]]:
        for c in snap.chips:
            for m in getattr(c, attr):
                yield (*ids(c), *(m if isinstance(m, tuple) else (m,))), 1.0

    return Family(name, "gauge", f"{doc} {SAMPLED}", (*CHIP_LABELS, *labels), samples)


def info(name: str, doc: str, attr: str, optional: tuple[str, ...]) -> Family:
    """Always 1, labelled with the known (name, value) pairs of field ``attr``; no sample for
    a chip whose field is None (not read yet: one complete label set later, not two series).

    npu_chip_info{npu="0",chip="0",name="910B4",bus_id="0000:C1:00.0",logic_id="0"} 1
    """
    _check(attr)

    def samples(snap: Any) -> Iterable[tuple[dict[str, str], float]]:
        for c in snap.chips:
            known = getattr(c, attr)
            if known is not None:
                yield dict(zip(CHIP_LABELS, ids(c), strict=True)) | dict(known), 1.0

    return Family(name, "gauge", doc, CHIP_LABELS, samples, optional=optional)
