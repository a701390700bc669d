"""One npu-smi query: run with a deadline and an output cap, check, parse, screen the values;
and the memory of which queries a chip does not offer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from npumon.daemon.model.npu_smi import ChipDcmi, ChipId
from npumon.daemon.parsers import plausible
from npumon.daemon.runner import CommandResult, resolve_command, run_command
from npumon.daemon.sources.wrapper import SourceFailure, SourceRun, check_result, parse_or_fail

T = TypeVar("T")
# The largest real `npu-smi info` (16 chips, a process row per chip) is about 20 kB; past this
# the output is a driver looping, and keeping it would cost the daemon many times its size.
MAX_OUTPUT_BYTES = 1024 * 1024
# A per-NPU pass stops at the first of these: the next NPU would wait the same timeout.
ABORTS_A_PASS = frozenset({"timeout", "cancelled"})


class Runner(Protocol):
    """run_command as npu-smi calls it."""

    def __call__(
        self, argv: Sequence[str], timeout: float, *, max_output_bytes: int = ...
    ) -> CommandResult: ...


class NpuSmi:
    """argv prefix + timeout; `query` returns parsed output or raises SourceFailure."""

    def __init__(self, command: Sequence[str], timeout: float, runner: Runner = run_command):
        self.command = resolve_command(command)
        self.timeout = timeout
        self._runner = runner

    def query(self, run: SourceRun, parse: Callable[[str], T], *args: str) -> T:
        """`npu-smi info *args` parsed, its impossible values dropped (and counted on
        ``run``); or SourceFailure."""
        result = self._runner(
            (*self.command, "info", *args), self.timeout, max_output_bytes=MAX_OUTPUT_BYTES
        )
        parsed, rejected = plausible.screen(parse_or_fail(parse, check_result(result), result.argv))
        run.reject(rejected, result.argv)
        return parsed

    def dcmi_only(self, run: SourceRun, chips: Sequence[ChipId]) -> dict[ChipId, ChipDcmi]:
        """What only DCMI gives (voltage, PCIe bandwidth): nothing through npu-smi."""
        return {}


class Unsupported:
    """Queries a chip or driver said it does not support, not asked again until `retry_after`.

    Without this a 310P (no ECC query) would keep its health source down forever; with it the
    refusal is counted once per retry period (reason="not_supported") and the source stays up:
    a query the hardware does not offer is a fact about the chip, not a failure.
    """

    def __init__(self, retry_after: float, monotonic: Callable[[], float]) -> None:
        self._retry_after = retry_after
        self._monotonic = monotonic
        self._until: dict[tuple[str, ...], float] = {}

    def attempt(self, run: SourceRun, call: Callable[[], T], *args: str) -> T | None:
        """``call()``; None when it failed (recorded) or is known to be unsupported. A timeout
        is raised: the pass stops there rather than wait it out once per NPU."""
        if self._until.get(args, 0.0) > self._monotonic():
            return None
        try:
            return call()
        except SourceFailure as failure:
            if failure.reason in ABORTS_A_PASS:
                raise
            if failure.reason != "not_supported":
                run.record(failure)
                return None
            self._until[args] = self._monotonic() + self._retry_after
            run.refused(failure)
            return None
