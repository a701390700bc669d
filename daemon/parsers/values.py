"""The one place that knows npu-smi's absent tokens and converts units while parsing."""

from __future__ import annotations

import re

from npumon.daemon.parsers.errors import ParseError

ABSENT_TOKENS = frozenset({"", "NA", "N/A", "-", "--"})
MIB = 1024 * 1024
MHZ = 1_000_000.0

# bounded digit counts: int() refuses > 4300 digits with a plain ValueError, and no npu-smi
# value is anywhere near 18 digits
_INT = re.compile(r"[+-]?\d{1,18}\Z")
_FLOAT = re.compile(r"[+-]?(\d{1,18}(\.\d{0,18})?|\.\d{1,18})\Z")
_FRACTION = re.compile(r"(?P<used>\S*?)\s*/\s*(?P<total>\S*)\Z")


def is_absent(token: str) -> bool:
    """True for the tokens npu-smi prints instead of a value."""
    return token.strip() in ABSENT_TOKENS


def parse_int(token: str, *, line_no: int = 0, line: str = "") -> int | None:
    """An integer, or None when absent; anything else is a ParseError."""
    text = token.strip()
    if text in ABSENT_TOKENS:
        return None
    if not _INT.match(text):
        raise ParseError(f"expected an integer, got {text!r}", line_no, line)
    return int(text)


def parse_float(token: str, *, line_no: int = 0, line: str = "") -> float | None:
    """A decimal number, or None when absent; anything else is a ParseError."""
    text = token.strip()
    if text in ABSENT_TOKENS:
        return None
    if not _FLOAT.match(text):
        raise ParseError(f"expected a number, got {text!r}", line_no, line)
    return float(text)


def percent_to_ratio(token: str, *, line_no: int = 0, line: str = "") -> float | None:
    """npu-smi prints percentages; Prometheus wants 0..1. A value outside 0..100 % is a number
    all the same: ``plausible.screen`` drops it (and counts it) without failing the output."""
    value = parse_float(token, line_no=line_no, line=line)
    return None if value is None else value / 100.0


def mib_to_bytes(token: str, *, line_no: int = 0, line: str = "") -> int | None:
    """npu-smi memory figures are MB (MiB); metrics are bytes."""
    value = parse_int(token, line_no=line_no, line=line)
    return None if value is None else value * MIB


def mhz_to_hertz(token: str, *, line_no: int = 0, line: str = "") -> float | None:
    value = parse_float(token, line_no=line_no, line=line)
    return None if value is None else value * MHZ


def parse_fraction(text: str, *, line_no: int = 0, line: str = "") -> tuple[int | None, int | None]:
    """``"577  / 7759"``, ``"61825/ 65536"``, ``"NA / 7759"`` -> (used, total) as integers."""
    match = _FRACTION.match(text.strip())
    if not match:
        raise ParseError(f"expected 'used / total', got {text.strip()!r}", line_no, line)
    return (
        parse_int(match["used"], line_no=line_no, line=line),
        parse_int(match["total"], line_no=line_no, line=line),
    )


def optional_text(token: str) -> str | None:
    """A free-text value, None when absent."""
    text = token.strip()
    return None if text in ABSENT_TOKENS else text
