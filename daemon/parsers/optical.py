"""Parser for `hccn_tool -i <phy> -optical -g`: the optical module's readings and thresholds.

`key : value` lines with keys padded to 21 characters; values carry their unit (`47 C`,
`3262.90 mV`, `4.4035 mW`, `7.9360 mA`; dBm on the 950). `NA`, `not supported` and
`get failed` are absent values. Powers are per lane (`Tx Power0`..`3`); the lane-less keys
(`Tx Power`, printed when the module is absent, and in one documentation example) are lane 0.
"""

from __future__ import annotations

import math
import re

from npumon.daemon.model.network import OpticalReport
from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.hccn_tool import lines

ABSENT = frozenset({"", "na", "n/a", "not supported", "get failed", "unknown"})
_QUANTITY = re.compile(r"(?P<num>[+-]?\d{1,9}(?:\.\d{1,9})?)\s*(?P<unit>[A-Za-z]{1,3})\Z")
_LANED = re.compile(r"(?P<what>tx power|rx power|tx bias)\s?(?P<lane>\d?)\Z")
_THRESHOLD = re.compile(r"(?P<what>vcc|temp|txpower|rxpower) (?P<bound>high|low) thres\Z")
_QUANTITIES = {
    "vcc": "supply_voltage_volts",
    "temp": "temperature_celsius",
    "txpower": "tx_power_watts",
    "rxpower": "rx_power_watts",
}
_TO_BASE = {"c": 1.0, "mv": 1e-3, "v": 1.0, "mw": 1e-3, "w": 1.0, "ma": 1e-3, "a": 1.0}


def dbm_to_watts(dbm: float) -> float:
    """Optical power in dBm (decibels over 1 mW) as watts."""
    return float(10.0 ** (dbm / 10.0)) / 1000.0


def quantity(value: str, *, line_no: int = 0, line: str = "") -> float | None:
    """`4.4035 mW` -> 0.0044035 (base units: W, V, A, Celsius; dBm -> W); absent -> None."""
    text = value.strip()
    if text.lower() in ABSENT:
        return None
    match = _QUANTITY.match(text)
    if match is None:
        raise ParseError(f"expected a number and a unit, got {text!r}", line_no, line)
    number, unit = float(match["num"]), match["unit"].lower()
    if unit == "dbm":
        return dbm_to_watts(number)
    if unit not in _TO_BASE:
        raise ParseError(f"unknown unit {match['unit']!r}", line_no, line)
    scaled = number * _TO_BASE[unit]
    return scaled if math.isfinite(scaled) else None


def _present(value: str, line_no: int, line: str) -> bool:
    text = value.strip().lower()
    if text not in ("present", "not present"):
        raise ParseError("present is neither 'present' nor 'not present'", line_no, line)
    return text == "present"


def parse_optical(text: str) -> OpticalReport:
    """The module's presence, readings (per lane) and its own high/low alarm thresholds."""
    found = list(lines(text))
    if not found or found[0][1].strip() != "optical info:":
        raise ParseError("expected 'optical info:' first", *(found[0] if found else (0, "")))
    kw: dict[str, object] = {}
    laned: dict[str, list[tuple[int, float]]] = {"tx power": [], "rx power": [], "tx bias": []}
    thresholds: list[tuple[str, str, float]] = []
    for line_no, line in found[1:]:
        key, sep, value = line.partition(":")
        if not sep:
            raise ParseError("expected 'key : value'", line_no, line)
        key = " ".join(key.split()).lower()
        laned_key, threshold = _LANED.match(key), _THRESHOLD.match(key)
        if key == "present":
            kw["present"] = _present(value, line_no, line)
        elif key in ("temperature", "vcc"):
            name = "temperature_celsius" if key == "temperature" else "supply_voltage_volts"
            kw[name] = quantity(value, line_no=line_no, line=line)
        elif laned_key is not None:
            reading = quantity(value, line_no=line_no, line=line)
            if reading is not None:
                laned[laned_key["what"]].append((int(laned_key["lane"] or 0), reading))
        elif threshold is not None:
            bound = quantity(value, line_no=line_no, line=line)
            if bound is not None:
                thresholds.append((_QUANTITIES[threshold["what"]], threshold["bound"], bound))
    if "present" not in kw:
        raise ParseError("no 'present' line", 0, "")
    return OpticalReport(
        tx_power_watts=tuple(laned["tx power"]),
        rx_power_watts=tuple(laned["rx power"]),
        tx_bias_amperes=tuple(laned["tx bias"]),
        thresholds=tuple(thresholds),
        **kw,  # type: ignore[arg-type]
    )
