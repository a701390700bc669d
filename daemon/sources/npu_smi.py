"""The CLI backend: each chip query one `npu-smi info` call, parsed.

``CLI`` holds, per query kind, the `npu-smi info` arguments and the parser of their output;
``NpuSmi`` runs them with the daemon's command and timeout.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from npumon.daemon.parsers import board, detail, health, interconnect, mapping, plausible, table
from npumon.daemon.runner import resolve_command, run_command
from npumon.daemon.sources.query import HCCS_WINDOW_MS, MAX_OUTPUT_BYTES, Kind, Query, Runner
from npumon.daemon.sources.wrapper import SourceFailure, SourceRun, check_result, parse_or_fail

R = TypeVar("R")
T = TypeVar("T")

Args = Callable[[Query[Any]], tuple[str, ...]]
Parse = Callable[[str, Query[Any]], object]


def _npu(query: Query[Any]) -> tuple[str, ...]:
    return ("-i", str(query.npu))


def _chip(query: Query[Any]) -> tuple[str, ...]:
    """`-i N -c M`; `-i N` alone for the NPU's every chip, or a chip asked through its NPU."""
    if query.chip is None or query.by_npu:
        return _npu(query)
    return ("-i", str(query.npu), "-c", str(query.chip))


def _t(query: Query[Any]) -> tuple[str, ...]:
    """`-t NAME`: the query kind is npu-smi's name for it."""
    return ("-t", str(query.what))


# query -> (npu-smi info's arguments, the parser of its output)
CLI: Mapping[str, tuple[Args, Parse]] = {
    Kind.INFO: (lambda q: (), lambda text, q: table.parse_info(text)),
    Kind.MAPPING: (lambda q: ("-m",), lambda text, q: mapping.parse_mapping(text)),
    Kind.USAGES: (lambda q: (*_t(q), *_npu(q)), lambda text, q: detail.parse_usages(text)),
    Kind.COMMON: (lambda q: (*_t(q), *_npu(q)), lambda text, q: detail.parse_common(text)),
    Kind.ECC: (lambda q: (*_t(q), *_npu(q)), lambda text, q: detail.parse_ecc(text)),
    Kind.BOARD: (lambda q: (*_t(q), *_chip(q)), lambda text, q: board.parse_board(text)),
    Kind.HEALTH: (lambda q: (*_t(q), *_chip(q)), lambda text, q: health.parse_health(text)),
    Kind.MEMORY: (
        lambda q: (*_t(q), *_chip(q)),
        lambda text, q: detail.parse_memory(text, npu=q.npu, chip=q.chip),
    ),
    Kind.HCCS: (lambda q: (*_t(q), *_chip(q)), lambda text, q: interconnect.parse_hccs(text)),
    # npu-smi refuses -t hccs-bw without a sampling window (-time, 1-1000 ms); the call blocks
    # for it
    Kind.HCCS_BW: (
        lambda q: (*_t(q), *_chip(q), "-time", str(HCCS_WINDOW_MS)),
        lambda text, q: interconnect.parse_hccs_bw(text),
    ),
    Kind.PCIE_ERR: (
        lambda q: (*_t(q), *_chip(q)),
        lambda text, q: interconnect.parse_pcie_err(text),
    ),
    Kind.SIO: (
        lambda q: (*_t(q), *_chip(q)),
        lambda text, q: interconnect.parse_sio(text),
    ),
}


class NpuSmi:
    """The CLI backend: argv prefix + timeout; each query one `npu-smi info` call, parsed."""

    def __init__(self, command: Sequence[str], timeout: float, runner: Runner = run_command):
        self.command = resolve_command(command)
        self.timeout = timeout
        self._runner = runner

    def offers(self, what: str) -> bool:
        return what in CLI

    def close(self) -> None:
        """Nothing to stop: each call's process has ended with it."""

    def ask(self, run: SourceRun, query: Query[R]) -> R:
        if query.what not in CLI:
            raise SourceFailure("not_supported", f"npu-smi has no query for {query.what}")
        args, parse = CLI[query.what]
        return query.of(self._call(run, lambda text: parse(text, query), args(query)))

    def _call(self, run: SourceRun, parse: Callable[[str], T], args: tuple[str, ...]) -> T:
        """`npu-smi info *args` parsed, its impossible values dropped (and counted on
        ``run``); or SourceFailure."""
        result = self._runner(
            (*self.command, "info", *args), self.timeout, max_output_bytes=MAX_OUTPUT_BYTES
        )
        parsed, rejected = plausible.screen(parse_or_fail(parse, check_result(result), result.argv))
        run.reject(rejected, result.argv)
        return parsed
