"""Known npu-smi failure texts (parsers/failure.py): reason, code and advice."""

from __future__ import annotations

import pytest

from npumon.daemon.parsers.failure import classify_failure
from tests.daemon.parsers.npu_smi_fixtures import fixture_text


# ---------------------------------------------------------------- known failures
def test_dcmi_init_failure_from_the_sample() -> None:
    failure = classify_failure(fixture_text("error_dcmi_init_failed.txt"))
    assert failure is not None
    assert (failure.reason, failure.code) == ("dcmi_init", -8005)
    assert failure.message == "dcmi module initialize failed. ret is -8005"
    assert "HwHiAiUser" in failure.advice and "reboot" in failure.advice


def test_invalid_card_from_the_sample() -> None:
    failure = classify_failure(fixture_text("error_invalid_card_id.txt"))
    assert failure is not None and failure.reason == "invalid_card"
    assert failure.message == "Invalid card id." and "lspci" in failure.advice


@pytest.mark.parametrize(
    ("text", "reason", "code"),
    [
        ("dcmi model initialized failed, because the device is used. ret is -8020", "device_busy",
         -8020),
        ("Invalid chip id.\nError parameter of -c\n", "invalid_chip", None),
        ("There is no NPU card on this server.", "no_device", None),
        ("This device does not support querying power.", "not_supported", None),
        ("Command or option is not found.\nUsage: npu-smi info ...", "unknown_option", None),
        ("Failed to execute npu-smi info. ret is -9005.", "command_failed", -9005),
    ],
)  # fmt: skip
def test_known_failure_texts(text: str, reason: str, code: int | None) -> None:
    failure = classify_failure(text)
    assert failure is not None and (failure.reason, failure.code) == (reason, code)
    assert failure.advice


def test_normal_output_is_not_a_failure() -> None:
    assert classify_failure(fixture_text("info_910b4-1_2chip_procs_25.2.2.txt")) is None
    assert classify_failure("") is None
