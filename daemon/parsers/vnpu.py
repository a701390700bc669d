"""`npu-smi info -t info-vnpu` (a chip's vNPUs and free resources) and `-t vnpu-mode`.

Layouts seen: the 2024 910B4 box (resource block, total, header, one row per vNPU, each followed
by a `+---` line), npu-smi 26.0.rc1 (no header when there are none), and a 310P3 fragment that
starts at `Total number of vnpu` with rows not separated. All are accepted.
"""

from __future__ import annotations

import re

from npumon.daemon.model.npu_smi import Vnpu, VnpuReport
from npumon.daemon.parsers.errors import ParseError

_TOTAL = re.compile(r"^\|\s*Total number of vnpu:\s*(\d+)\s*\|$")
_ROW = re.compile(
    r"^\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*([0-9a-fA-F]{12})\s*\|\s*([01])\s*\|"
    r"\s*(\S+)\s*\|$"
)
_PAIR = re.compile(r"^(\d+|NA)/(\d+|NA)$")
_HEADER = ("Vnpu ID", "Vgroup ID", "Container ID", "Status", "Template Name")


def _resources(lines: list[str]) -> tuple[tuple[str, int | None, int | None], ...]:
    """The Free/Total row under the `AICORE Memory ...` names (absent in a fragment)."""
    names_at = next((i for i, line in enumerate(lines) if "AICORE" in line), None)
    if names_at is None:
        return ()
    names = lines[names_at].strip("| ").split()
    values_at = next((i for i in range(names_at + 1, len(lines)) if "/" in lines[i]), None)
    if values_at is None:
        raise ParseError(
            "no Free/Total row under the resource names", names_at + 1, lines[names_at]
        )
    values = lines[values_at].strip("| ").split()
    if len(values) != len(names):
        raise ParseError(
            f"{len(names)} resource names but {len(values)} values", values_at + 1, lines[values_at]
        )
    out = []
    for name, value in zip(names, values, strict=True):
        pair = _PAIR.match(value)
        if pair is None:
            raise ParseError(
                f"resource {name}: expected Free/Total, got {value!r}",
                values_at + 1,
                lines[values_at],
            )
        free, total = (None if v == "NA" else int(v) for v in pair.groups())
        out.append((name.lower(), free, total))
    return tuple(out)


def parse_info_vnpu(text: str) -> VnpuReport:
    lines = [line.rstrip() for line in text.splitlines()]
    totals = [(i, m) for i, line in enumerate(lines) if (m := _TOTAL.match(line.strip()))]
    if len(totals) != 1:
        raise ParseError("expected one 'Total number of vnpu' line")
    at, match = totals[0]
    vnpus = []
    for number, line in enumerate(lines[at + 1 :], start=at + 2):
        stripped = line.strip()
        if not stripped or stripped.startswith("+") or all(h in stripped for h in _HEADER):
            continue
        row = _ROW.match(stripped)
        if row is None:
            raise ParseError("not a vNPU row", number, line)
        vnpu_id, vgroup, container, status, template = row.groups()
        vnpus.append(Vnpu(int(vnpu_id), int(vgroup), container.lower(), status == "1", template))
    total = int(match.group(1))
    if total != len(vnpus):
        raise ParseError(
            f"'Total number of vnpu: {total}' but {len(vnpus)} rows", at + 1, lines[at]
        )
    return VnpuReport(resources=_resources(lines[:at]), total=total, vnpus=tuple(vnpus))


def parse_vnpu_mode(text: str) -> str:
    """`npu-smi info -t vnpu-mode`: `docker` or `vm` (lower case)."""
    for number, line in enumerate(text.splitlines(), start=1):
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == "vnpu-mode":
            mode = value.strip().lower()
            if mode not in ("docker", "vm"):
                raise ParseError(f"vnpu-mode {mode!r}: expected docker or VM", number, line)
            return mode
    raise ParseError("no 'vnpu-mode' line")
