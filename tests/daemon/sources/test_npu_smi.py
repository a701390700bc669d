"""Source wrapper and npu-smi tiers with an injected runner and clock (no processes, no sleep)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest

from npumon.daemon import store as store_module
from npumon.daemon.config import Config
from npumon.daemon.model.chips import ChipResults
from npumon.daemon.model.reading import read_chips
from npumon.daemon.model.snapshot import SourceStatus
from npumon.daemon.runner import CommandResult
from npumon.daemon.sources.chips import ChipSources
from npumon.daemon.sources.npu_smi import NpuSmi
from npumon.daemon.store import SnapshotStore
from npumon.exporters.chip_health import IDENTITY
from npumon.exporters.spec import write
from tests.daemon.sources.fake_runner import (
    HEALTH_OK,
    NPU_SMI,
    TABLE,
    Clock,
    FakeRunner,
    sources,
    status,
)
from tests.helpers.exposition import samples


def test_unsupported_queries_are_retried_only_after_the_retry_period() -> None:
    runner, clock = FakeRunner({"info": TABLE}), Clock()
    polls, store = sources(runner, clock)
    polls.poll_table()
    polls.poll_detail()
    # a query the chip does not offer is counted, but is no failure: the source stays up
    assert status(store, "npu_smi_detail") == (True, {"not_supported": 4})
    clock.now += 15
    polls.poll_detail()  # nothing asked again, the counter unchanged
    assert status(store, "npu_smi_detail") == (True, {"not_supported": 4})
    assert runner.calls.count("info -t usages -i 0") == 1
    clock.now += 3600
    polls.poll_detail()
    assert runner.calls.count("info -t usages -i 0") == 2
    assert status(store, "npu_smi_detail") == (True, {"not_supported": 8})


def test_health_polls_every_chip_per_interval_and_unhealthy_chips_every_tick() -> None:
    alarm_table = TABLE.replace(
        "| 1     910B4-1             | OK ", "| 1     910B4-1             | Alarm"
    )
    runner = FakeRunner(
        {
            "info": alarm_table,
            "info -t health -i 0 -c 0": HEALTH_OK,
            "info -t health -i 1 -c 0": HEALTH_OK,
        }
    )
    clock = Clock()
    polls, _ = sources(runner, clock)
    polls.poll_table()
    polls.poll_health()
    clock.now += 5
    polls.poll_health()
    clock.now += 5
    polls.poll_health()
    assert runner.calls.count("info -t health -i 0 -c 0") == 1  # OK chip: once per 60 s
    assert runner.calls.count("info -t health -i 1 -c 0") == 3  # Alarm chip: every tick
    clock.now += 60
    polls.poll_health()
    assert runner.calls.count("info -t health -i 0 -c 0") == 2


def test_timeout_and_missing_binary_are_labelled_and_drop_the_table() -> None:
    hung = CommandResult(("npu-smi", "info"), "", "", None, 5.0, timed_out=True)
    runner, clock = FakeRunner({"info": TABLE}), Clock()
    polls, store = sources(runner, clock)
    polls.poll_table()
    assert len(store.latest().chips) == 2
    runner.answers["info"] = hung
    clock.now += 5
    polls.poll_table()
    assert store.latest().chips == ()
    up, failures = status(store, "npu_smi_table")
    assert (up, failures) == (False, {"timeout": 1})
    last = next(s for s in store.latest().sources if s.source == "npu_smi_table")
    assert last.last_success_timestamp == 1000.0  # the first, successful poll
    runner.answers["info"] = CommandResult(
        ("npu-smi",), "", "No such file", None, 0.0, not_found=True
    )
    polls.poll_table()
    assert status(store, "npu_smi_table") == (False, {"timeout": 1, "not_found": 1})


def test_a_poll_cancelled_by_shutdown_is_not_a_source_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """runner.terminate_all() kills the call in flight at shutdown: no warning, nothing counted,
    the source keeps its state and last success."""
    killed = CommandResult(("npu-smi", "info"), "", "", None, 0.2, cancelled=True)
    runner, clock = FakeRunner({"info": TABLE}), Clock()
    polls, store = sources(runner, clock)
    polls.poll_table()
    runner.answers["info"] = killed
    clock.now += 5
    with caplog.at_level(logging.DEBUG, logger="npumon.daemon.sources.wrapper"):
        polls.poll_table()
    assert status(store, "npu_smi_table") == (True, {})
    last = next(s for s in store.latest().sources if s.source == "npu_smi_table")
    assert last.last_success_timestamp == 1000.0
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("event=cancelled" in r.getMessage() for r in caplog.records)  # debug only


def test_an_unexpected_exception_is_contained_and_counted() -> None:
    def broken(argv: Sequence[str], timeout: float, *, max_output_bytes: int = 0) -> CommandResult:
        raise RuntimeError("boom")

    store = SnapshotStore(Config().throttle)
    polls = ChipSources(NpuSmi(["npu-smi"], 5.0, broken), store.publish_chips, health_interval=60)
    polls.poll_table()
    assert status(store, "npu_smi_table") == (False, {"exception": 1})


class SlowIdentity(FakeRunner):
    """Identity queries (-m, -t board) take 30 s of the injected clock; the table none."""

    def __init__(self, answers: dict[str, CommandResult | str], clock: Clock) -> None:
        super().__init__(answers)
        self.clock = clock

    def __call__(
        self, argv: Sequence[str], timeout: float, *, max_output_bytes: int = 0
    ) -> CommandResult:
        if "-m" in argv or "board" in argv:
            self.clock.now += 30.0
        return super().__call__(argv, timeout)


def test_a_new_chip_asks_for_identity_without_timing_it_as_the_table() -> None:
    clock = Clock()
    runner = SlowIdentity({"info": TABLE}, clock)
    due: list[float] = []
    polls, store = sources(runner, clock, identity_due=lambda: due.append(clock.now))
    polls.poll_table()
    table = next(s for s in store.latest().sources if s.source == "npu_smi_table")
    assert table.duration_seconds == 0.0  # the table call took no (injected) time
    assert due == [1000.0] and not any("-m" in call for call in runner.calls)
    polls.poll_identity()  # what the scheduler runs when asked
    identity = next(s for s in store.latest().sources if s.source == "npu_smi_identity")
    assert identity.duration_seconds is not None and identity.duration_seconds >= 30.0
    polls.poll_table()  # identity now knows both NPUs: not asked again
    assert len(due) == 1


def test_identity_before_the_first_table_waits_for_it() -> None:
    """The daemon's start: identity's slot (0.5 s) comes before a slow first table ends; the
    table's arrival then asks for identity. npu-smi runs what `collect --once` runs, `-m` once."""
    clock = Clock()
    answers = {"info": TABLE, "info -m": (NPU_SMI / "info_m_910a_8chip.txt").read_text()}
    once = FakeRunner(dict(answers))
    polls, _ = sources(once, clock)
    polls.poll_all()
    runner = FakeRunner(dict(answers))
    due: list[bool] = []
    polls, _ = sources(runner, clock, identity_due=lambda: due.append(True))
    polls.poll_identity()  # its first slot, the table still running
    polls.poll_table()
    assert due == [True]
    polls.poll_identity()  # what the scheduler runs when asked
    polls.poll_detail()
    polls.poll_health()
    assert sorted(runner.calls) == sorted(once.calls)
    assert sum("-m" in call for call in runner.calls) == 1


def test_each_source_run_publishes_and_merges_once(monkeypatch: pytest.MonkeyPatch) -> None:
    merges: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        merges.append(1)
        return read_chips(*args, **kwargs)

    monkeypatch.setattr(store_module, "read_chips", counted)
    runner = FakeRunner(
        {
            "info": TABLE,
            "info -t health -i 0 -c 0": HEALTH_OK,
            "info -t health -i 1 -c 0": HEALTH_OK,
        }
    )
    clock = Clock()
    store = SnapshotStore(Config().throttle, clock=clock)
    published: list[str] = []

    def publish(results: ChipResults, status: SourceStatus) -> None:
        published.append(status.source)
        store.publish_chips(results, status)

    polls = ChipSources(
        NpuSmi(["npu-smi"], 5.0, runner), publish, health_interval=60, clock=clock, monotonic=clock
    )
    polls.poll_all()  # table, identity, detail, health: 2 NPUs, many calls per tier
    assert published == ["npu_smi_table", "npu_smi_identity", "npu_smi_detail", "npu_smi_health"]
    assert len(merges) == 4
    assert len(runner.calls) > 8  # many npu-smi calls, still one publish per run


def test_chip_info_waits_for_identity_so_its_labels_never_change() -> None:
    """The table comes first; npu_chip_info is served once the identity tier has tried each
    NPU, so its first series carries the serial and firmware (no throwaway series per start)."""
    board = (NPU_SMI / "info_t_board_910b_25.5.1.txt").read_text()
    runner = FakeRunner({"info": TABLE, "info -t board -i 0": board, "info -t board -i 1": board})
    clock = Clock()
    polls, store = sources(runner, clock)
    series: set[tuple[tuple[str, str], ...]] = set()

    def scrape() -> None:
        text = write(((f, store.latest()) for f in IDENTITY[:1]), False)
        series.update(tuple(sorted(labels)) for _, labels in samples(text))

    polls.poll_table()
    scrape()
    assert series == set()  # identity not tried yet: no chip_info to throw away later
    polls.poll_identity()
    polls.poll_table()
    scrape()
    assert len(series) == 2 and all(dict(s)["serial"] == "1025C9048791" for s in series)
