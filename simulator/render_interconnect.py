"""`npu-smi info -t hccs | hccs-bw | pcie-err | sio-info` in the driver's print formats
(npu_info_print_ext.c, npu_chip_info.c), driven by the scenario's `network` section
(`hccs_crc_errors`, `sio_crc_errors`). None for every other argv: render.py answers those."""

from __future__ import annotations

from collections.abc import Sequence

from npumon.simulator.hccn_state import _seconds_active, _unit
from npumon.simulator.model import Scenario
from npumon.simulator.render import SimResult, _int, _options
from npumon.simulator.state import SimChip, SimNode

QUERIES = ("hccs", "hccs-bw", "pcie-err", "sio-info")
HCCS_LINKS = 7  # an 8-card mesh: one link to each other card
NOT_SUPPORTED = 255


def _list(values: Sequence[object]) -> str:
    return "[" + "".join(f"{v!s:<20} " for v in values) + "]"


def _errors(sc: Scenario, chip: SimChip, kind: str, el: float) -> int:
    return int(
        sum(
            e.per_second * _seconds_active(e, el)
            for e in sc.network
            if e.kind == kind and e.npu == chip.npu and e.chip in (None, chip.chip)
        )
    )


def hccs_counters(sc: Scenario, chip: SimChip, el: float) -> dict[str, list[int]]:
    """Per link: packets sent and received, CRC errors (the last link carries the scenario's)
    and retries."""
    crc = _errors(sc, chip, "hccs_crc_errors", el)
    rate = [
        1e6 * (0.5 + _unit(sc.seed, chip.npu, chip.chip, "hccs", link))
        for link in range(HCCS_LINKS)
    ]
    errors = [0] * (HCCS_LINKS - 1) + [crc]
    return {
        "tx": [int(r * el) for r in rate],
        "rx": [int(r * 0.98 * el) for r in rate],
        "crc": errors,
        "retry": [e // 2 for e in errors],
    }


def hccs(sc: Scenario, chip: SimChip, el: float) -> str:
    counters = hccs_counters(sc, chip, el)
    tx, rx, errors = counters["tx"], counters["rx"], counters["crc"]
    # one health for the chip, as the driver keeps it: NOK while a link has CRC errors
    health = "NOK" if any(errors) else "OK"
    rows: list[tuple[str, Sequence[object]]] = [
        ("hccs health status ", [health] * HCCS_LINKS),
        ("hccs lane mode ", [4] * HCCS_LINKS),
        ("hccs link speed ", [224] * HCCS_LINKS),
        ("hccs tx packets ", tx),
        ("hccs tx bytes ", [p * 20 for p in tx]),
        ("hccs rx packets ", rx),
        ("hccs rx bytes ", [p * 20 for p in rx]),
        ("hccs retry count ", counters["retry"]),
        ("hccs error count ", errors),
        ("hccs first error lane ", ["NA"] * (HCCS_LINKS - 1) + [1 if errors[-1] else "NA"]),
    ]
    lines = [f"\t{key:<30} : {_list(values)}\n" for key, values in rows]
    # the lane bitmap: 8 digits per port, then 16 spaces
    lines.insert(
        2, f"\t{'hccs link lane list ':<30} : [" + ("11110000" + " " * 16) * HCCS_LINKS + "]\n"
    )
    return "".join(lines)


def hccs_bandwidths(sc: Scenario, chip: SimChip) -> list[tuple[float, float]]:
    """(tx, rx) GB/s per link."""
    load = chip.aicore_percent / 100
    return [
        (
            12.0 * load * (0.8 + 0.2 * _unit(sc.seed, chip.npu, link)),
            11.5 * load * (0.8 + 0.2 * _unit(sc.seed, chip.npu, link, "rx")),
        )
        for link in range(HCCS_LINKS)
    ]


def hccs_bw(sc: Scenario, chip: SimChip) -> str:
    """Rows numbered by the driver's port index: from 1 (macros 1-7) on this board."""
    out = f"{'hccs link':<30} {'tx_bandwidth(GB/S)':<30} {'rx_bandwidth(GB/S)':<30}\n"
    pairs = hccs_bandwidths(sc, chip)
    out += "".join(
        f"{port:<35d} {tx:<30.6f} {rx:<30.6f}\n" for port, (tx, rx) in enumerate(pairs, start=1)
    )
    total_tx, total_rx = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
    return out + f"{'total':<35} {total_tx:<30.6f} {total_rx:<30.6f}\n"


def pcie_retries(el: float) -> int:
    return int(el // 600)  # a replay now and then on a healthy link


def sio_counts(sc: Scenario, chip: SimChip, el: float) -> tuple[int, int]:
    """(tx, rx) CRC errors on the die-to-die link."""
    crc = _errors(sc, chip, "sio_crc_errors", el)
    return crc // 3, crc


def pcie_err(sc: Scenario, chip: SimChip, el: float, p310: bool) -> str:
    if p310:
        names = (
            "Pcs Rx Error Count",
            "Phy Lane Error Count",
            "Dl Lcrc Error Count",
            "Dl Dcrc Error Count",
        )
        return "".join(f"\t{name:<30} : 0\n" for name in names)
    names = ("TX Error Count", "RX Error Count", "Lcrc Error Count", "Ecrc Error Count")
    values = (*zip(names, (0, 0, 0, 0), strict=True), ("Retry Count", pcie_retries(el)))
    return f"\t{'NPU ID':<30} : {chip.npu}\n" + "".join(f"\t{k:<30} : {v}\n" for k, v in values)


def answer(argv: list[str], sc: Scenario, node: SimNode, t: float) -> SimResult | None:
    """The interconnect queries; None for anything else (and while DCMI fails)."""
    opts = _options(argv[1:]) if argv[:1] == ["info"] else None
    kind = opts.get("-t") if opts else None
    if opts is None or kind not in QUERIES or node.dcmi_fail_code is not None:
        return None
    npu = _int(opts.get("-i"))
    card = node.card(npu) if npu is not None else None
    chip_id = _int(opts.get("-c")) if "-c" in opts else 0
    if card is None or chip_id is None or not 0 <= chip_id < len(card.chips):
        return None  # render.py prints the invalid card / chip texts
    chip, fam, el = card.chips[chip_id], node.family, sc.elapsed(t)
    unsupported = SimResult(f"This device does not support querying {kind}.\n", "", NOT_SUPPORTED)
    if kind == "sio-info":
        if not fam.a3:
            return unsupported
        tx, rx = sio_counts(sc, chip, el)
        return SimResult(f"\tTX Error Count : {tx}\n\tRX Error Count : {rx}\n")
    if kind == "pcie-err":
        return SimResult(pcie_err(sc, chip, el, fam.p310))
    if fam.p310 or "-c" not in opts:  # 310P: no HCCS mesh here; hccs needs -c
        return unsupported
    return SimResult(hccs(sc, chip, el) if kind == "hccs" else hccs_bw(sc, chip))
