"""The npu-smi tiers on an Ascend 950 (NPU_SMI_V2): `-i N` alone, one chip per NPU ID, and a
chip whose heartbeat is lost served as lost. The fake answers as the 950's npu-smi does: any
`info` query with `-c` is refused (`npu_info.c` `npu_info_main`)."""

from __future__ import annotations

from collections.abc import Sequence

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
    assert [(c.npu, c.chip) for c in store.latest().chips] == [(0, 0)]
    assert status(store, "npu_smi_table") == (False, {"chip_missing": 1})
