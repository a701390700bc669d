"""npu-smi's interconnect queries on the health tier: HCCS links and bandwidth, PCIe and die-to-die
(SIO) error counters, once per chip per full health pass, each skipped for an hour where the chip
answers "not supported" (910A has no pcie-err; only A3 and 950 have SIO; 310P has no hccs-bw).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from npumon.daemon.model.network import ChipInterconnect
from npumon.daemon.model.npu_smi import ChipId
from npumon.daemon.parsers import interconnect
from npumon.daemon.sources.dcmi_readings import HCCS_WINDOW_MS
from npumon.daemon.sources.wrapper import SourceRun

Ask = Callable[..., Any]  # NpuSmiSources._ask: (run, parse, *args) -> parsed or None


def poll_interconnect(
    ask: Ask,
    run: SourceRun,
    chips: list[ChipId],
    into: dict[ChipId, ChipInterconnect],
    *,
    chip_option: bool = True,
) -> None:
    """Fill ``into`` chip by chip (a timeout stops the pass; what was read stays).

    `-t hccs` / `-t hccs-bw` need `-c`, and `-t hccs-bw` a sampling window (`-time`, 1-1000
    ms: npu-smi refuses it without one), during which the call blocks; `-t pcie-err` and
    `-t sio-info` take `-i` alone on a single-chip NPU (as documented for the 950) and `-i -c`
    where an NPU has two dies (A3). Without ``chip_option`` (the 950's npu-smi, which refuses
    `-c`) every query takes `-i` alone.
    """
    window = ("-time", str(HCCS_WINDOW_MS))
    chips_per_npu = Counter(npu for npu, _ in chips)
    for npu, chip in chips:
        with_chip = ("-i", str(npu), "-c", str(chip)) if chip_option else ("-i", str(npu))
        where = with_chip if chips_per_npu[npu] > 1 else ("-i", str(npu))
        found = ChipInterconnect(
            hccs=ask(run, interconnect.parse_hccs, "-t", "hccs", *with_chip),
            hccs_bw=ask(run, interconnect.parse_hccs_bw, "-t", "hccs-bw", *with_chip, *window),
            pcie=ask(run, interconnect.parse_pcie_err, "-t", "pcie-err", *where),
            sio=ask(run, interconnect.parse_sio, "-t", "sio-info", *where),
        )
        if found != ChipInterconnect():
            into[(npu, chip)] = found
