"""Parser for `npu-smi info -t health -i N -c M` (one chip's health and error codes)."""

from __future__ import annotations

import re

from npumon.daemon.model.chips import HealthReport
from npumon.daemon.parsers import values
from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.keyvalue import read_fields

_CODE = re.compile(r"[0-9A-Fa-f]+\Z")  # %04X codes; unknown codes print in decimal, also matched


def parse_health(text: str) -> HealthReport:
    """Health Status and the space-separated Error Code list.

    Error Information (the codes' texts, not read: the fault table names each code) continues
    on lines that are indented and start with `: ` (the key is empty), sometimes with blank
    lines between them.
    """
    status: str | None = None
    seen_status = False
    codes: tuple[str, ...] = ()
    in_info = False
    for f in read_fields(text):
        if f is None:
            continue
        # "Health" on the 950 manual's example (`-t health -i N`); the source prints "Health
        # Status" there too (`print_diagnosis_info`, hicann driver `npu_info_print_ext.c`)
        if f.key in ("health status", "health"):
            if seen_status:
                raise ParseError("more than one chip in -t health output", f.line_no, f.line)
            status, seen_status, in_info = values.optional_text(f.value), True, False
        elif f.key == "error code":
            tokens = [] if values.is_absent(f.value) else f.value.split()
            if not all(_CODE.match(t) for t in tokens):
                raise ParseError("error codes must be hexadecimal", f.line_no, f.line)
            codes, in_info = tuple(tokens), False
        elif f.key == "error information" or (f.key == "" and in_info):
            in_info = True
        elif f.key == "":
            raise ParseError("continuation line outside Error Information", f.line_no, f.line)
        else:
            in_info = False  # NPU ID, Chip ID, newer fields: not ours
    if not seen_status:
        raise ParseError("no Health Status line", 0, "")
    return HealthReport(status=status, error_codes=codes)
