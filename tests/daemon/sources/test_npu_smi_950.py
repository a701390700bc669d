"""The npu-smi tiers on an Ascend 950 (NPU_SMI_V2): `-i N` alone, one chip per NPU ID, and a
chip whose heartbeat is lost served as lost. The fake answers as the 950's npu-smi does: any
`info` query with `-c` is refused (`npu_info.c` `npu_info_main`)."""

from __future__ import annotations

from collections.abc import Sequence

from npumon.daemon.model.chips import ChipResults, HealthReport
from npumon.daemon.model.reading import ChipReading, lost_chips
from npumon.daemon.parsers.table import parse_info
from npumon.daemon.runner import CommandResult
from tests.daemon.sources.fake_runner import NPU_SMI, Clock, FakeRunner, sources, status

REFUSED_C = (NPU_SMI / "error_950_chip_option_FROM_SOURCE.txt").read_text()
ANSWERS: dict[str, CommandResult | str] = {
    "info": (NPU_SMI / "info_950_1npu_doc.txt").read_text(),
    "info -m": (NPU_SMI / "info_m_950_doc.txt").read_text(),
    "info -t usages -i 0": (NPU_SMI / "info_t_usages_950_doc.txt").read_text(),
    "info -t common -i 0": (NPU_SMI / "info_t_common_950_doc.txt").read_text(),
    "info -t ecc -i 0": (NPU_SMI / "info_t_ecc_950_doc.txt").read_text(),
    "info -t health -i 0": (NPU_SMI / "info_t_health_950_doc.txt").read_text(),
    "info -t memory -i 0": (NPU_SMI / "info_t_memory_doc_a5.txt").read_text(),
    "info -t board -i 0": (NPU_SMI / "info_t_board_950_doc.txt").read_text(),
}


class V2Runner(FakeRunner):
    def __call__(
        self, argv: Sequence[str], timeout: float, *, max_output_bytes: int = 0
    ) -> CommandResult:
        if "-c" in argv:
            self.calls.append(" ".join(argv[1:]))
            return CommandResult(tuple(argv), REFUSED_C, "", 215, 0.01)
        return super().__call__(argv, timeout, max_output_bytes=max_output_bytes)


def test_950_detail_health_and_identity_are_up_without_chip_option() -> None:
    runner, clock = V2Runner(dict(ANSWERS)), Clock()
    polls, store = sources(runner, clock)
    polls.poll_all()
    assert not [call for call in runner.calls if "-c" in call.split()]
    for name in ("npu_smi_table", "npu_smi_detail", "npu_smi_health", "npu_smi_identity"):
        up, failures = status(store, name)
        assert up, (name, failures)
        assert set(failures) <= {"not_supported"}, (name, failures)
    (chip,) = store.latest().chips
    assert (chip.aicpu_ratio, chip.ctrlcpu_ratio, chip.aivector_ratio) == (0.0, 0.4, 0.0)
    assert (chip.aicube_ratio, chip.hbm_bandwidth_ratio, chip.utilization_ratio) == (
        0.0,
        0.03,
        0.0,
    )
    assert chip.aicore_rated_frequency_hertz == 1650e6 and chip.aicore_count == 32
    assert chip.aicore_frequency_hertz == 100e6 and chip.throttle == "none"
    assert (chip.hbm_ecc_single_bit_errors, chip.hbm_ecc_double_bit_errors) == (0, 0)
    assert chip.hbm_temperature_celsius == 63.0 and chip.health_state == "ok"
    assert dict(chip.identity)["serial"] == "xxx"  # the card-level board is the chip's


def test_950_chip_with_heartbeat_loss_is_missing_not_zeros() -> None:
    answers = dict(ANSWERS)
    answers["info"] = (NPU_SMI / "info_950_2npu_heartbeat_lost_FROM_SOURCE.txt").read_text()
    runner, clock = V2Runner(answers), Clock()
    polls, store = sources(runner, clock)
    polls.poll_table()
    chips = store.latest().chips
    assert [(c.npu, c.chip, c.health_state) for c in chips] == [
        (0, 0, chips[0].health_state),
        (1, 0, "heartbeat_lost"),  # still a chip, in its own state, with no readings
    ]
    assert chips[0].health_state != "heartbeat_lost"
    assert (chips[1].power_watts, chips[1].temperature_celsius, chips[1].hbm_used_bytes) == (
        None,
        None,
        None,
    )
    assert status(store, "npu_smi_table") == (False, {"chip_missing": 1})


def test_a_chip_that_loses_its_heartbeat_keeps_its_last_identity() -> None:
    """The chip answered before (its identity known); while its heartbeat is lost it is served
    with that identity, its codes from the health tier's last read and the state, no readings."""
    table = parse_info((NPU_SMI / "info_950_2npu_heartbeat_lost_FROM_SOURCE.txt").read_text())
    assert table.lost == ((1, 0),)
    known = ChipReading(npu=1, chip=0, identity=(("name", "Ascend950PR"), ("serial", "s1")))
    health = HealthReport(status="Critical", error_codes=("40F84E00",))
    results = ChipResults(table=table, health={(1, 0): health})
    (lost,) = lost_chips(results, [known], fault_level=lambda code: "restart_npu")
    assert (lost.npu, lost.chip, lost.health_state) == (1, 0, "heartbeat_lost")
    assert lost.identity == known.identity
    assert lost.error_codes == (("40F84E00", "restart_npu"),)
    assert lost.power_watts is None and lost.aicore_ratio is None
    (never_seen,) = lost_chips(results, [])
    assert never_seen.identity is None  # no npu_chip_info until it is known: one label set
