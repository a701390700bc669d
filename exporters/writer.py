"""The exposition writer for npumon's own families: text format 0.0.4 and OpenMetrics 1.0.

prometheus_client's encoders check and escape every metric and label name of every sample. npumon's
names are fixed in its code (the family tables check theirs at import), so here each distinct name
is checked once and remembered, and per sample only the label values are escaped, as both formats
say: backslash, double quote and line feed. For the families npumon renders (gauges, counters,
untyped; no timestamps, exemplars or _created samples) the bytes are prometheus_client's; any
other family is handed to prometheus_client's encoder.

    # HELP npu_power_watts Chip power draw in watts. ...
    # TYPE npu_power_watts gauge
    npu_power_watts{chip="0",npu="0"} 93.4
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, KeysView, Mapping
from functools import lru_cache
from operator import itemgetter
from typing import Any, cast

from prometheus_client import CollectorRegistry
from prometheus_client import exposition as text_format
from prometheus_client.core import Metric
from prometheus_client.openmetrics import exposition as openmetrics_format
from prometheus_client.utils import floatToGoString

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
_TEXT_TYPES = {"gauge": "gauge", "counter": "counter", "unknown": "untyped"}
_PLAIN_SUFFIXES = {"gauge": "", "counter": "_total", "unknown": ""}
_value: Callable[[float], str] = floatToGoString  # "1.0", "+Inf", "1.7e+09": Go's float text


@lru_cache(maxsize=4096)
def metric_name(name: str) -> str:
    """``name`` when it is a valid metric name (checked once per name), else ValueError."""
    if not _METRIC_NAME.match(name):
        raise ValueError(f"invalid metric name {name!r}")
    return name


@lru_cache(maxsize=4096)
def label_names(names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` when each is a valid label name (checked once per tuple), else ValueError."""
    bad = [n for n in names if not _LABEL_NAME.match(n) or n.startswith("__")]
    if bad:
        raise ValueError(f"invalid label names {bad}")
    return names


def value_text(value: float) -> str:
    """A sample value as both formats write it: Go's float text ("1.0", "+Inf", "1.7e+09")."""
    if value >= 1e6:  # Go's text has an exponent (or is +Inf): no repr to look at first
        return _value(value)
    text = float.__repr__(float(value))
    if len(text) > 7 or text[-1] > "9":  # nan, or where Go's text may differ from Python's
        return _value(value)
    return text


def escaped(value: str) -> str:
    """A label value (or OpenMetrics HELP) escaped: backslash, double quote, line feed."""
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
    return value


@lru_cache(maxsize=4096)
def line_format(name: str, keys: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """A sample line's %-format for ``name`` with the label names ``keys``, and those names in
    the order they appear (sorted, as prometheus_client sorts them)."""
    names = _sorted_names(keys)
    pairs = ",".join(f'{n}="%s"' for n in names)
    return (f"{name}{{{pairs}}} %s\n" if names else f"{name} %s\n"), names


@lru_cache(maxsize=4096)
def _sorted_names(names: tuple[str, ...]) -> tuple[str, ...]:
    return label_names(tuple(sorted(names)))


def _samples(family: Metric) -> list[str] | None:
    """The family's sample lines; None when one is beyond this writer (a timestamp, an
    exemplar, a name other than the family's)."""
    name = metric_name(family.name + _PLAIN_SUFFIXES[family.type])
    lines: list[str] = []
    keys: KeysView[str] | None = None
    form, single = "", False
    get: Callable[[Mapping[str, str]], Any] = _no_values
    for s in family.samples:
        if (
            s.name != name
            or s.timestamp is not None
            or s.exemplar is not None
            or (s.native_histogram is not None)
        ):
            return None
        labels = s.labels
        if keys is None or labels.keys() != keys:  # label names change: a new line format
            keys = labels.keys()
            form, names = line_format(name, tuple(keys))
            get, single = (itemgetter(*names) if names else _no_values), len(names) == 1
        values: tuple[str, ...] = (get(labels),) if single else get(labels)
        joined = "".join(values)
        if "\\" in joined or '"' in joined or "\n" in joined:
            values = tuple(map(escaped, values))
        lines.append(form % (*values, value_text(s.value)))
    return lines


def _no_values(labels: Mapping[str, str]) -> tuple[str, ...]:
    return ()


def text_head(name: str, kind: str, doc: str) -> str:
    """The text format's HELP and TYPE lines of a family (``name`` with its _total)."""
    doc = doc.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {name} {doc}\n# TYPE {name} {_TEXT_TYPES[kind]}\n"


def openmetrics_head(name: str, kind: str, doc: str, unit: str = "") -> str:
    """OpenMetrics' HELP, TYPE and UNIT lines of a family (``name`` without its _total)."""
    unit_line = f"# UNIT {name} {unit}\n" if unit else ""
    return f"# HELP {name} {escaped(doc)}\n# TYPE {name} {kind}\n{unit_line}"


def _text_head(family: Metric) -> list[str]:
    name = family.name + _PLAIN_SUFFIXES[family.type]
    return [text_head(name, family.type, family.documentation)]


def _openmetrics_head(family: Metric) -> list[str]:
    return [
        openmetrics_head(metric_name(family.name), family.type, family.documentation, family.unit)
    ]


class _Families:
    """The ``collect()`` prometheus_client's encoders call, over families already rendered."""

    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> list[Metric]:
        return self._families


def _reference_text(family: Metric) -> str:
    return text_format.generate_latest(cast(CollectorRegistry, _Families([family]))).decode()


def _reference_openmetrics(family: Metric) -> str:
    body: bytes = openmetrics_format.generate_latest(  # type: ignore[no-untyped-call]
        _Families([family])
    )
    return body.decode().removesuffix("# EOF\n")


def _writer(
    head: Callable[[Metric], list[str]], reference: Callable[[Metric], str]
) -> Callable[[Iterable[Metric]], bytes]:
    def encode(families: Iterable[Metric]) -> bytes:
        out: list[str] = []
        for family in families:
            lines = _samples(family) if family.type in _TEXT_TYPES else None
            if lines is None:
                out.append(reference(family))
            else:
                out.extend(head(family))
                out.extend(lines)
        return "".join(out).encode()

    return encode


text = _writer(_text_head, _reference_text)
"""Families as text format 0.0.4."""
openmetrics = _writer(_openmetrics_head, _reference_openmetrics)
"""Families as OpenMetrics 1.0, without the closing ``# EOF`` (the registry's encoder adds it)."""
