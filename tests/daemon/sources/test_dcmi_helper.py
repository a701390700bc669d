"""The DCMI helper as a real process over the gcc-built fake: answers, a hang, a kill, backoff."""

from __future__ import annotations

import ctypes
import os
import signal
from pathlib import Path

import pytest

from npumon.daemon.runner import ProcessGroups
from npumon.daemon.sources.dcmi.child.abi import EccBuffer, load
from npumon.daemon.sources.dcmi.client import DcmiChip, DcmiHelper, HelperFailure
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


def test_a_call_that_always_hangs_grows_the_backoff(tmp_path: Path) -> None:
    # Answers between two hangs of the same call do not reset the backoff: 1 s, then 2 s, ...
    clock = [0.0]
    helper = _helper(
        tmp_path, STATE + "hang dcmi_get_device_power_info\n", timeout=3.0, clock=clock
    )
    try:
        for backoff in (1.0, 2.0, 4.0):
            assert helper.call([("temperature", 0, 0, 0)]) == [(0, 45)]  # answered
            with pytest.raises(HelperFailure, match="no answer"):
                helper.call([("power", 0, 0, 0)])
            clock[0] += backoff - 0.5
            with pytest.raises(HelperFailure, match="backoff"):
                helper.call([("temperature", 0, 0, 0)])
            clock[0] += 0.5
        assert helper.starts == 3
    finally:
        helper.close()


def test_what_the_library_prints_on_stdout_does_not_break_the_answers(tmp_path: Path) -> None:
    # some driver builds print debug lines on stdout, the helper's answer pipe
    said = "say dcmi_init {{not-json\nsay dcmi_get_device_power_info hello\n"
    helper = _helper(tmp_path, STATE + said)
    try:
        assert len(helper.hello().chips) == 2
        assert helper.call([("power", 0, 0, 0), ("temperature", 0, 0, 0)]) == [(0, 1234), (0, 45)]
        assert helper.starts == 1
    finally:
        helper.close()


@pytest.mark.parametrize("count", [-1, 1 << 30])
def test_a_garbled_process_count_lists_no_phantom_process(tmp_path: Path, count: int) -> None:
    # -1 (or a count past the buffer) once read as every slot: pid 0 series by the dozen
    state = STATE.replace("chip 1 0 1 1", f"chip 1 0 1 1 proc_count={count}")
    helper = _helper(tmp_path, state + "proc 1 0 4321 1048576\n")
    try:
        listed = helper.call([("processes", 1, 0, 0), ("processes", 0, 0, 0)])
        assert listed[0] in ((0, []), (0, [[4321, 1048576]]))
        assert listed[1] == (0, [[1234, 104857600]])
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


STATE_950 = """\
version 26.0.0 26.0.0
board 950
chip 0 0 0 4 health=0 power=1500 temp=52 hbm_total=131072 hbm_used=4000 hbm_bw=12 util2=30 \
util3=2 util4=5 util12=20 util13=33 util14=28 aicore_freq=1650 aicore_cur_freq=1400 \
ecc2_enable=1 ecc2_total_sbe=2 ecc0_enable=1 chip_type=Ascend chip_name=950PR aicore_cnt=32 \
bus=0000:41:00.0 volt=85
chip 1 0 1 5 health=2 temp=50
proc 0 0 4321 209715200
error 1 0 80E01801
"""


def test_a_950_is_read_through_dcmi_v2_by_logic_id(tmp_path: Path) -> None:
    """dcmi_init answers -8255 on a 950; the helper then runs dcmiv2_init and reads each chip
    (one per NPU ID, by logic id) through the dcmiv2_* calls: the v1 readers' answers."""
    helper = _helper(tmp_path, STATE_950)
    try:
        hello = helper.hello()
        assert hello.interface == 2
        assert hello.chips == (DcmiChip(0, 0, 0, 4, 0xD806), DcmiChip(1, 0, 1, 5, 0xD806))
        assert hello.chips[0].model == "950" and hello.dcmi_version == "26.0.0"
        answers = helper.call(
            [
                ("power", 0, 0, 0),
                ("temperature", 1, 0, 0),
                ("health", 1, 0, 0),
                ("errors", 1, 0, 0),
                ("hbm", 0, 0, 0),
                ("multi_utilization", 0, 0, 0),
                ("utilization", 0, 0, 3),
                ("aicore", 0, 0, 0),
                ("ecc", 0, 0, 2),
                ("ecc", 0, 0, 0),  # DDR: -8255 on a 950 through v2 as well
                ("memory", 0, 0, 0),  # no v2 counterpart: -8255
                ("processes", 0, 0, 0),
                ("chip", 0, 0, 0),
                ("voltage", 0, 0, 0),
                ("hccs_bw", 0, 0, 200),
            ]
        )
    finally:
        helper.close()
    assert answers[:4] == [(0, 1500), (0, 50), (0, 2), (0, [0x80E01801])]
    assert answers[4] == (
        0,
        {
            "memory_size": 131072,
            "freq": 0,
            "memory_usage": 4000,
            "temp": 0,
            "bandwith_util_rate": 12,
        },
    )
    assert answers[5] == (0, {"aic_util": 28, "aiv_util": 20, "aicore_util": 30, "npu_util": 33})
    assert answers[6:8] == [(0, 2), (0, {"freq": 1650, "cur_freq": 1400})]
    assert answers[8][0] == 0 and answers[8][1]["total_single_bit_error_cnt"] == 2
    assert answers[9:11] == [(-8255, None), (-8255, None)]
    assert answers[11] == (0, [[4321, 209715200]])
    assert answers[12] == (0, {"chip_name": "950PR", "aicore_cnt": 32})
    assert answers[13:] == [(0, 85), (-8255, None)]


def test_v2_is_not_used_where_dcmi_init_works(tmp_path: Path) -> None:
    """On a 910B dcmi_init answers and the v1 calls serve; dcmiv2_init is not tried."""
    helper = _helper(tmp_path, "board 910b\n" + STATE)
    try:
        hello = helper.hello()
    finally:
        helper.close()
    assert hello.interface == 1 and hello.chips[0] == DcmiChip(0, 0, 0, 0, 0)
