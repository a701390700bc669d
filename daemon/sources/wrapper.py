"""The source error boundary: times a run, classifies failures, keeps labelled failure counters."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TypeVar

from npumon.daemon.model.snapshot import SourceStatus
from npumon.daemon.parsers.errors import ParseError
from npumon.daemon.parsers.failure import classify_failure, classify_whole_output
from npumon.daemon.parsers.plausible import Rejected
from npumon.daemon.runner import CommandResult

log = logging.getLogger(__name__)
T = TypeVar("T")
CANCELLED = "cancelled"  # the reason of a command shutdown killed (runner's terminate_all)


class SourceFailure(Exception):
    """One failed command or parse inside a source run; ``reason`` is the counter label."""

    def __init__(self, reason: str, message: str, exit_code: int | None = None) -> None:
        self.reason = reason
        self.message = message
        self.exit_code = exit_code
        super().__init__(f"{reason}: {message}")


def check_result(result: CommandResult) -> str:
    """stdout of a successful command, or SourceFailure saying what happened and what to do."""
    argv = " ".join(result.argv)
    if result.not_found:
        raise SourceFailure(
            "not_found",
            f"cannot run {result.argv[0]!r} ({result.stderr}); install the Ascend driver or "
            "set npu_smi.command in the config",
        )
    if result.cancelled:
        raise SourceFailure(CANCELLED, f"{argv!r} was killed: npumon is shutting down")
    if result.timed_out:
        raise SourceFailure(
            "timeout",
            f"{argv!r} did not finish in time and was killed; is the driver hung, or "
            "does a helper it started keep its output open?",
        )
    if result.output_too_large:
        raise SourceFailure(
            "output_too_large",
            f"{argv!r} printed more than npumon keeps and was killed; "
            "is the driver looping? Run it by hand (| head -n 100) and report what it prints",
        )
    # npu-smi's error texts: anywhere in the output of a failed call, but only as the whole
    # output of one that exited 0 (a process may be called "Invalid phy id.")
    output = result.stdout + "\n" + result.stderr
    known = classify_failure(output) if result.exit_code != 0 else classify_whole_output(output)
    if known is not None:
        raise SourceFailure(
            known.reason, f"{known.message} ({argv}): {known.advice}", result.exit_code
        )
    if result.exit_code != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or [""]
        raise SourceFailure(
            "exit_code",
            f"{argv!r} exited with {result.exit_code}: {tail[0][:200]}",
            result.exit_code,
        )
    return result.stdout


def parse_or_fail(parse: Callable[[str], T], text: str, argv: tuple[str, ...]) -> T:
    try:
        return parse(text)
    except ParseError as error:
        raise SourceFailure(
            "parse_error",
            f"output of {' '.join(argv)!r} not understood ({error}); please report it with the "
            "output attached",
        ) from None


class SourceRun:
    """Failures collected during one run of a source (a run may make many calls)."""

    def __init__(self) -> None:
        self.failures: list[SourceFailure] = []
        self.refusals: list[SourceFailure] = []
        self.rejected: list[tuple[Rejected, tuple[str, ...]]] = []  # (value, argv)
        self.exit_code: int | None = 0

    def record(self, failure: SourceFailure) -> None:
        self.failures.append(failure)
        self.exit_code = failure.exit_code

    def refused(self, failure: SourceFailure) -> None:
        """A query this chip or driver does not offer: counted, but the source stays up."""
        self.refusals.append(failure)

    def reject(self, values: Iterable[Rejected], argv: tuple[str, ...]) -> None:
        """Physically impossible values the command printed: dropped, counted, logged."""
        self.rejected.extend((value, argv) for value in values)


class SourceTracker:
    """Runs a source body inside the error boundary and turns the outcome into SourceStatus.

    It does not publish: the source publishes its results and this status together, once.
    """

    def __init__(
        self,
        name: str,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self._clock = clock
        self._monotonic = monotonic
        self._failures: Counter[str] = Counter()
        self._rejected: Counter[str] = Counter()
        self._last_success: float | None = None
        self._last_reason: str | None = None

    def run(self, body: Callable[[SourceRun], None]) -> SourceStatus:
        started = self._monotonic()
        run = SourceRun()
        try:
            body(run)
        except SourceFailure as failure:
            run.record(failure)
        except Exception as error:  # the boundary: one bad source must not kill the daemon
            log.exception("source=%s event=unexpected_error", self.name)
            run.record(SourceFailure("exception", f"{type(error).__name__}: {error}"))
        return self._finish(run, self._monotonic() - started)

    def _count_rejected(self, run: SourceRun) -> None:
        for value, argv in run.rejected:
            level = logging.DEBUG if self._rejected[value.field] else logging.WARNING
            log.log(
                level,
                "source=%s event=value_rejected field=%s value=%r command=%r",
                self.name,
                value.field,
                value.value,
                " ".join(argv),
            )
            self._rejected[value.field] += 1

    def _finish(self, run: SourceRun, duration: float) -> SourceStatus:
        cancelled = [f for f in run.failures if f.reason == CANCELLED]
        run.failures = [f for f in run.failures if f.reason != CANCELLED]
        if cancelled and not run.failures:
            return self._cancelled(run, duration, cancelled[0])
        self._failures.update(f.reason for f in (*run.failures, *run.refusals))
        self._count_rejected(run)
        up = not run.failures
        if up:
            self._last_success = self._clock()
            if self._last_reason is not None:
                log.info("source=%s event=recovered", self.name)
            self._last_reason = None
        else:
            first = run.failures[0]
            level = logging.WARNING if first.reason != self._last_reason else logging.DEBUG
            log.log(
                level,
                "source=%s event=failed reason=%s failures=%d message=%r",
                self.name,
                first.reason,
                len(run.failures),
                first.message,
            )
            self._last_reason = first.reason
        status = SourceStatus(
            source=self.name,
            up=up,
            duration_seconds=duration,
            last_success_timestamp=self._last_success,
            exit_code=run.exit_code,
            failures=tuple(sorted(self._failures.items())),
            last_error=None if up else run.failures[0].message,
            rejected=tuple(sorted(self._rejected.items())),
        )
        return status

    def _cancelled(self, run: SourceRun, duration: float, failure: SourceFailure) -> SourceStatus:
        """A run that shutdown cut short: not a failure of the source (nothing counted, no
        warning), and the source keeps the state and last success it had."""
        log.debug("source=%s event=cancelled message=%r", self.name, failure.message)
        self._count_rejected(run)
        return SourceStatus(
            source=self.name,
            up=self._last_success is not None and self._last_reason is None,
            duration_seconds=duration,
            last_success_timestamp=self._last_success,
            exit_code=None,
            failures=tuple(sorted(self._failures.items())),
            last_error=None,
            rejected=tuple(sorted(self._rejected.items())),
        )
