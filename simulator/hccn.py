"""`npumon-sim-hccn-tool [--scenario S] [--time T] -i <device> -<query> -g`: a stand-in for
hccn_tool printing the driver's formats (the same ones tests/fixtures/hccn_tool/ holds), driven
by the scenario's `network` section (simulator/hccn_state.py)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from npumon.simulator.cli import TIME_ENV, emit, load_at
from npumon.simulator.hccn_state import MAX_RECORDS, SimPort, sim_port, sim_ports
from npumon.simulator.loader import SCENARIO_ENV
from npumon.simulator.model import Scenario
from npumon.simulator.render import SimResult, _matches
from npumon.simulator.state import SimNode, node_state

NOT_SUPPORTED = "The command is not supported on this product.\n"
NO_DEVICE = "The device is not exist!\n"
SPEED_MBPS = {"910b": 200000, "a3": 400000}
THRESHOLDS = (
    ("Vcc High Thres", "3465.00 mV"),
    ("Vcc Low Thres", "3135.00 mV"),
    ("Temp High Thres", "70 C"),
    ("Temp Low Thres", "0 C"),
    ("TxPower High Thres", "3.5481 mW"),
    ("TxPower Low Thres", "0.2818 mW"),
    ("RxPower High Thres", "3.5481 mW"),
    ("RxPower Low Thres", "0.1445 mW"),
)


def _asctime(seconds: float) -> str:
    return time.asctime(time.gmtime(seconds))


def link_stat(p: SimPort, t: float, el: float) -> str:
    prefix = f"[devid {p.device}]"
    ups = 1 + sum(1 for _, up in p.transitions if up)  # the first link up after driver load
    downs = sum(1 for _, up in p.transitions if not up)
    records = list(reversed(p.transitions))[:MAX_RECORDS]
    lines = [
        f"current time        : {_asctime(t)}",
        f"link up count       : {ups}",
        f"link down count     : {downs}",
        "link change records :" if records else "link change records : NA",
        *(f"    {_asctime(t - (el - at))}    LINK {'UP' if up else 'DOWN'}" for at, up in records),
    ]
    return "".join(f"{prefix}{line}\n" for line in lines)


def stat(p: SimPort) -> str:
    packets = {"rx": p.rx_bytes // 4096, "tx": p.tx_bytes // 4096}
    pfc_pri = {"rx": [p.pfc_rx if pri == 3 else 0 for pri in range(8)], "tx": [0] * 8}
    counters: list[tuple[str, int]] = [
        ("mac_tx_mac_pause_num", 0),
        ("mac_rx_mac_pause_num", 0),
        ("mac_tx_pfc_pkt_num", 0),
        *((f"mac_tx_pfc_pri{i}_pkt_num", v) for i, v in enumerate(pfc_pri["tx"])),
        ("mac_rx_pfc_pkt_num", p.pfc_rx),
        *((f"mac_rx_pfc_pri{i}_pkt_num", v) for i, v in enumerate(pfc_pri["rx"])),
        ("mac_tx_total_pkt_num", packets["tx"]),
        ("mac_tx_total_oct_num", p.tx_bytes),
        ("mac_tx_bad_pkt_num", 0),
        ("mac_tx_bad_oct_num", 0),
        ("mac_rx_total_pkt_num", packets["rx"]),
        ("mac_rx_total_oct_num", p.rx_bytes),
        ("mac_rx_bad_pkt_num", p.fcs_errors),
        ("mac_rx_bad_oct_num", p.fcs_errors * 4096),
        ("mac_rx_fcs_err_pkt_num", p.fcs_errors),
        ("roce_rx_rc_pkt_num", packets["rx"]),
        ("roce_rx_all_pkt_num", packets["rx"]),
        ("roce_rx_err_pkt_num", p.fcs_errors // 2),
        ("roce_tx_rc_pkt_num", packets["tx"]),
        ("roce_tx_all_pkt_num", packets["tx"]),
        ("roce_tx_err_pkt_num", 0),
        ("roce_cqe_num", packets["tx"] // 8),
        ("roce_rx_cnp_pkt_num", p.pfc_rx // 10),
        ("roce_tx_cnp_pkt_num", 0),
        ("roce_unexpected_ack_num", 0),
        ("roce_out_of_order_num", p.fcs_errors // 4),
        ("roce_verification_err_num", 0),
        ("roce_qp_status_err_num", 0),
        ("roce_new_pkt_rty_num", p.fcs_errors * 2),
        ("nic_tx_all_pkg_num", 1200 + packets["tx"] // 1000),
        ("nic_tx_all_oct_num", 160000 + p.tx_bytes // 1000),
        ("nic_rx_all_pkg_num", 6400 + packets["rx"] // 1000),
        ("nic_rx_all_oct_num", 480000 + p.rx_bytes // 1000),
    ]
    return "packet statistics:\n" + "".join(f"{k}:{v}\n" for k, v in counters)


def optical(p: SimPort) -> str:
    rows = [
        ("present", "present"),
        ("temperature", f"{p.temperature_celsius} C"),
        ("high power enable reg", "enabled"),
        ("vendor name", "Hisense"),
        ("vendor part number", "LMQ8611-PC+"),
        ("vendor serial number", f"V8SIM{p.device:06d}"),
        ("vendor org unique id", "0xac 0x4a 0x0"),
        ("xsfp identifier", "QSFP+ or later"),
        ("xsfp wave length", "850 nm"),
        ("manufact date code", "2023.6.18"),
        ("Vcc", "3262.90 mV"),
    ]
    for lane, rx in enumerate(p.rx_power_mw):
        rows += [
            (f"Tx Power{lane}", f"{1.4 + 0.01 * lane:.4f} mW"),
            (f"Rx Power{lane}", f"{rx:.4f} mW"),
        ]
    rows += list(THRESHOLDS)
    rows += [(f"Tx Bias{lane}", f"{7.93 - 0.002 * lane:.4f} mA") for lane in range(4)]
    rows += [("Tx Los Flag", "0x0"), ("Rx Los Flag", "0x0" if p.up else "0xf")]
    return "optical info:\n" + "".join(f"{k:<21}: {v}\n" for k, v in rows)


def lldp(p: SimPort) -> str:
    switch, port = p.chip.npu // 4, p.device + 1
    return (
        f"Chassis ID TLV\n\tMAC: 70:8c:b6:0{switch}:00:01\nPort ID TLV\n"
        f"\tIfname: 400GE1/{switch + 1}/{port}:1\nSystem Name TLV\n\tleaf-sim-{switch}\n"
        "System Capabilities TLV\n\tEnabled capabilities: Bridge, Router\n"
        "Maximum Frame Size TLV\n\t9216\nEnd of LLDPDU TLV\n"
    )


# ---------------------------------------------------------------- the 950: `-g -<q> -i N [-u -p]`
UB_PORTS = (4, 5, 6)  # a 4P Atlas 350 card's UB ports, udie 0 (hccn_tool `tool_lib.c`)
UB_WINDOW_MS = (100, 10000)  # `-bandwidth -time` (HT/common/ubase_cmd_data.h)


def _box(widths: tuple[int, ...], rows: Sequence[Sequence[object]]) -> str:
    """A `+---+` box whose first row is its header, every cell ` %-<w>s `."""
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    lines = [rule]
    for i, row in enumerate(rows):
        lines.append("|" + "|".join(f" {c!s:<{w}} " for c, w in zip(row, widths, strict=True)))
        lines[-1] += "|"
        if i == 0:
            lines.append(rule)
    return "\n".join([*lines, rule]) + "\n"


def dev_info_950(npu: int, port: SimPort) -> str:
    """`tool_print_port_info` then `tool_print_netdev_info` (hccn_tool `tool_dev_info.c`)."""
    state = "UP" if port.up else "DOWN"
    ports = [
        ("UDie ID", "Port ID", "Speed Ability(Gbps)", "Port Type", "Link Status", "Media Type"),
        *((0, p, 400, "UB", state, "Electrical") for p in UB_PORTS),
    ]
    netdev = [
        ("Interface Name", "IP Address", "Netmask", "Bond Mode", "Slaves"),
        ("end0v0", f"192.168.{npu}.199", "255.255.255.0", "NA", "NA"),
    ]
    return _box((7, 7, 19, 9, 11, 10), ports) + _box((15, 42, 42, 9, 15), netdev)


def speed_950(npu: int, udie: int, p: int, port: SimPort) -> str:
    """`tool_speed_exec`: speed 0 prints `unknown`, width 0 `NA`."""
    row = (npu, udie, p, "400 G", "X4", "X4", "normal")
    if not port.up:
        row = (npu, udie, p, "unknown", "X4", "NA", "abnormal")
    head = ("NPU", "UDie", "Port", "Speed", "Cap", "Width", "Status")
    return _box((3, 4, 4, 7, 3, 5, 9), [head, row])


def link_stat_950(npu: int, udie: int, p: int, port: SimPort, t: float, el: float) -> str:
    ups = 1 + sum(1 for _, up in port.transitions if up)
    downs = sum(1 for _, up in port.transitions if not up)
    records = list(reversed(port.transitions))[:MAX_RECORDS]
    rows = [
        ("NPU", "UDie", "Port", "Link_Status", "Time_Stamp"),
        *(
            (npu, udie, p, "LINK_UP" if up else "LINK_DOWN", _asctime(t - (el - at)))
            for at, up in records
        ),
    ]
    counts = f"link up count : {ups}\nlink down count : {downs}\n"
    return counts + _box((3, 4, 4, 11, 24), rows)


def stat_950(p: int, port: SimPort) -> str:
    """`tool_display_stat_info` (hccn_tool `tool_shell_ops.c`): a UB port's counters."""
    rx, tx = port.rx_bytes // 4096, port.tx_bytes // 4096
    zero = ("ub_ipv4_pkt_cnt", "ub_ipv6_pkt_cnt", "unic_ipv4_pkt_cnt", "unic_ipv6_pkt_cnt")
    rows: list[tuple[str, int]] = [("port_id", p), ("is_uboe_port", 0)]
    for d, packets, flits in (("rx", rx, port.rx_bytes // 20), ("tx", tx, port.tx_bytes // 20)):
        rows += [(f"{k}_{d}", 0) for k in zero]
        rows += [
            (f"ub_compact_pkt_cnt_{d}", packets),
            (f"ub_umoc_ctph_cnt_{d}", 0),
            (f"ub_umoc_ntph_cnt_{d}", 0),
            (f"ub_mem_pkt_cnt_{d}", packets // 10),
            (f"unknown_pkt_cnt_{d}", 0),
            (f"drop_ind_cnt_{d}", port.fcs_errors // 4 if d == "rx" else 0),
            (f"err_ind_cnt_{d}", 0),
        ]
        if d == "rx":
            rows += [(f"to_{k}_pkt_cnt_rx", 0) for k in ("host", "imp", "mar", "link", "noc")]
            rows += [("route_err_cnt_rx", 0)]
        else:
            rows += [("lpbk_ind_cnt_tx", 0)]
        rows += [(f"out_err_cnt_{d}", 0), (f"length_err_cnt_{d}", 0)]
        ack = "rx_send_ack_flit" if d == "rx" else "tx_recv_ack_flit"
        rows += [(f"{d}_busi_flit_num", flits), (ack, packets // 8)]
    rows += [
        ("retry_req_sum", port.fcs_errors * 2),
        ("retry_ack_sum", port.fcs_errors * 2),
        ("crc_error_sum", port.fcs_errors),
    ]
    return "packet statistics:\n" + "".join(f"{k}: {v}\n" for k, v in rows)


def bandwidth_950(port: SimPort, el: float) -> str:
    """`tool_ub_bandwidth_exec`: MB/sec over the window."""
    tx = port.tx_bytes / el / 1e6 if port.up and el > 0 else 0.0
    rx = port.rx_bytes / el / 1e6 if port.up and el > 0 else 0.0
    return f"Bandwidth TX: {tx:10.02f} MB/sec\nBandwidth RX: {rx:10.02f} MB/sec\n"


def _value(args: list[str], flag: str) -> int | None:
    at = args.index(flag) + 1 if flag in args else len(args)
    return int(args[at]) if at < len(args) and args[at].isdigit() else None


def answer_950(args: list[str], sc: Scenario, node: SimNode, t: float) -> SimResult:
    """The 950's forms: `-g -dev_info -i N`, `-g -<query> -i N -u U -p P [-time T]`."""
    npu, udie, p, window = (_value(args, f) for f in ("-i", "-u", "-p", "-time"))
    card = node.card(npu) if npu is not None else None
    if card is None or "-g" not in args:
        return SimResult("", NO_DEVICE, 255)
    port = sim_port(sc, card.chips[0], sc.elapsed(t))
    el = sc.elapsed(t)
    if "-dev_info" in args:
        return SimResult(dev_info_950(card.npu, port))
    if "-ub_connect" in args:  # tool_ub_connect_exec; a link down leaves its ports INITIAL
        word = "UP" if port.up else "INITIAL"
        ports = "".join(f"port {p} : {word}\n" for p in UB_PORTS)
        return SimResult(f"link status : {'UP' if port.up else 'DOWN'}\n{ports}")
    if udie != 0 or p not in UB_PORTS:
        return SimResult("", "Command execute failed!\n", 255)
    if "-bandwidth" in args:
        if window is not None and not UB_WINDOW_MS[0] <= window <= UB_WINDOW_MS[1]:
            lo, hi = UB_WINDOW_MS
            return SimResult("", f"Option [-time {window}] is out of range [{lo}, {hi}].\n", 255)
        return SimResult(bandwidth_950(port, el))
    renderers = {
        "-link": lambda: f"link status: {'UP' if port.up else 'DOWN'}\n",
        "-speed": lambda: speed_950(card.npu, 0, p, port),
        "-link_stat": lambda: link_stat_950(card.npu, 0, p, port, t, el),
        "-stat": lambda: stat_950(p, port),
    }
    query = next((a for a in args if a in renderers), None)
    return SimResult(renderers[query]()) if query else SimResult("", NOT_SUPPORTED, 255)


def answer(args: list[str], sc: Scenario, t: float) -> SimResult:
    """What `hccn_tool <args>` prints; argv excludes the program name."""
    node = node_state(sc, t)
    if sc.family in ("310p-duo", "310b"):  # inference boards: no RoCE NIC
        return SimResult("", NOT_SUPPORTED, 255)
    if node.family.v2:
        return answer_950(args, sc, node, t)
    if "-i" not in args or args.index("-i") + 1 >= len(args) or "-g" not in args:
        return SimResult("", "Command execute failed!\n", 255)
    device = args[args.index("-i") + 1]
    port = sim_ports(sc, node, t).get(int(device)) if device.isdigit() else None
    if port is None:
        return SimResult("", NO_DEVICE, 255)
    el = sc.elapsed(t)
    renderers = {
        "-link": lambda: f"link status: {'UP' if port.up else 'DOWN'}\n",
        "-speed": lambda: f"Speed: {SPEED_MBPS.get(sc.family, 200000)} Mb/s\n",
        "-link_stat": lambda: link_stat(port, t, el),
        "-stat": lambda: stat(port),
        "-optical": lambda: optical(port),
        "-net_health": lambda: f"net health status: {'Success' if port.up else 'Fault'}\n",
        "-ip": lambda: (
            f"ipaddr:10.0.{port.chip.npu // 4}.{100 + port.device}\nnetmask:255.255.255.0\n"
        ),
        "-lldp": lambda: lldp(port),
    }
    query = next((a for a in args if a in renderers), None)
    return SimResult(renderers[query](), "", 0) if query else SimResult("", NOT_SUPPORTED, 255)


def _options(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    """The simulator's own options; every other argument, in order, is hccn_tool's argv."""
    parser = argparse.ArgumentParser(
        prog="npumon-sim-hccn-tool", add_help=False, allow_abbrev=False
    )
    parser.add_argument("--scenario", help=f"scenario YAML or name; default ${SCENARIO_ENV}")
    parser.add_argument("--time", type=float, help=f"simulated seconds; default ${TIME_ENV} or now")
    return parser.parse_known_args(argv)


def main(argv: list[str] | None = None) -> int:
    args, rest = _options(argv)
    loaded = load_at("npumon-sim-hccn-tool", args.scenario, args.time)
    if loaded is None:
        return 2
    scenario, t = loaded
    result = answer(rest, scenario, t)
    hang = max(
        (h.seconds for h in node_state(scenario, t).hangs if _matches(h.argv, rest)), default=0.0
    )
    return emit(result.stdout, result.stderr, result.exit_code, hang)


if __name__ == "__main__":
    sys.exit(main())
