"""An injected runner and clock for the npu-smi sources (no processes, no sleep)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from npumon.daemon.config import Config
from npumon.daemon.model.chips import ChipResults
from npumon.daemon.model.snapshot import SourceStatus
from npumon.daemon.runner import CommandResult
from npumon.daemon.sources.chips import ChipSources
from npumon.daemon.sources.npu_smi import NpuSmi
from npumon.daemon.store import SnapshotStore
from tests.support import FIXTURES

NPU_SMI = FIXTURES / "npu-smi"
TABLE = (NPU_SMI / "info_910b4-1_2chip_procs_25.2.2.txt").read_text()
HEALTH_OK = (NPU_SMI / "info_t_health_910a_ok.txt").read_text()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeRunner:
    """Answers by argv; records every call."""

    def __init__(self, answers: dict[str, CommandResult | str]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    def __call__(
        self, argv: Sequence[str], timeout: float, *, max_output_bytes: int = 0
    ) -> CommandResult:
        key = " ".join(argv[1:])
        self.calls.append(key)
        answer = self.answers.get(key, "This device does not support querying that.\n")
        if isinstance(answer, CommandResult):
            return answer
        code = 255 if answer.startswith("This device") else 0
        return CommandResult(tuple(argv), answer, "", code, 0.01)


def sources(
    runner: FakeRunner,
    clock: Clock,
    published: list[ChipResults] | None = None,
    **kwargs: Any,
) -> tuple[ChipSources, SnapshotStore]:
    """Sources over ``runner`` publishing to a new store (and to ``published``, if given)."""
    store = SnapshotStore(Config().throttle, clock=clock)
    smi = NpuSmi(["npu-smi"], 5.0, runner)

    def publish(results: ChipResults, status: SourceStatus) -> None:
        if published is not None:
            published.append(results)
        store.publish_chips(results, status)

    polls = ChipSources(smi, publish, health_interval=60, clock=clock, monotonic=clock, **kwargs)
    return polls, store


def status(store: SnapshotStore, name: str) -> tuple[bool, dict[str, int]]:
    found = next(s for s in store.latest().sources if s.source == name)
    return found.up, dict(found.failures)
