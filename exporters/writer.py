"""The exposition formats' parts, for the family writer (spec.py): text format 0.0.4 and
OpenMetrics 1.0, byte for byte as prometheus_client writes them (its encoders are the reference
of tests/exporters/test_writer.py, the one place the family path meets prometheus_client).

npumon's names are fixed in its code (the family rows check theirs at import), so each distinct
name is checked once and remembered, and per sample only the label values are escaped, as both
formats say: backslash, double quote and line feed. npumon writes gauges and counters, without
timestamps, exemplars or _created samples.

    # HELP npu_power_watts Chip power draw in watts. ...
    # TYPE npu_power_watts gauge
    npu_power_watts{chip="0",npu="0"} 93.4
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
_TEXT_TYPES = {"gauge": "gauge", "counter": "counter"}


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
        return _go_text(value)
    text = float.__repr__(float(value))
    if len(text) > 7 or text[-1] > "9":  # nan, or where Go's text may differ from Python's
        return _go_text(value)
    return text


def _go_text(value: float) -> str:
    """Python's shortest float text with Go's spelling of the infinities and NaN and, for a
    positive number of 7 or more integer digits, Go's exponent form, as client_python writes
    it (its floatToGoString): 1234567.0 is 1.234567e+06, -2500000000.0 stays as it is."""
    number = float(value)
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    if math.isnan(number):
        return "NaN"
    text = repr(number)
    dot = text.find(".")
    if number > 0 and dot > 6:
        mantissa = f"{text[0]}.{text[1:dot]}{text[dot + 1 :]}".rstrip("0.")
        return f"{mantissa}e+{dot - 1:02d}"
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


def text_head(name: str, kind: str, doc: str) -> str:
    """The text format's HELP and TYPE lines of a family (``name`` with its _total)."""
    doc = doc.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {name} {doc}\n# TYPE {name} {_TEXT_TYPES[kind]}\n"


def openmetrics_head(name: str, kind: str, doc: str, unit: str = "") -> str:
    """OpenMetrics' HELP, TYPE and UNIT lines of a family (``name`` without its _total)."""
    unit_line = f"# UNIT {name} {unit}\n" if unit else ""
    return f"# HELP {name} {escaped(doc)}\n# TYPE {name} {kind}\n{unit_line}"
