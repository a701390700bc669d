"""Physically possible values: a parsed result with the impossible ones dropped, and their names.

The bound of a field follows from its unit, which the metric contract puts in every field name
(`temperature_celsius`, `power_watts`, `hbm_used_bytes`, ...), so one table covers every parser
and a new field is checked the day it is added; so is an ``X_used_bytes`` above its
``X_total_bytes``. A value outside its bound becomes ``None``
(absent: no sample, never 0) and is reported by field name; the caller counts it
(`npumon_values_rejected_total{field}`). Pure: no logging, no state.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

GIB = 1024**3

# (field name suffix, lowest, highest): the first suffix that matches decides.
BOUNDS: tuple[tuple[str, float, float], ...] = (
    ("_celsius", -40.0, 150.0),  # below any datacentre's air; above any die's shutdown point
    ("_watts", 0.0, 2000.0),  # no NPU card, even with its board, draws 2 kW
    ("_ratio", 0.0, 1.0),  # a share of 100 %
    ("_bytes", 0.0, 1024.0 * GIB),  # 1 TiB: memory per chip is at most a few hundred GiB
    ("_hertz", 0.0, 10e9),  # 10 GHz: AI Core and memory clocks are 1-3.2 GHz
    # counts of things: pages, errors, cores
    ("_total", 0.0, float("inf")),
    ("_errors", 0.0, float("inf")),
    ("_pages", 0.0, float("inf")),
    ("_count", 0.0, float("inf")),
    ("_used", 0.0, float("inf")),  # hugepages_used
)
# npu-smi prints rounded percentages: 100.4 % is 1.0, -0.2 % is 0.0, neither is rejected
RATIO_ROUNDING = 0.005


@dataclass(frozen=True, slots=True)
class Rejected:
    """One value outside its field's bound."""

    field: str
    value: float


def bound(field: str) -> tuple[float, float] | None:
    """(lowest, highest) for a field name, or None when it is no measurement (ids, text)."""
    for suffix, low, high in BOUNDS:
        if field.endswith(suffix):
            return low, high
    return None


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, tuple[float, float] | None], ...]:
    """A dataclass's field names with their bounds, worked out once per class."""
    return tuple((f.name, bound(f.name)) for f in dataclasses.fields(cls))


def _check(
    field: str, limits: tuple[float, float] | None, value: float
) -> tuple[float | None, bool]:
    """(value to keep, rejected?) for one number."""
    if limits is None:
        return value, False
    low, high = limits
    if low <= value <= high:
        return value, False
    if field.endswith("_ratio") and low - RATIO_ROUNDING <= value <= high + RATIO_ROUNDING:
        return min(max(value, low), high), False
    return None, True


def screen(result: T) -> tuple[T, tuple[Rejected, ...]]:
    """``result`` with every out-of-bound number replaced by None, and what was replaced.

    Walks frozen dataclasses and tuples of them (table chips, processes, per-chip blocks);
    returns ``result`` itself when nothing changed."""
    rejected: list[Rejected] = []
    return _screen(result, rejected), tuple(rejected)


def _screen(value: Any, rejected: list[Rejected]) -> Any:
    if isinstance(value, tuple):
        items = tuple(_screen(item, rejected) for item in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return value
    changes: dict[str, Any] = {}
    for name, limits in _fields(type(value)):
        old = getattr(value, name)
        if isinstance(old, int | float) and not isinstance(old, bool):
            new, dropped = _check(name, limits, old)
            if dropped:
                rejected.append(Rejected(name, float(old)))
        else:
            new = _screen(old, rejected)
        if new is not old:
            changes[name] = new
    for used, total in _used_and_total(type(value)):  # more used than there is: the used goes
        amount = changes.get(used, getattr(value, used))
        whole = changes.get(total, getattr(value, total))
        if amount is not None and whole is not None and amount > whole:
            rejected.append(Rejected(used, float(amount)))
            changes[used] = None
    return dataclasses.replace(value, **changes) if changes else value


@functools.cache
def _used_and_total(cls: type) -> tuple[tuple[str, str], ...]:
    """The (X_used_bytes, X_total_bytes) field pairs of a dataclass."""
    names = {f.name for f in dataclasses.fields(cls)}
    pairs = ((n, n.replace("_used_bytes", "_total_bytes")) for n in names)
    return tuple(sorted((u, t) for u, t in pairs if u.endswith("_used_bytes") and t in names))
