"""A capture window joined with the rank's own chip and ports: what it saw, or nothing."""

from __future__ import annotations

from dataclasses import replace

from npumon.daemon.config import Throttle
from npumon.daemon.model.network_view import NetworkView, PortReading
from npumon.daemon.model.rank_hardware import RankHardware
from npumon.daemon.model.reading import ChipReading
from npumon.daemon.model.snapshot import EMPTY_SNAPSHOT, NodeSnapshot
from npumon.daemon.profiling.window import WindowSampler, measure
from tests.helpers.wait import wait_for

GHZ = 1e9


def chip(npu: int, clock: float, power: float, **fields: object) -> ChipReading:
    return ChipReading(
        npu=npu,
        chip=0,
        identity=(("name", "910B3"),),
        aicore_frequency_hertz=clock,
        aicore_rated_frequency_hertz=1.8 * GHZ,
        power_watts=power,
        temperature_celsius=60.0,
        capture_active=True,  # AI Core reads 0 meanwhile: the reading leaves throttle unjudged
        **fields,  # type: ignore[arg-type]
    )


def snap(taken: float, clocks: dict[int, float], retransmitted: int) -> NodeSnapshot:
    ports = (
        PortReading(npu=2, chip=0, port=0, roce_errors=(("retransmissions", retransmitted),)),
        PortReading(npu=5, chip=0, port=0, roce_errors=(("retransmissions", 7),)),
    )
    chips = tuple(chip(npu, c, 400.0 if c < 1.7 * GHZ else 250.0) for npu, c in clocks.items())
    return replace(EMPTY_SNAPSHOT, taken_at=taken, chips=chips, network=NetworkView(ports=ports))


def window() -> list[NodeSnapshot]:
    """NPU 5 clocked down by power in 3 of 10 polls; NPU 2's port retransmits 1200 packets."""
    return [
        snap(
            t,
            {2: 1.8 * GHZ, 5: 1.1 * GHZ if t % 10 < 3 else 1.8 * GHZ, 7: 1.8 * GHZ},
            100 + 120 * t,
        )
        for t in range(10)
    ]


def test_the_throttled_chip_the_retransmitting_port_and_the_quiet_one() -> None:
    by_rank = {
        h.rank: h for h in measure([(37, (5, 0)), (3, (2, 0)), (9, (7, 0))], window(), Throttle())
    }
    slow = by_rank[37]
    assert slow.samples == 10 and slow.throttle_reason == "power"
    assert slow.throttled_share == 0.3
    assert slow.said().startswith(
        "rank 37 on NPU 5: throttled by power 30% of the window; AI Core clock 1.6 of 1.8 GHz"
    )
    assert by_rank[3].errors == (("retransmissions", 1080),) and not by_rank[3].throttled
    assert "retransmitted 1080 packets" in by_rank[3].said()
    quiet = by_rank[9]
    assert not quiet.saw_something
    assert "nothing seen on this node's chip or ports" in quiet.said()


def test_a_counter_that_went_back_is_a_reset_not_news() -> None:
    snaps = window()
    snaps[-1] = snap(9, {2: 1.8 * GHZ}, 5)  # the port's counters restarted (driver reload)
    (h,) = measure([(3, (2, 0))], snaps, Throttle())
    assert h.errors == ()


def test_no_snapshot_with_the_chip_says_so() -> None:
    (h,) = measure([(1, (4, 0))], window(), Throttle())
    assert h == RankHardware(1, 4, 0, 0) and "no telemetry" in h.said()


def test_the_sampler_keeps_each_published_snapshot_once() -> None:
    snaps = window()
    shown = iter([snaps[0], snaps[0], snaps[1], snaps[2], snaps[2]])
    last = [snaps[0]]

    def latest() -> NodeSnapshot:
        last[0] = next(shown, last[0])
        return last[0]

    sampler = WindowSampler(latest, period=0.001)
    sampler.start()
    wait_for(lambda: last[0] is snaps[2], what="the sampler reaching the third snapshot")
    assert sampler.stop() == snaps[:3]
