"""Recognise npu-smi's known error texts, so a failure gets a clear reason and advice."""

from __future__ import annotations

import re
from dataclasses import dataclass

from npumon.daemon.model.chips import KnownFailure


@dataclass(frozen=True, slots=True)
class _Pattern:
    regex: re.Pattern[str]
    reason: str
    advice: str


# Exact strings from npu-smi's source (npu_smi.c / npu_parameter_parse.c); see npu-smi.md s.7.
# Order matters: the "device is used" text must win over the plain init failure.
_PATTERNS = (
    _Pattern(
        re.compile(r"dcmi model initiali[sz]ed failed, because the device is used"),
        "device_busy",
        "another process holds the device exclusively (an upgrade or a reset in progress?); "
        "retry later",
    ),
    _Pattern(
        re.compile(r"dcmi module initiali[sz]e failed"),
        "dcmi_init",
        "run npumon as root or as a user in the HwHiAiUser group; if the NPU firmware was "
        "upgraded, reboot the node (ret -8005 is typical of both)",
    ),
    _Pattern(
        re.compile(r"Invalid card id\."),
        "invalid_card",
        "the NPU ID is not present: a card may have fallen off the PCIe bus; compare "
        "`lspci | grep -i d80` and `npu-smi info -l` with the expected card count",
    ),
    _Pattern(
        re.compile(r"Invalid (chip|phy) id\."),
        "invalid_chip",
        "the chip id is not present on this card; check `npu-smi info -m`",
    ),
    _Pattern(
        re.compile(r"There is no NPU (card on this server|chip on this card)\."),
        "no_device",
        "no NPU visible: check the driver is loaded (`lsmod | grep drv`), the devices in "
        "/dev/davinci*, and that a container was given the devices",
    ),
    _Pattern(
        re.compile(
            r"This device does not support querying|NPU is working in SMP mode, does not "
            r"support querying|Error parameter in querying chip info"
        ),
        "not_supported",
        "this chip or driver does not offer the query; npumon stops asking and retries hourly",
    ),
    _Pattern(
        re.compile(r"This device does not support input parameter of -c\."),
        "unknown_option",
        "this npu-smi (the Ascend 950's NPU_SMI_V2 build) takes `-i <NPU ID>` alone: one chip "
        "per NPU ID; npumon asks so once a table in that layout was read",
    ),
    _Pattern(
        re.compile(r"Command or option is not found\."),
        "unknown_option",
        "this npu-smi version does not know the command; check the driver version",
    ),
    _Pattern(
        re.compile(r"Failed to execute npu-smi"),
        "command_failed",
        "npu-smi failed inside the driver; see its return code and the driver logs "
        "(/var/log/npu/slog)",
    ),
)


# lines npu-smi prints after some error texts ("Invalid card id." / "Error parameter of -i" /
# "Usage: npu-smi info <watch|proc|...> [Options...]")
_CONTINUATION = re.compile(r"Error parameter of |Usage: npu-smi ")


def classify_whole_output(text: str) -> KnownFailure | None:
    """A known npu-smi error when it is the whole output, else None: for a command that
    exited 0. Every non-blank line must begin with a known error text (or be one of npu-smi's
    continuation lines), so a process named "Invalid phy id." inside a table, or a board
    field quoting one, is data and not a failure."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if not (_CONTINUATION.match(line) or any(p.regex.match(line) for p in _PATTERNS)):
            return None
    return classify_failure(text) if lines else None


def classify_failure(text: str) -> KnownFailure | None:
    """The first known npu-smi error anywhere in ``text`` (stdout and/or stderr), or None: for
    a command that failed (for one that exited 0 see ``classify_whole_output``)."""
    for pattern in _PATTERNS:
        for line in text.splitlines():
            if pattern.regex.search(line):
                return KnownFailure(
                    reason=pattern.reason, message=line.strip(), advice=pattern.advice
                )
    return None
