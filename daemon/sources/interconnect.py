"""The interconnect queries on the health tier: HCCS links and bandwidth, PCIe and die-to-die
(SIO) error counters, once per chip per full health pass, each skipped for an hour where the chip
answers "not supported" (910A has no pcie-err; only A3 and 950 have SIO; 310P has no hccs-bw).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from npumon.daemon.model.chips import ChipId
from npumon.daemon.model.network import ChipInterconnect
from npumon.daemon.sources import query
from npumon.daemon.sources.query import Query
from npumon.daemon.sources.wrapper import SourceRun

Ask = Callable[[SourceRun, Query[Any]], Any]  # ChipSources._ask: (run, query) -> report or None


def poll_interconnect(
    ask: Ask,
    run: SourceRun,
    chips: list[ChipId],
    into: dict[ChipId, ChipInterconnect],
    *,
    chip_option: bool = True,
) -> None:
    """Fill ``into`` chip by chip (a timeout stops the pass; what was read stays).

    HCCS links and bandwidth are a chip's; PCIe and SIO errors are asked through the NPU alone
    on a single-chip NPU (as documented for the 950) and per chip where an NPU has two dies
    (A3). Without ``chip_option`` (the 950's npu-smi, which refuses `-c`) every query is asked
    through the NPU alone.
    """
    chips_per_npu = Counter(npu for npu, _ in chips)
    for npu, chip in chips:
        by_npu = not chip_option
        whole = by_npu or chips_per_npu[npu] == 1
        found = ChipInterconnect(
            hccs=ask(run, query.hccs(npu, chip, by_npu=by_npu)),
            hccs_bw=ask(run, query.hccs_bandwidth(npu, chip, by_npu=by_npu)),
            pcie=ask(run, query.pcie_errors(npu, chip, by_npu=whole)),
            sio=ask(run, query.sio_errors(npu, chip, by_npu=whole)),
        )
        if found != ChipInterconnect():
            into[(npu, chip)] = found
