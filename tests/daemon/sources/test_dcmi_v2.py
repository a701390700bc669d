"""A 950 through DCMI v2: the real helper over the gcc-built fake (board 950: dcmi_init -8255,
dcmiv2_init 0) behind DcmiBackend, each NPU ID one chip addressed by its logic id. npu-smi's table
of the cross-check is a captured two-NPU table the fake's values match; its detail answers
are "not supported", so DCMI's are served unchecked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from npumon.daemon.runner import ProcessGroups
from npumon.daemon.sources import query
from npumon.daemon.sources.dcmi.client import DcmiHelper
from npumon.daemon.sources.dcmi.serving import DcmiBackend
from npumon.daemon.sources.npu_smi import NpuSmi
from npumon.daemon.sources.wrapper import SourceRun
from tests.daemon.sources.fake_runner import TABLE, Clock, FakeRunner
from tests.helpers.fake_dcmi import STATE_ENV, build_fake_dcmi

pytestmark = pytest.mark.integration

# the fixture table's NPUs 0 and 1 (78.2 / 77.9 W, 40 / 41 C, HBM 61825 / 65536 MB)
CHIP = (
    "health=0 hbm_total=65536 hbm_used=61825 hbm_temp=35 hbm_bw=12 util2=0 util3=2 util4=5 "
    "util12=20 util13=33 util14=28 aicore_freq=1650 aicore_cur_freq=1400 ecc2_enable=1 "
    "ecc2_total_sbe=2 ecc0_enable=1 chip_type=Ascend chip_name=950PR aicore_cnt=32"
)
STATE = f"""\
version 26.0.0 26.0.0
board 950
chip 0 0 0 4 power=782 temp=40 bus=0000:0E:00.0 {CHIP}
chip 1 0 1 5 power=779 temp=41 bus=0000:0F:00.0 {CHIP}
error 1 0 80E01801
"""


def test_a_950_is_served_through_dcmiv2(tmp_path: Path) -> None:
    library = build_fake_dcmi(tmp_path / "lib")
    (tmp_path / "state").write_text(STATE)
    clock = Clock()
    helper = DcmiHelper(
        library,
        10.0,
        env={**os.environ, STATE_ENV: str(tmp_path / "state")},
        groups=ProcessGroups(),
    )
    runner = FakeRunner({"info": TABLE})
    smi = DcmiBackend(
        NpuSmi(["npu-smi"], 10.0, runner),
        mode="auto",
        helper=helper,
        proc_root=tmp_path,
        monotonic=clock,
    )
    try:
        table = smi.ask(SourceRun(), query.info())  # the cross-check: it passes
        assert smi.backend is not None and smi.backend.backend == "dcmi"
        assert helper.hello().interface == 2
        assert [(c.npu, c.chip, c.power_watts) for c in table.chips] == [(0, 0, 78.2), (1, 0, 77.9)]
        assert table.chips[0].memory_total_bytes == 0  # DDR is never read on a 950
        usages = smi.ask(SourceRun(), query.usages(0))
        usage = usages.chips[0]
        assert (usage.aicube_ratio, usage.aivector_ratio, usage.npu_util_ratio) == (
            0.28,
            0.2,
            0.33,
        )
        assert usage.hbm_bandwidth_ratio == 0.12
        common = smi.ask(SourceRun(), query.common(0))
        assert (common.chips[0].aicore_rated_hertz, common.chips[0].aicore_count) == (1.65e9, 32)
        ecc = smi.ask(SourceRun(), query.ecc(0))
        assert ecc.chips[0].hbm_single_bit_aggregate_total == 2
        assert ecc.chips[0].ddr_single_bit_errors is None
        report = smi.ask(SourceRun(), query.health_of(1, 0))
        assert report.error_codes == ("80E01801",)
    finally:
        helper.close()
    # npu-smi ran for the table's check and once for each detail query's check, nothing else
    assert runner.calls[0] == "info" and runner.calls.count("info") == 1
    assert len(runner.calls) == 5
