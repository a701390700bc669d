"""The simulated node as the state file of npumon's fake libdcmi.so (tests/fakes/dcmi).

`python -m npumon.simulator.dcmi --scenario S [--time T]` prints it: the same node npu-smi's
stand-in prints, in DCMI's units (power 0.1 W, MB, process memory in bytes, %), so a test can
read one node through both backends.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from npumon.simulator import render_interconnect as links
from npumon.simulator.cli import load_at
from npumon.simulator.families import Family
from npumon.simulator.model import Scenario, Vnpu
from npumon.simulator.state import SimChip, SimNode, node_state

HEALTH_CODES = {"OK": 0, "Warning": 1, "Alarm": 2, "Critical": 3}
BOARDS = {"910b": "910b", "a3": "a3", "310p-duo": "310p", "310b": "310b"}  # family -> board
MIB = 1024 * 1024


def _chip_keys(node: SimNode, c: SimChip) -> dict[str, object]:
    fam = node.family
    keys: dict[str, object] = {
        "health": HEALTH_CODES.get(c.health, 0xFFFFFFFF),
        "temp": c.temperature_celsius,
        "util2": c.aicore_percent,
        "util3": c.aicpu_percent,
        "util4": c.ctrlcpu_percent,
        "freq7": c.aicore_current_mhz,
        "freq9": c.aicore_rated_mhz,
        "aicore_freq": c.aicore_rated_mhz,  # dcmi_get_device_aicore_info, which npu-smi reads
        "aicore_cur_freq": c.aicore_current_mhz,
        "bus": c.bus_id,
        "chip_type": fam.chip_type,
        "chip_name": fam.table_name,
        "aicore_cnt": c.aicore_count or 0,
    }
    # ECC: HBM on A2/A3 (the aggregate equals the count here), DDR on 310P (all 0)
    sbe, dbe = (c.hbm_single_bit_errors, c.hbm_double_bit_errors) if fam.has_hbm else (0, 0)
    ecc = 2 if fam.has_hbm else 0
    keys.update(
        {
            f"ecc{ecc}_enable": 1,
            f"ecc{ecc}_sbe": sbe,
            f"ecc{ecc}_dbe": dbe,
            f"ecc{ecc}_total_sbe": sbe,
            f"ecc{ecc}_total_dbe": dbe,
        }
    )
    keys.update(_dcmi_only(node, c))
    if c.power_watts is not None:  # NA (310P) and "-" (A3 die 1): -8255
        keys["power"] = round(c.power_watts * 10)
    optional = {
        "util12": c.aivector_percent if c.aivector_percent is not None else c.vectorcore_percent,
        "util13": c.npu_util_percent,
        "util14": c.aicube_percent,
        "util10": c.hbm_bandwidth_percent,
        "util6": c.hbm_usage_percent,
    }
    keys.update({k: v for k, v in optional.items() if v is not None})
    if c.hbm_total_mb is not None and c.hbm_used_mb is not None:
        keys.update(
            hbm_total=c.hbm_total_mb,
            hbm_used=c.hbm_used_mb,
            hbm_temp=c.hbm_temperature_celsius or 0,
            hbm_freq=c.hbm_clock_mhz or 0,
            hbm_bw=c.hbm_bandwidth_percent or 0,  # what npu-smi's -t usages prints
        )
    if c.memory_total_mb:  # 910B and A3 print 0 / 0: their driver answers -8255
        keys.update(
            mem_total=c.memory_total_mb,
            mem_available=c.memory_total_mb - c.memory_used_mb,
            mem_freq=c.ddr_clock_mhz,
            util5=c.memory_bandwidth_percent,
            util1=c.memory_usage_percent,
            hugepages_total=c.hugepages_total,
            hugepages_free=c.hugepages_total - c.hugepages_used,
        )
    return keys


def _dcmi_only(node: SimNode, c: SimChip) -> dict[str, object]:
    """Readings npu-smi does not print: voltage (0.01 V) rising with load; PCIe bandwidth
    (MB/ms, min/max/avg) on 910B only, as npu-exporter collects it, host-to-device writes
    scaling with AI Core load."""
    keys: dict[str, object] = {"volt": 80 + c.aicore_percent // 10}
    if node.family.key == "910b":
        avg = 1 + c.aicore_percent // 10
        for name, scale in (("tx_p_bw", 1), ("rx_p_bw", 2), ("rx_cpl_bw", 1), ("tx_cpl_bw", 1)):
            keys[f"pcie_{name}"] = f"{avg * scale // 2}/{avg * scale * 2}/{avg * scale}"
        keys.update(pcie_tx_np_bw="0/1/0", pcie_rx_np_bw="0/1/0", pcie_tx_np_lantency="1/3/2")
    return keys


# not an Atlas 9000 A3 SuperPoD's (0x1C, 0x1D): HCCS ports 1-7; the A3 an A+X board (0x15),
# the one npu-smi reads PCIe errors on, as the stand-in prints them
MAINBOARD, A_X_MAINBOARD = 0x14, 0x15
HDLC_OK = 3
LANE_WORD = 1 | 0b1111 << 1 | 0b10 << 9  # switched to HCCS, lanes 0-3 in use, 4-lane mode


def _slash(values: Sequence[object]) -> str:
    return "/".join(str(v) for v in values)


def _interconnect(sc: Scenario, c: SimChip, fam: Family, el: float) -> dict[str, object]:
    """What npu-smi's stand-in prints for -t hccs / hccs-bw / pcie-err / sio-info, as the
    driver's structs hold it: per port index from 0, the links at ports 1-7. The 950 has no
    HCCS (DCMI v2 answers -8255) and its PCIe errors are npu-smi's; its SIO is DCMI's."""
    keys: dict[str, object] = {}
    fam_a3 = fam.a3
    if not (fam.p310 or fam.v2):
        counters = links.hccs_counters(sc, c, el)
        first_error = links.first_error_port(counters)
        keys.update(
            mainboard=A_X_MAINBOARD if fam_a3 else MAINBOARD,
            hccs_pcs_status=0 if first_error is None else 1 | first_error << 8,
            hccs_hdlc_status=HDLC_OK,
            hccs_ports=sum(1 << port for port in links.HCCS_PORTS),
            hccs_lanes=_slash([LANE_WORD] * len(links.HCCS_PORTS)),
            **{f"hccs_{k}": _slash([0, *v]) for k, v in counters.items()},
        )
        pairs = links.hccs_bandwidths(sc, c)
        keys["hccs_bw_tx"] = _slash(["0", *(f"{tx:.6f}" for tx, _ in pairs)])
        keys["hccs_bw_rx"] = _slash(["0", *(f"{rx:.6f}" for _, rx in pairs)])
        keys["pcie_err"] = _slash([0, 0, 0, 0, links.pcie_retries(el)])
    if fam_a3 or fam.v2:
        keys["sio_err"] = _slash(links.sio_counts(sc, c, el))
    return keys


def _vnpu_lines(c: SimChip, vnpus: Sequence[Vnpu]) -> list[str]:
    """`vnpu <card> <device> <id> <util %> <total KB> <free KB>`: busy as the chip."""
    lines = []
    for v in (v for v in vnpus if (v.npu, v.chip) == (c.npu, c.chip)):
        total = v.memory_mb * 1024
        free = total - total * c.aicore_percent // 100
        lines.append(f"vnpu {c.npu} {c.chip} {v.vnpu_id} {c.aicore_percent} {total} {free}")
    return lines


def state_text(
    node: SimNode, vnpus: Sequence[Vnpu] = (), scenario: Scenario | None = None, t: float = 0.0
) -> str:
    """The fake's state file for the node (cards that disappeared are not listed), the
    scenario's vNPUs and, given the scenario and time, the interconnect readings."""
    lines = [
        f"version {node.npu_smi_version} {node.npu_smi_version}",
        f"board {BOARDS.get(node.family.key, node.family.key)}",  # what the fake refuses
    ]
    if node.dcmi_fail_code is not None:
        lines.append(f"init {node.dcmi_fail_code}")
    for card in node.cards:
        for c in card.chips:
            found = _chip_keys(node, c)
            if scenario is not None:
                found.update(_interconnect(scenario, c, node.family, scenario.elapsed(t)))
            keys = " ".join(f"{k}={v}" for k, v in found.items())
            phy = c.logic_id if c.phy_id is None else c.phy_id
            lines.append(f"chip {c.npu} {c.chip} {c.logic_id} {phy} {keys}")
            lines += [f"proc {c.npu} {c.chip} {p.pid} {p.memory_mb * MIB}" for p in c.processes]
            lines += [f"error {c.npu} {c.chip} {code}" for code in c.error_codes]
            lines += _vnpu_lines(c, vnpus)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m npumon.simulator.dcmi", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--scenario", help="scenario YAML path or built-in name")
    parser.add_argument("--time", type=float, help="simulated wall-clock seconds")
    args = parser.parse_args(argv)
    loaded = load_at("npumon.simulator.dcmi", args.scenario, args.time)
    if loaded is None:
        return 2
    scenario, t = loaded
    sys.stdout.write(state_text(node_state(scenario, t), scenario.vnpus, scenario, t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
