"""The scheduler: runs on its own clock, from offsets, one run of a job at a time."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from npumon.daemon.schedule import Scheduler, next_slot
from tests.helpers.clock import SteppedClock
from tests.helpers.wait import scaled, wait_for


@pytest.fixture
def clock() -> SteppedClock:
    return SteppedClock()


@pytest.fixture
def scheduler(clock: SteppedClock) -> Iterator[Scheduler]:
    s = Scheduler(clock)
    yield s
    s.stop()


class Calls:
    def __init__(self, clock: SteppedClock) -> None:
        self.clock = clock
        self.at: list[float] = []

    def job(self) -> None:
        self.at.append(self.clock.now())


def test_runs_from_the_offset_every_interval(clock: SteppedClock, scheduler: Scheduler) -> None:
    calls = Calls(clock)
    scheduler.add(calls.job, every=5.0, offset=1.0)
    scheduler.start()
    clock.settle(1)
    assert calls.at == []
    clock.advance(1.0, 1)
    clock.advance(4.9, 1)
    assert calls.at == [1001.0]
    clock.advance(0.1, 1)
    assert calls.at == [1001.0, 1006.0]


def test_an_overrun_drops_the_missed_slots() -> None:
    assert next_slot(0.0, 5.0, 1.0) == 5.0
    assert next_slot(0.0, 5.0, 12.0) == 15.0  # slots 5 and 10 dropped, no run back to back
    assert next_slot(0.0, 5.0, 10.0) == 15.0


def test_run_now_runs_at_once_and_the_next_runs_follow(
    clock: SteppedClock, scheduler: Scheduler
) -> None:
    calls = Calls(clock)
    scheduler.add(calls.job, every=3600.0, offset=0.5)
    scheduler.start()
    clock.advance(0.5, 1)
    clock.advance(100.0, 1)
    scheduler.run_now("job")
    wait_for(lambda: len(calls.at) == 2, 10.0, "the requested run")
    clock.settle(1)
    clock.advance(3599.0, 1)
    assert len(calls.at) == 2
    clock.advance(1.0, 1)
    assert calls.at == [1000.5, 1100.5, 4700.5]


def test_a_job_is_never_in_flight_twice(clock: SteppedClock, scheduler: Scheduler) -> None:
    release, running, most = threading.Event(), [0], [0]

    def slow() -> None:
        running[0] += 1
        most[0] = max(most[0], running[0])
        release.wait(scaled(10.0))
        running[0] -= 1

    scheduler.add(slow, every=1.0, offset=0.0)
    scheduler.start()
    wait_for(lambda: running[0] == 1, 10.0, "the first run")
    for _ in range(5):
        scheduler.run_now("slow")
        clock.advance(1.0, 0)
    release.set()
    clock.settle(1)
    assert most[0] == 1


def test_a_failing_run_is_logged_and_the_job_goes_on(
    clock: SteppedClock, scheduler: Scheduler, caplog: pytest.LogCaptureFixture
) -> None:
    calls = Calls(clock)

    def flaky() -> None:
        calls.job()
        if len(calls.at) == 1:
            raise RuntimeError("boom")

    scheduler.add(flaky, every=5.0, offset=0.0)
    scheduler.start()
    clock.settle(1)
    clock.advance(5.0, 1)
    assert len(calls.at) == 2
    assert "event=job_failed job=flaky" in caplog.text


def test_stop_ends_every_thread(clock: SteppedClock) -> None:
    scheduler = Scheduler(clock)
    scheduler.add(Calls(clock).job, every=5.0, offset=1.0)
    scheduler.start()
    clock.settle(1)
    assert scheduler.running()
    scheduler.stop()
    assert not scheduler.running()
    wait_for(
        lambda: not any(t.name == "npumon-job" for t in threading.enumerate()),
        10.0,
        "the job thread to end",
    )
