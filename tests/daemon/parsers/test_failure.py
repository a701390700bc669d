"""Known npu-smi failure texts (parsers/failure.py): reason, message and advice."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npumon.daemon.parsers.failure import classify_failure, classify_whole_output
from tests.daemon.parsers.npu_smi_fixtures import fixture_text


# ---------------------------------------------------------------- known failures
def test_dcmi_init_failure_from_the_sample() -> None:
    failure = classify_failure(fixture_text("error_dcmi_init_failed.txt"))
    assert failure is not None
    assert failure.reason == "dcmi_init"
    assert failure.message == "dcmi module initialize failed. ret is -8005"
    assert "HwHiAiUser" in failure.advice and "reboot" in failure.advice


def test_invalid_card_from_the_sample() -> None:
    failure = classify_failure(fixture_text("error_invalid_card_id.txt"))
    assert failure is not None and failure.reason == "invalid_card"
    assert failure.message == "Invalid card id." and "lspci" in failure.advice


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            "dcmi model initialized failed, because the device is used. ret is -8020",
            "device_busy",
        ),
        ("Invalid chip id.\nError parameter of -c\n", "invalid_chip"),
        ("There is no NPU card on this server.", "no_device"),
        ("This device does not support querying power.", "not_supported"),
        ("Command or option is not found.\nUsage: npu-smi info ...", "unknown_option"),
        ("Failed to execute npu-smi info. ret is -9005.", "command_failed"),
    ],
)
def test_known_failure_texts(text: str, reason: str) -> None:
    failure = classify_failure(text)
    assert failure is not None and failure.reason == reason
    assert failure.advice


def test_normal_output_is_not_a_failure() -> None:
    assert classify_failure(fixture_text("info_910b4-1_2chip_procs_25.2.2.txt")) is None
    assert classify_failure("") is None


# ---------------------------------------------------------------- output of a call that exited 0
ERROR_LINES = [
    "dcmi module initialize failed. ret is -8005",
    "dcmi model initialized failed, because the device is used. ret is -8020",
    "Invalid card id.",
    "Invalid chip id.",
    "Invalid phy id.",
    "There is no NPU card on this server.",
    "This device does not support querying power.",
    "Command or option is not found.",
    "Failed to execute npu-smi info. ret is -9005.",
]
PROCESS_ROW = "| 0       0            | 37656         | {name:<24} | 686                     |"


@pytest.mark.parametrize("line", ERROR_LINES)
def test_an_error_text_that_is_the_whole_output_is_recognised(line: str) -> None:
    assert classify_whole_output(f"\n{line}\n") == classify_failure(line) is not None


def test_an_error_text_with_its_continuation_lines_is_the_whole_output() -> None:
    failure = classify_whole_output(fixture_text("error_invalid_card_id.txt"))
    assert failure is not None and failure.reason == "invalid_card"


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(ERROR_LINES),
    st.sampled_from(
        [
            "info_910a_8chip_warning_procs_24.1rc2.txt",
            "info_910b4-1_2chip_procs_25.2.2.txt",
            "info_a3_ascend910_phyid_proc.txt",
            "info_t_board_910a.txt",
            "info_t_usages_910a.txt",
        ]
    ),
    st.data(),
)
def test_an_error_text_inside_good_output_is_never_a_failure(
    line: str, fixture: str, data: st.DataObject
) -> None:
    """Wherever it sits in a table row or a `key : value` line (a process name, a board
    field), an error text inside successful output is data."""
    lines = fixture_text(fixture).splitlines()
    at = data.draw(st.integers(0, len(lines)))
    planted = (
        PROCESS_ROW.format(name=line)
        if fixture.startswith("info_9") or fixture.startswith("info_a3")
        else f"\tProduct Name : {line}"
    )
    text = "\n".join([*lines[:at], planted, *lines[at:]])
    assert classify_whole_output(text) is None
    assert classify_failure(text) is not None  # what a failed exit would still recognise


def test_empty_output_is_no_known_failure() -> None:
    assert classify_whole_output("") is None and classify_whole_output("\n \n") is None
