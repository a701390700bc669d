"""Recognise hccn_tool's error texts (one stderr line from `hccn_tool/cmd.c`) so a failure gets a
reason and advice, as `failure.py` does for npu-smi."""

from __future__ import annotations

import re

from npumon.daemon.model.chips import KnownFailure

# (pattern, reason, advice); exact texts from the driver source's hccn_tool/cmd.c
_PATTERNS = (
    (
        re.compile(r"no ip was preset there"),
        "no_ip",
        "the port has no IP configured (hccn_tool -i N -ip -s ...); npu_network_info has no ip",
    ),
    (
        re.compile(
            r"(The command|This command) is not supported on this product|not support"
            # the 950's -ub_connect on a board that is not a PCIe card (tool_product.c)
            r"|only pcie card support",
            re.IGNORECASE,
        ),
        "not_supported",
        "this chip has no NIC or the driver lacks the query; asked again hourly",
    ),
    (
        re.compile(r"The device is not exist"),
        "no_device",
        "hccn_tool does not know this device ID (npumon passes the physical ID): compare "
        "`npu-smi info -m` with `hccn_tool -i N -link -g`",
    ),
    (
        re.compile(r"(Cmd|Command) execute failed"),
        "command_failed",
        "hccn_tool failed inside the driver; see /var/log/npu/slog and `dmesg`",
    ),
)


def classify_hccn_failure(text: str, *, whole: bool) -> KnownFailure | None:
    """The first known hccn_tool error in ``text``; with ``whole`` (a call that exited 0) only
    when every non-blank line is one, so data quoting an error text stays data."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if whole and not all(any(p.search(line) for p, _, _ in _PATTERNS) for line in lines):
        return None
    for pattern, reason, advice in _PATTERNS:
        for line in lines:
            if pattern.search(line):
                return KnownFailure(reason=reason, message=line, advice=advice)
    return None
