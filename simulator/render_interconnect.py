"""`npu-smi info -t hccs | hccs-bw | pcie-err | sio-info` in the driver's print formats
(npu_info_print_ext.c, npu_chip_info.c), driven by the scenario's `network` section
(`hccs_crc_errors`, `sio_crc_errors`). None for every other argv: render.py answers those."""

from __future__ import annotations

from collections.abc import Sequence

from npumon.simulator.hccn_state import _seconds_active, _unit
from npumon.simulator.model import Scenario
from npumon.simulator.render import CHIP_OPTION_REFUSED, SimResult, _fail, _int, _options
from npumon.simulator.state import SimChip, SimNode

QUERIES = ("hccs", "hccs-bw", "pcie-err", "sio-info")
HCCS_PORTS = range(1, 8)  # an 8-card mesh: ports 1-7, one link to each other card
P310_HCCS_PORTS = range(0, 1)  # 310P: the statistics of port 0
NOT_SUPPORTED = 255
NO_WINDOW = "\nThis command must input profiling_time(1-1000, ms).\n\n"


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


def hccs_counters(
    sc: Scenario, chip: SimChip, el: float, ports: range = HCCS_PORTS
) -> dict[str, list[int]]:
    """Per port: packets sent and received, CRC errors (the last port carries the scenario's)
    and retries."""
    crc = _errors(sc, chip, "hccs_crc_errors", el)
    rate = [1e6 * (0.5 + _unit(sc.seed, chip.npu, chip.chip, "hccs", p - 1)) for p in ports]
    errors = [0] * (len(ports) - 1) + [crc]
    return {
        "tx": [int(r * el) for r in rate],
        "rx": [int(r * 0.98 * el) for r in rate],
        "crc": errors,
        "retry": [e // 2 for e in errors],
    }


def first_error_port(counters: dict[str, list[int]]) -> int | None:
    """The driver's first PCS with a problem: here, the first port with CRC errors."""
    return next((p for p, e in zip(HCCS_PORTS, counters["crc"], strict=True) if e), None)


def _counter_rows(counters: dict[str, list[int]]) -> list[tuple[str, Sequence[object]]]:
    tx, rx = counters["tx"], counters["rx"]
    return [
        ("hccs tx packets ", tx),
        ("hccs tx bytes ", [p * 20 for p in tx]),
        ("hccs rx packets ", rx),
        ("hccs rx bytes ", [p * 20 for p in rx]),
        ("hccs retry count ", counters["retry"]),
        ("hccs error count ", counters["crc"]),
    ]


def hccs(sc: Scenario, chip: SimChip, el: float, p310: bool) -> str:
    """print_npu_hccs_lane (ports 1-7), or on 310P print_npu_310P_hccs_lane_packet_info."""
    if p310:
        rows = _counter_rows(hccs_counters(sc, chip, el, P310_HCCS_PORTS))
        return "".join(f"\t{key:<30} : {_list(values)}\n" for key, values in rows)
    counters = hccs_counters(sc, chip, el)
    first = first_error_port(counters)  # one health for the chip: NOK while a port has errors
    lanes = [4] * len(HCCS_PORTS)
    out = f"\t{'hccs health status ':<30} : {'OK' if first is None else 'NOK'}\n"
    out += f"\t{'hccs lane mode ':<30} : {_list(lanes)}\n"
    # which lanes carry the link: 4 digits per port, then 16 spaces
    out += f"\t{'hccs link lane list ':<30} : [" + ("1111" + " " * 16 + " ") * len(lanes) + "]\n"
    out += f"\t{'hccs link speed ':<30} : {_list([n * 56 for n in lanes])}\n"
    out += "".join(f"\t{key:<30} : {_list(values)}\n" for key, values in _counter_rows(counters))
    return out + f"\t{'hccs first error lane ':<30} : {'NA' if first is None else first}\n"


def hccs_bandwidths(sc: Scenario, chip: SimChip) -> list[tuple[float, float]]:
    """(tx, rx) GB/s per port."""
    load = chip.aicore_percent / 100
    return [
        (
            12.0 * load * (0.8 + 0.2 * _unit(sc.seed, chip.npu, p - 1)),
            11.5 * load * (0.8 + 0.2 * _unit(sc.seed, chip.npu, p - 1, "rx")),
        )
        for p in HCCS_PORTS
    ]


def hccs_bw(sc: Scenario, chip: SimChip) -> str:
    """Rows labelled by the driver's port index, then the total."""
    out = f"{'hccs link':<30} {'tx_bandwidth(GB/S)':<30} {'rx_bandwidth(GB/S)':<30}\n"
    pairs = hccs_bandwidths(sc, chip)
    out += "".join(
        f"{port:<35d} {tx:<30.6f} {rx:<30.6f}\n"
        for port, (tx, rx) in zip(HCCS_PORTS, pairs, strict=True)
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


def _window(argv: list[str]) -> tuple[list[str], int | None]:
    """The argv without `-time <ms>` (hccs-bw's sampling window), and the window."""
    if "-time" not in argv[:-1]:
        return argv, None
    at = argv.index("-time")
    return argv[:at] + argv[at + 2 :], _int(argv[at + 1])


def answer(argv: list[str], sc: Scenario, node: SimNode, t: float) -> SimResult | None:
    """The interconnect queries; None for anything else (and while DCMI fails)."""
    argv, window = _window(argv)
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
    if fam.v2 and kind in ("hccs", "hccs-bw"):  # the type table has no 950 (npu_cmd_parse.c)
        return unsupported
    if fam.v2 and "-c" in opts:  # checked after the type, before the query (npu_info_main)
        return _fail(CHIP_OPTION_REFUSED)
    if kind == "sio-info":
        if not (fam.a3 or fam.v2):
            return unsupported
        tx, rx = sio_counts(sc, chip, el)
        return SimResult(f"\tTX Error Count : {tx}\n\tRX Error Count : {rx}\n")
    if kind == "pcie-err":
        return SimResult(pcie_err(sc, chip, el, fam.p310))
    if "-c" not in opts:  # hccs and hccs-bw need -c
        return unsupported
    if kind == "hccs":
        return SimResult(hccs(sc, chip, el, fam.p310))
    if fam.p310:  # no bandwidth sampling on 310P
        return unsupported
    if window is None or not 1 <= window <= 1000:
        return _fail(NO_WINDOW)
    return SimResult(hccs_bw(sc, chip))
