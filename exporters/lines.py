"""Families written as exposition lines straight from the model, without prometheus_client's
Metric objects: for the collectors with thousands of samples (network.py).

A LineFamily is declared once (its names checked at import) and holds its sample line template
with the label names sorted, as prometheus_client and writer.py write them; each sample is one
``%``-format of its label values and writer.value_text of its value:

    npu_network_receive_errors_total{chip="0",kind="fcs",npu="0",port="0"} 0.0

A LineRenderer serves both paths of NpuCollector: ``write`` for ``exposition()``, and, called
as a Renderer, the same rows as Metric families for ``collect()`` (the textfile, ``npumon
collect``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from operator import itemgetter
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.spec import SAMPLED
from npumon.exporters.writer import (
    escaped,
    line_format,
    metric_name,
    openmetrics_head,
    text_head,
    value_text,
)

Items = Sequence[tuple[tuple[str, ...], Any]]  # (identity label values, the series' model)


class LineFamily:
    """A gauge or counter family (``name`` without _total), its heads and sample template.

    ``value(item)`` is the item's value (None: no sample), or with ``extra`` label names its
    (extra label values..., value) rows. ``text``: the extra values may hold any text (escaped).
    """

    def __init__(
        self,
        name: str,
        kind: str,
        doc: str,
        identity: tuple[str, ...],
        value: Callable[[Any], Any],
        extra: tuple[str, ...] = (),
        *,
        text: bool = False,
    ) -> None:
        if kind not in ("gauge", "counter"):
            raise ValueError(f"{name}: kind {kind!r} is neither gauge nor counter")
        self.name, self.kind, self.doc = name, kind, f"{doc} {SAMPLED}"
        self.labels, self.value, self.extra, self.text = (*identity, *extra), value, extra, text
        sample = metric_name(name + ("_total" if kind == "counter" else ""))
        self.template, names = line_format(sample, self.labels)
        # (label values in self.labels order..., value) -> the same in the template's order
        self.arrange = itemgetter(*(self.labels.index(n) for n in names), len(names))
        self.heads = {
            False: text_head(sample, kind, self.doc),
            True: openmetrics_head(metric_name(name), kind, self.doc),
        }

    def lines(self, items: Items, openmetrics: bool) -> list[str]:
        """The family's lines; none when it has no sample (as NpuCollector leaves it out)."""
        form, arrange, get, number = self.template, self.arrange, self.value, value_text
        # %s writes an int label value (a lane, a link) as str() does
        if not self.extra:
            out = [
                form % arrange((*ids, number(v)))
                for ids, item in items
                if (v := get(item)) is not None
            ]
        elif self.text:
            out = [
                form % arrange((*ids, *(escaped(str(x)) for x in labels), number(v)))
                for ids, item in items
                for *labels, v in get(item)
            ]
        else:
            out = [
                form % arrange((*ids, *labels, number(v)))
                for ids, item in items
                for *labels, v in get(item)
            ]
        return [self.heads[openmetrics], *out] if out else []

    def metric(self, items: Items) -> Metric:
        """The same samples as a prometheus_client family."""
        make = CounterMetricFamily if self.kind == "counter" else GaugeMetricFamily
        family = make(self.name, self.doc, labels=self.labels)
        for ids, item in items:
            if not self.extra:
                if (v := self.value(item)) is not None:
                    family.add_metric(list(ids), float(v))
                continue
            for *labels, v in self.value(item):
                family.add_metric([*ids, *map(str, labels)], float(v))
        return family


class LineRenderer:
    """A Renderer (Metric families, for ``collect()``) whose ``write`` gives the same families'
    exposition text directly; ``items(snap)`` are the series' identities and model objects."""

    def __init__(self, items: Callable[[NodeSnapshot], Items], table: Sequence[LineFamily]) -> None:
        self.items, self.table = items, table

    def __call__(self, snap: NodeSnapshot) -> Iterator[Metric]:
        items = self.items(snap)
        return (family.metric(items) for family in self.table)

    def write(self, snap: NodeSnapshot, openmetrics: bool) -> bytes:
        items = self.items(snap)
        return "".join([line for f in self.table for line in f.lines(items, openmetrics)]).encode()
