"""Turn an npu-smi argv and a simulated node into what npu-smi would print and exit with."""

from __future__ import annotations

from typing import NamedTuple

from npumon.simulator import render_detail as detail
from npumon.simulator.render_table import render_info, render_list, render_mapping
from npumon.simulator.state import SimNode

USAGE = "Usage: npu-smi info <watch|proc|-h|-m|-l|-t type> [Options...]\n"
# npu-smi exits with its (negative) error code; a shell shows it modulo 256
ERR_INVALID_PARAMETER = -9001
ERR_NOT_SUPPORT = -9255
# the 950's npu-smi (NPU_SMI_V2) takes `-i <NPU ID>` alone (npu_info.c `npu_info_main`)
CHIP_OPTION_REFUSED = "This device does not support input parameter of -c.\n"


class SimResult(NamedTuple):
    stdout: str
    stderr: str = ""
    exit_code: int = 0
    hang_seconds: float = 0.0  # block this long before answering, as a hung npu-smi does


def exit_status(code: int) -> int:
    """What a shell's $? shows for npu-smi's `exit(code)`."""
    return code & 0xFF


def _fail(text: str, code: int = ERR_INVALID_PARAMETER) -> SimResult:
    return SimResult(stdout=text, exit_code=exit_status(code))


def _options(args: list[str]) -> dict[str, str] | None:
    """`-t usages -i 3 -c 0` -> {"-t": "usages", "-i": "3", "-c": "0"}; None when malformed."""
    opts: dict[str, str] = {}
    it = iter(args)
    for flag in it:
        value = next(it, None)
        if flag not in ("-t", "-i", "-c") or value is None or flag in opts:
            return None
        opts[flag] = value
    return opts


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _matches(pattern: tuple[str, ...], argv: list[str]) -> bool:
    """True when the pattern's tokens occur in argv in this order."""
    it = iter(argv)
    return all(token in it for token in pattern)


def _detail(opts: dict[str, str], node: SimNode) -> SimResult:
    kind = opts.get("-t", "")
    npu, chip_id = _int(opts.get("-i")), _int(opts.get("-c"))
    if "-i" not in opts or npu is None:
        return _fail("Must input parameter of card id.\n")
    card = node.card(npu)
    if card is None:
        return _fail("Invalid card id.\nError parameter of -i\n" + USAGE)
    if "-c" in opts and (chip_id is None or not 0 <= chip_id < len(card.chips)):
        return _fail("Invalid chip id.\nError parameter of -c\n" + USAGE)
    if "-c" in opts and node.family.v2:
        return _fail(CHIP_OPTION_REFUSED)
    if kind == "common":
        return SimResult(detail.render_common(card, node))
    if kind == "health":
        if chip_id is None:
            return SimResult(detail.render_health_card(card, node))
        return SimResult(detail.render_health_chip(card.chips[chip_id]))
    if kind == "board":
        if chip_id is None:
            return SimResult(detail.render_board(card, node))
        return SimResult(detail.render_board_chip(card, card.chips[chip_id], node))
    if kind in detail.CARD_BLOCKS:
        if kind == "power" and node.family.p310 and chip_id is not None:
            return _fail(f"This device does not support querying {kind}.\n", ERR_NOT_SUPPORT)
        return SimResult(detail.render_card(kind, card, node, chip_id))
    return _fail(f'Error parameter in querying chip info, type: "{kind}".\n', ERR_NOT_SUPPORT)


def _answer(args: list[str], node: SimNode) -> SimResult:
    if node.dcmi_fail_code is not None:
        return _fail(
            f"dcmi module initialize failed. ret is {node.dcmi_fail_code}\n", node.dcmi_fail_code
        )
    if args == ["info"]:
        return SimResult(render_info(node))
    if args == ["info", "-m"]:
        return SimResult(render_mapping(node))
    if args == ["info", "-l"]:
        return SimResult(render_list(node))
    opts = _options(args[1:]) if args[:1] == ["info"] else None
    if opts is None or "-t" not in opts:
        return _fail("Command or option is not found.\n" + USAGE)
    return _detail(opts, node)


def render(argv: list[str], node: SimNode) -> SimResult:
    """What `npu-smi <argv>` prints on this node; argv excludes the program name."""
    result = _answer(list(argv), node)
    hang = max((h.seconds for h in node.hangs if _matches(h.argv, list(argv))), default=0.0)
    if not hang:
        return result
    return SimResult(result.stdout, result.stderr, result.exit_code, hang)
