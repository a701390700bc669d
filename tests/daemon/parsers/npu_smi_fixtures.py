"""Where the npu-smi fixtures live, which parser reads each one, and how to load them."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from typing import Any

from npumon.daemon.model.chips import (
    BoardReport,
    ChipMapping,
    CommonReport,
    EccReport,
    HealthReport,
    InfoTable,
    KnownFailure,
    MemoryReport,
    UsagesReport,
)
from npumon.daemon.model.network import ErrorCounts, HccsBandwidth, HccsReport
from npumon.daemon.parsers.board import parse_board
from npumon.daemon.parsers.detail import (
    parse_common,
    parse_ecc,
    parse_memory,
    parse_usages,
)
from npumon.daemon.parsers.failure import classify_failure
from npumon.daemon.parsers.health import parse_health
from npumon.daemon.parsers.interconnect import parse_hccs, parse_hccs_bw, parse_pcie_err, parse_sio
from npumon.daemon.parsers.mapping import parse_mapping
from npumon.daemon.parsers.table import parse_info
from tests import support

FIXTURES = support.FIXTURES / "npu-smi"

# Outputs npumon never parses (interactive or human-only views); kept as real samples anyway.
NOT_PARSED_BY_DESIGN = {
    "info_watch_*": "npu-smi info watch scrolls forever; npumon polls the table and -t instead",
    "info_t_topo_*": "topology is static and not part of the metric contract",
    "info_help_*": "help text: the command inventory, read by people",
    "info_t_power_*": "the table and -t common already give each chip's power",
    "info_t_temp_*": "the table and -t common already give each chip's temperature",
    "info_l_*": "npu-smi info -l: the table and -m already give the NPUs and chips",
    "info_vnpu_*": "npu-smi info -t info-vnpu: vNPUs are attributed from the kubelet's devices",
    "info_t_vnpu_mode_*": "npu-smi info -t vnpu-mode: a static setting, no metric",
}

# File-name pattern -> (parser, result type). First match wins; order matters (info_* last).
PARSERS: list[tuple[str, Callable[[str], Any], type]] = [
    ("error_*", classify_failure, KnownFailure),
    ("info_t_usages_*", parse_usages, UsagesReport),
    ("info_t_common_*", parse_common, CommonReport),
    ("info_t_memory_*", parse_memory, MemoryReport),
    ("info_t_ecc_*", parse_ecc, EccReport),
    ("info_t_health_*", parse_health, HealthReport),
    ("info_t_board_*", parse_board, BoardReport),
    ("info_t_hccs_bw_*", parse_hccs_bw, HccsBandwidth),
    ("info_t_hccs_*", parse_hccs, HccsReport),
    ("info_t_pcie_err_*", parse_pcie_err, ErrorCounts),
    ("info_t_sio_info_*", parse_sio, ErrorCounts),
    ("info_m_*", parse_mapping, ChipMapping),
    ("info_*", parse_info, InfoTable),
]

FRAGMENT_MARKER = "<<< FRAGMENT BREAK"


def fixture_names() -> list[str]:
    return sorted(p.name for p in FIXTURES.glob("*.txt"))


def not_parsed_reason(name: str) -> str | None:
    for pattern, reason in NOT_PARSED_BY_DESIGN.items():
        if fnmatch.fnmatch(name, pattern):
            return reason
    return None


def parser_for(name: str) -> tuple[Callable[[str], Any], type]:
    for pattern, parser, result_type in PARSERS:
        if fnmatch.fnmatch(name, pattern):
            return parser, result_type
    raise LookupError(f"no parser mapped for fixture {name}")


def fixture_text(name: str) -> str:
    """The file as npu-smi printed it.

    The FRAGMENTS file joins two excerpts of one real output with a marker line that is not
    npu-smi output, and its last line was cut mid-row by the excerpt: both are removed here
    (the file itself stays byte-for-byte as published).
    """
    text = (FIXTURES / name).read_bytes().decode("utf-8")
    if "FRAGMENTS" not in name:
        return text
    lines = [line for line in text.splitlines() if not line.startswith(FRAGMENT_MARKER)]
    return "\n".join(lines[:-1]) + "\n"
