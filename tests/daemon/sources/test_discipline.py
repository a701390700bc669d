"""npu-smi output discipline in the sources: error texts inside good output, tables cut short,
impossible values, and per-NPU passes that stop at their first timeout (injected runner and
clock: no processes, no sleep)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from npumon.daemon.model.chips import ChipResults
from npumon.daemon.runner import CommandResult
from npumon.daemon.store import SnapshotStore
from npumon.exporters.builtin import SOURCES
from npumon.exporters.spec import write
from tests.daemon.sources.fake_runner import NPU_SMI, TABLE, Clock, FakeRunner, sources, status
from tests.helpers.exposition import key, samples

TABLE_8 = (NPU_SMI / "info_910a_8chip_warning_procs_24.1rc2.txt").read_text()
MAP_8 = (NPU_SMI / "info_m_910a_8chip_24.1rc2.txt").read_text()
USAGES = (NPU_SMI / "info_t_usages_910a.txt").read_text()
HEALTH_OK = (NPU_SMI / "info_t_health_910a_ok.txt").read_text()
ECC = (NPU_SMI / "info_t_ecc_910_doc.txt").read_text()
NPU_0_ROW = "| 0     xxx            | OK            | 70.5        42                1232 / 1232"


def test_an_error_text_inside_a_good_table_is_data_not_a_failure() -> None:
    # a process may be called anything, npu-smi's error texts included (same width: 15)
    table = TABLE_8.replace("hlt_host_devmm_", "Invalid phy id.", 1)
    assert "Invalid phy id." in table
    polls, store = sources(FakeRunner({"info": table}), Clock())
    polls.poll_table()
    assert status(store, "npu_smi_table") == (True, {})
    assert len(store.latest().chips) == 8


def test_an_error_text_that_is_the_whole_output_of_a_good_exit_is_recognised() -> None:
    runner = FakeRunner(
        {"info": CommandResult(("npu-smi", "info"), "Invalid phy id.\n", "", 0, 0.01)}
    )
    polls, store = sources(runner, Clock())
    polls.poll_table()
    assert status(store, "npu_smi_table") == (False, {"invalid_chip": 1})


def _cut_after(text: str, line: str, occurrence: int = 1) -> str:
    """``text`` up to and including the ``occurrence``-th line that starts with ``line``."""
    lines = text.splitlines(keepends=True)
    at = [i for i, found in enumerate(lines) if found.startswith(line)][occurrence - 1]
    return "".join(lines[: at + 1])


def test_a_table_cut_inside_a_chip_block_is_a_failed_poll_of_its_own() -> None:
    runner, clock = FakeRunner({"info": TABLE_8, "info -m": MAP_8}), Clock()
    polls, store = sources(runner, clock)
    polls.poll_identity()
    polls.poll_table()
    assert len(store.latest().chips) == 8
    # cut after the 6th chip's first row: the chip list is cut, no chip is served
    runner.answers["info"] = _cut_after(TABLE_8, "| 5     xxx")
    polls.poll_table()
    assert store.latest().chips == ()
    assert status(store, "npu_smi_table") == (False, {"truncated": 1})
    last = next(s for s in store.latest().sources if s.source == "npu_smi_table")
    assert last.last_error is not None and "only one of its two rows" in last.last_error


def test_a_cut_between_chip_blocks_is_caught_by_the_chip_list_of_m() -> None:
    runner, clock = FakeRunner({"info": TABLE_8, "info -m": MAP_8}), Clock()
    polls, store = sources(runner, clock)
    polls.poll_identity()
    # cut after the 5th chip's border: it looks whole (a board that prints no process
    # section ends there too), and -m names the three chips it lacks
    runner.answers["info"] = _cut_after(TABLE_8, "+======================+", 6)
    polls.poll_table()
    assert sorted(c.npu for c in store.latest().chips) == [0, 1, 2, 3, 4]
    assert status(store, "npu_smi_table") == (False, {"chip_missing": 1})


def test_a_cut_inside_the_process_section_serves_every_chip_without_processes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner, clock = FakeRunner({"info": TABLE_8, "info -m": MAP_8}), Clock()
    polls, store = sources(runner, clock)
    polls.poll_identity()
    polls.poll_table()
    assert sum(len(c.processes) for c in store.latest().chips) == 32
    runner.answers["info"] = _cut_after(TABLE_8, "| 7       0 ")
    with caplog.at_level(logging.WARNING):
        polls.poll_table()
    chips = store.latest().chips
    assert len(chips) == 8 and all(c.processes == () for c in chips)
    assert status(store, "npu_smi_table") == (False, {"truncated": 1})
    assert "process list was cut (no closing border)" in caplog.text
    runner.answers["info"] = TABLE_8  # the next whole poll has them again
    polls.poll_table()
    assert sum(len(c.processes) for c in store.latest().chips) == 32
    assert status(store, "npu_smi_table") == (True, {"truncated": 1})


def test_a_card_that_leaves_is_missed_without_m_by_the_chips_of_earlier_polls() -> None:
    lines = TABLE_8.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("| 3     xxx"))
    without_3 = "".join(lines[:at] + lines[at + 3 :])
    runner = FakeRunner({"info": TABLE_8})  # no -m answer: the identity tier maps nothing
    polls, store = sources(runner, Clock())
    polls.poll_identity()
    polls.poll_table()
    polls.poll_table()  # two tables in a row: the chips are expected from now on
    assert status(store, "npu_smi_table") == (True, {})
    runner.answers["info"] = without_3
    polls.poll_table()
    assert sorted(c.npu for c in store.latest().chips) == [0, 1, 2, 4, 5, 6, 7]
    assert status(store, "npu_smi_table") == (False, {"chip_missing": 1})
    last = next(s for s in store.latest().sources if s.source == "npu_smi_table")
    assert last.last_error is not None and "(3, 0)" in last.last_error
    runner.answers["info"] = TABLE_8  # back on the bus: the source is up again
    polls.poll_table()
    assert status(store, "npu_smi_table") == (True, {"chip_missing": 1})


def test_a_board_without_a_process_section_is_served_whole() -> None:
    table = (NPU_SMI / "info_310b4_1chip_23.0rc3_devboard.txt").read_text()
    polls, store = sources(FakeRunner({"info": table}), Clock())
    polls.poll_table()
    assert status(store, "npu_smi_table") == (True, {})
    (chip,) = store.latest().chips
    assert (chip.npu, chip.chip, chip.processes) == (0, 0, ())


def test_a_whole_table_without_a_chip_keeps_the_others_and_says_chip_missing() -> None:
    lines = TABLE_8.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("| 3     xxx"))
    del lines[at : at + 3]  # NPU 3's two rows and its border: a card fell off the bus
    runner = FakeRunner({"info": "".join(lines), "info -m": MAP_8})
    polls, store = sources(runner, Clock())
    polls.poll_identity()
    polls.poll_table()
    assert status(store, "npu_smi_table") == (False, {"chip_missing": 1})
    assert sorted(c.npu for c in store.latest().chips) == [0, 1, 2, 4, 5, 6, 7]


def test_one_garbled_npu_number_is_not_expected_for_ever() -> None:
    # one table lists NPU 0 as NPU 9: that poll misses NPU 0; the next whole table is up again
    garbled = TABLE_8.replace("| 0     xxx", "| 9     xxx", 1)
    assert garbled != TABLE_8
    runner = FakeRunner({"info": TABLE_8})
    polls, store = sources(runner, Clock())
    polls.poll_table()
    polls.poll_table()
    assert status(store, "npu_smi_table") == (True, {})
    runner.answers["info"] = garbled
    polls.poll_table()
    assert status(store, "npu_smi_table") == (False, {"chip_missing": 1})
    runner.answers["info"] = TABLE_8
    polls.poll_table()
    polls.poll_table()
    assert status(store, "npu_smi_table") == (True, {"chip_missing": 1})


def test_a_chip_listed_twice_then_gone_is_missed() -> None:
    lines = TABLE_8.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("| 3     xxx"))
    runner = FakeRunner({"info": TABLE_8})
    polls, store = sources(runner, Clock())
    polls.poll_table()
    polls.poll_table()
    runner.answers["info"] = "".join(lines[:at] + lines[at + 3 :])  # NPU 3 fell off the bus
    polls.poll_table()
    polls.poll_table()
    assert status(store, "npu_smi_table") == (False, {"chip_missing": 2})


def test_impossible_values_are_dropped_counted_and_rendered() -> None:
    assert NPU_0_ROW in TABLE_8
    table = TABLE_8.replace(NPU_0_ROW, NPU_0_ROW.replace("70.5        42 ", "-3.0        -273.2"))
    polls, store = sources(FakeRunner({"info": table}), Clock())
    polls.poll_table()
    polls.poll_table()
    chips = {c.npu: c for c in store.latest().chips}
    assert status(store, "npu_smi_table") == (True, {})  # the other values are good
    assert chips[0].temperature_celsius is None and chips[0].power_watts is None  # not 0
    assert (chips[1].temperature_celsius, chips[1].power_watts) == (36.0, 71.2)
    assert chips[0].hbm_total_bytes is not None  # the rest of the chip stays
    rendered = samples(write(((f, store.latest()) for f in SOURCES), False))
    assert rendered[key("npumon_values_rejected_total", field="temperature_celsius")] == 2.0
    assert rendered[key("npumon_values_rejected_total", field="power_watts")] == 2.0


class Hangs(FakeRunner):
    """Every call whose argv contains ``part`` times out after 5 s of the injected clock."""

    def __init__(self, answers: dict[str, CommandResult | str], clock: Clock, part: str):
        super().__init__(answers)
        self.clock, self.part = clock, part

    def __call__(
        self, argv: Sequence[str], timeout: float, *, max_output_bytes: int = 0
    ) -> CommandResult:
        if self.part in " ".join(argv) + " ":
            self.calls.append(" ".join(argv[1:]))
            self.clock.now += 5.0
            return CommandResult(tuple(argv), "", "", None, 5.0, timed_out=True)
        return super().__call__(argv, timeout)


def _timed_run(store: SnapshotStore, source: str) -> tuple[float | None, bool]:
    found = next(s for s in store.latest().sources if s.source == source)
    return found.duration_seconds, found.up


def test_a_per_npu_pass_stops_at_its_first_timeout() -> None:
    clock = Clock()
    answers: dict[str, CommandResult | str] = {"info": TABLE_8}
    runner = Hangs(
        {**answers, **{f"info -t usages -i {n}": USAGES for n in range(8)}}, clock, "-t common"
    )
    polls, store = sources(runner, clock)
    polls.poll_table()
    polls.poll_detail()  # usages of NPU 0, then common of NPU 0 hangs: the pass stops there
    assert [c for c in runner.calls if "-t" in c] == ["info -t usages -i 0", "info -t common -i 0"]
    assert _timed_run(store, "npu_smi_detail") == (5.0, False)  # not 8 x 5 s
    assert status(store, "npu_smi_detail") == (False, {"timeout": 1})
    chips = {c.npu: c for c in store.latest().chips}
    assert chips[0].aicpu_ratio is not None  # read before the timeout: kept
    assert all(chips[n].aicpu_ratio is None for n in range(1, 8))


def test_an_aborted_pass_serves_nothing_older_than_itself() -> None:
    clock = Clock()
    answers: dict[str, CommandResult | str] = {"info": TABLE_8}
    answers.update({f"info -t usages -i {n}": USAGES for n in range(8)})
    answers.update({f"info -t health -i {n} -c 0": HEALTH_OK for n in range(8)})
    runner = Hangs(answers, clock, "no call hangs yet")
    published: list[ChipResults] = []
    polls, store = sources(runner, clock, published)
    polls.poll_table()
    polls.poll_detail()
    polls.poll_health()
    assert len(published[-1].usage) == 8 and len(published[-1].health) == 8
    runner.part = "-i 0 "  # now NPU 0 hangs: detail and health stop at once
    clock.now += 60
    polls.poll_detail()
    assert published[-1].usage == {}  # nothing from the pass before
    polls.poll_health()
    assert published[-1].health == {} and published[-1].ecc == {}
    # (-t ecc, -t memory and the four interconnect queries have no answer here: refused in the
    # first pass, 8 x 6, not asked since)
    assert status(store, "npu_smi_health") == (False, {"not_supported": 48, "timeout": 1})
    assert _timed_run(store, "npu_smi_health") == (5.0, False)


class _Watching(FakeRunner):
    """Calls ``watch`` before answering each query that contains ``part``."""

    def __init__(self, answers: dict[str, CommandResult | str], part: str) -> None:
        super().__init__(answers)
        self.part, self.watch = part, lambda: None

    def __call__(
        self, argv: Sequence[str], timeout: float, *, max_output_bytes: int = 0
    ) -> CommandResult:
        if self.part in " ".join(argv):
            self.watch()
        return super().__call__(argv, timeout)


def _with_links() -> dict[str, CommandResult | str]:
    """The 2-chip table, each chip's health, ECC and HCCS links."""
    hccs = (NPU_SMI / "info_t_hccs_910b_7links_FROM_SOURCE.txt").read_text()
    answers: dict[str, CommandResult | str] = {"info": TABLE}
    for n in range(2):
        answers[f"info -t hccs -i {n} -c 0"] = hccs
        answers[f"info -t health -i {n} -c 0"] = HEALTH_OK
        answers[f"info -t ecc -i {n}"] = ECC
    return answers


def test_links_stay_served_while_a_full_health_pass_re_reads_them() -> None:
    """Another tier publishes while the health tier is between its ECC and link queries: the
    links of the last pass are still current then, and must not vanish from that snapshot."""
    clock = Clock()
    runner = _Watching(_with_links(), "-t ecc")
    polls, _ = sources(runner, clock)
    polls.poll_table()
    polls.poll_health()
    assert len(polls.results().interconnect) == 2
    seen: list[int] = []
    runner.watch = lambda: seen.append(len(polls.results().interconnect))
    clock.now += 60  # the next full pass
    polls.poll_health()
    assert seen and all(n == 2 for n in seen), seen
    assert len(polls.results().interconnect) == 2


def test_links_go_when_a_full_pass_stops_before_re_reading_them() -> None:
    clock = Clock()
    runner = Hangs(_with_links(), clock, "no call hangs yet")
    polls, _ = sources(runner, clock)
    polls.poll_table()
    polls.poll_health()
    assert len(polls.results().interconnect) == 2
    runner.part = "-t ecc"  # the next full pass times out before its link queries
    clock.now += 60
    polls.poll_health()
    assert polls.results().interconnect == {}
