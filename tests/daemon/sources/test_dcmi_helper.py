"""The DCMI helper as a real process over the gcc-built fake: answers, a hang, a kill, backoff."""

from __future__ import annotations

import ctypes
import os
import signal
from pathlib import Path

import pytest

from npumon.daemon.runner import ProcessGroups
from npumon.daemon.sources.dcmi_abi import EccBuffer
from npumon.daemon.sources.dcmi_client import DcmiChip, DcmiHelper, HelperFailure
from npumon.daemon.sources.dcmi_library import load
from tests.helpers.fake_dcmi import STATE_ENV, build_fake_dcmi

pytestmark = pytest.mark.integration

STATE = """\
version 25.2.2 25.2.2.b001
chip 0 0 0 0 health=0 power=1234 temp=45 hbm_total=65536 hbm_used=3000 util2=40 ecc2_enable=1 \
ecc2_sbe=3 ecc2_db_next_pages=9
chip 1 0 1 1 health=1 temp=46
proc 0 0 1234 104857600
error 1 0 80E01801
"""


def _helper(
    tmp_path: Path,
    state: str = STATE,
    *omit: str,
    timeout: float = 5.0,
    clock: list[float] | None = None,
) -> DcmiHelper:
    library = build_fake_dcmi(tmp_path / "lib", *omit)
    (tmp_path / "state").write_text(state)
    now = clock if clock is not None else [0.0]
    return DcmiHelper(
        library,
        timeout,
        env={**os.environ, STATE_ENV: str(tmp_path / "state")},
        monotonic=lambda: now[0],
        groups=ProcessGroups(),
    )


def test_hello_lists_the_chips_of_dcmi_init(tmp_path: Path) -> None:
    helper = _helper(tmp_path)
    try:
        hello = helper.hello()
        assert hello.chips == (DcmiChip(0, 0, 0, 0), DcmiChip(1, 0, 1, 1))
        assert hello.missing == frozenset()
        assert (hello.dcmi_version, hello.driver_version) == ("25.2.2", "25.2.2.b001")
        answers = helper.call(
            [
                ("power", 0, 0, 0),
                ("power", 1, 0, 0),
                ("processes", 0, 0, 0),
                ("errors", 1, 0, 0),
                ("utilization", 0, 0, 2),
                ("power", 7, 0, 0),
            ]
        )
        assert answers == [
            (0, 1234),
            (-8255, None),
            (0, [[1234, 104857600]]),
            (0, [0x80E01801]),
            (0, 40),
            (-8001, None),
        ]
        assert helper.starts == 1  # one dcmi_init for every call
    finally:
        helper.close()


def test_a_missing_symbol_answers_minus_99998(tmp_path: Path) -> None:
    helper = _helper(tmp_path, STATE, "dcmi_get_device_power_info")
    try:
        assert helper.hello().missing == {"dcmi_get_device_power_info"}
        assert helper.call([("power", 0, 0, 0), ("temperature", 0, 0, 0)]) == [
            (-99998, None),
            (0, 45),
        ]
    finally:
        helper.close()


def test_a_failed_init_is_reported_and_backed_off(tmp_path: Path) -> None:
    clock = [100.0]
    helper = _helper(tmp_path, STATE + "init -8005\n", clock=clock)
    with pytest.raises(HelperFailure, match="dcmi_init returned -8005") as failed:
        helper.hello()
    assert failed.value.reason == "dcmi_init"
    with pytest.raises(HelperFailure) as waiting:
        helper.hello()
    assert waiting.value.reason == "dcmi_backoff" and helper.starts == 1
    clock[0] += 1.0
    with pytest.raises(HelperFailure, match="dcmi_init"):
        helper.hello()
    assert helper.starts == 2
    clock[0] += 1.5  # the second failure waits 2 s
    with pytest.raises(HelperFailure, match="backoff"):
        helper.hello()


def test_a_hung_call_kills_the_helper_within_the_deadline(tmp_path: Path) -> None:
    clock = [0.0]
    helper = _helper(
        tmp_path, STATE + "hang dcmi_get_device_power_info\n", timeout=3.0, clock=clock
    )
    try:
        pid_before = helper.hello()
        assert pid_before.chips
        with pytest.raises(HelperFailure) as late:  # the call hangs: only the deadline ends it
            helper.call([("temperature", 0, 0, 0), ("power", 0, 0, 0)])
        assert late.value.reason == "dcmi_timeout"
        with pytest.raises(HelperFailure, match="backoff"):
            helper.call([("temperature", 0, 0, 0)])
        clock[0] += 1.0
        assert helper.call([("temperature", 0, 0, 0)]) == [(0, 45)]
        assert helper.starts == 2
    finally:
        helper.close()


def test_restart_re_enumerates_at_once(tmp_path: Path) -> None:
    helper = _helper(tmp_path)
    try:
        assert len(helper.hello().chips) == 2
        (tmp_path / "state").write_text(STATE.split("chip 1")[0])
        helper.restart("chip gone")
        assert len(helper.hello().chips) == 1 and helper.starts == 2
    finally:
        helper.close()


def test_the_36_byte_ecc_struct_fits_the_helpers_buffer(tmp_path: Path) -> None:
    """A 7-field (28-byte) struct would be overrun: the fake writes 36 bytes past a canary."""
    library = build_fake_dcmi(tmp_path / "lib")
    (tmp_path / "state").write_text(STATE)
    os.environ[STATE_ENV] = str(tmp_path / "state")
    try:
        functions, _ = load(library)
        assert functions["dcmi_init"]() == 0
        ecc = functions["dcmi_get_device_ecc_info"]
        small = (ctypes.c_uint * 16)(*([0xCAFEF00D] * 16))  # 28 bytes, then the canary
        assert ecc(0, 0, 2, ctypes.cast(small, ctypes.POINTER(EccBuffer))) == 0
        assert small[8] == 9  # the canary after 28 bytes was overwritten
        buffer = EccBuffer()
        assert ecc(0, 0, 2, ctypes.byref(buffer)) == 0
        assert (buffer.info.enable_flag, buffer.info.single_bit_error_cnt) == (1, 3)
        assert bytes(buffer.room[36:]) == bytes(28)
    finally:
        del os.environ[STATE_ENV]


def test_a_helper_killed_from_outside_is_replaced_after_the_backoff(tmp_path: Path) -> None:
    clock = [0.0]
    helper = _helper(tmp_path, clock=clock)
    try:
        helper.hello()
        pid = helper.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(HelperFailure) as gone:
            helper.call([("temperature", 0, 0, 0)])
        assert gone.value.reason in ("dcmi_exited", "dcmi_backoff")
        clock[0] += 1.0
        assert helper.call([("temperature", 0, 0, 0)]) == [(0, 45)]
        assert helper.starts == 2 and helper.pid != pid
    finally:
        helper.close()


LINKS = """\
version 25.2.2 25.2.2
chip 0 0 0 0 mainboard=28 hccs_pcs_status=257 hccs_hdlc_status=3 hccs_ports=6 \
hccs_lanes=1055/1541 hccs_tx=0/5/6 hccs_rx=0/7/8 hccs_crc=0/0/9 hccs_retry=0/1/2 \
hccs_bw_tx=0/1.5/2.25 hccs_bw_rx=0/0.5/0.75 pcie_err=1/2/3/4/5 sio_err=6/7
chip 1 0 1 1 temp=40
"""


def test_the_interconnect_structs_come_through_whole(tmp_path: Path) -> None:
    """Every array by port index, the window the bandwidth call is given, and -8255 from a chip
    without the values (the status call is the second: its code is the answer's)."""
    helper = _helper(tmp_path, LINKS)
    try:
        hccs, bw, pcie, sio, board, none, bad_window = helper.call(
            [
                ("hccs", 0, 0, 0),
                ("hccs_bw", 0, 0, 200),
                ("pcie_errors", 0, 0, 0),
                ("sio", 0, 0, 0),
                ("mainboard", 0, 0, 0),
                ("hccs", 1, 0, 0),
                ("hccs_bw", 0, 0, 0),
            ]
        )
    finally:
        helper.close()
    pad = [0] * 13
    assert hccs == (
        0,
        {
            "tx": [0, 5, 6, *pad],
            "rx": [0, 7, 8, *pad],
            "crc": [0, 0, 9, *pad],
            "retry": [0, 1, 2, *pad],
            "pcs_status": 257,
            "hdlc_status": 3,
            "ports": 6,
            "lanes": [1055, 1541, *[0] * 14],
        },
    )
    assert bw == (0, {"tx": [0, 1.5, 2.25, *pad], "rx": [0, 0.5, 0.75, *pad]})
    assert (pcie, sio, board) == ((0, [1, 2, 3, 4, 5]), (0, [6, 7]), (0, 28))
    assert none == (-8255, None)
    assert bad_window == (-8001, None)  # profiling_time must be 1-1000 ms
