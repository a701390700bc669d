"""The DCMI helper process: `python -m npumon.daemon.sources.dcmi.child LIBRARY`.

It owns libdcmi: one thread, one dcmi_init, then one JSON request per line on stdin, each
answered by one JSON line on stdout. The daemon kills it when an answer is late (a call stuck in
the driver), so nothing here has a timeout of its own. Its first line (the hello) says what
dcmi_init returned, which functions the library lacks and the chips dcmi_init listed; a request
``{"calls": [[name, card, device, arg], ...]}`` gets ``{"answers": [[rc, value], ...]}``.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from collections.abc import Callable
from ctypes import byref, c_int, c_uint
from pathlib import Path
from typing import IO, Any

from npumon.daemon.sources.dcmi.child.abi import (
    MAIN_HCCS,
    MAIN_PCIE,
    MAIN_SIO,
    MAX_CARDS,
    MAX_ERROR_CODES,
    MAX_PROCESSES,
    SOC_SPLIT_MAX,
    SUB_HCCS_LANES,
    SUB_HCCS_STATISTICS_U64,
    SUB_HCCS_STATUS,
    SUB_PCIE_ERRORS,
    SUB_SIO_CRC_ERRORS,
    SUB_TOTAL_RESOURCE,
    SUB_VDEV_ACTIVITY,
    V2_OF,
    VDEV_MNG,
    VERSION_BYTES,
    AicoreInfo,
    ChipInfoV2,
    EccBuffer,
    HbmInfo,
    HccsBandwidthInfo,
    HccsLaneInfo,
    HccsStatisticsU64,
    HccsStatus,
    MemoryInfoV3,
    MultiUtilizationInfo,
    PcieInfoAll,
    PcieLinkBandwidthInfo,
    PcieLinkErrorInfo,
    ProcMemInfo,
    SioCrcErrors,
    SocTotalResource,
    VdevQuery,
    load,
)

MISSING_SYMBOL = -99998  # npu-exporter's code for a function the library lacks
Functions = dict[str, Any]
Answer = tuple[int, Any]


def _text(raw: Any) -> str:
    return bytes(raw).split(b"\0", 1)[0].decode("utf-8", "replace").strip()


def _int_out(fn: Any, card: int, device: int, out: Any) -> Answer:
    rc = fn(card, device, byref(out))
    return rc, out.value if rc == 0 else None


def _fields(struct: Any, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(struct, name) for name in names}


def _hbm(fn: Any, card: int, device: int, _: int) -> Answer:
    """The whole struct (all scalars): a value taken from it needs no change here."""
    info = HbmInfo()
    rc = fn(card, device, byref(info))
    return rc, _fields(info, tuple(name for name, _ in HbmInfo._fields_)) if rc == 0 else None


def _multi_utilization(fn: Any, card: int, device: int, _: int) -> Answer:
    info = MultiUtilizationInfo()
    rc = fn(card, device, byref(info))
    names = ("aic_util", "aiv_util", "aicore_util", "npu_util")
    return rc, _fields(info, names) if rc == 0 else None


def _aicore(fn: Any, card: int, device: int, _: int) -> Answer:
    info = AicoreInfo()
    rc = fn(card, device, byref(info))
    return rc, _fields(info, ("freq", "cur_freq")) if rc == 0 else None


def _memory(fn: Any, card: int, device: int, _: int) -> Answer:
    info = MemoryInfoV3()
    rc = fn(card, device, byref(info))
    names = ("memory_size", "memory_available", "hugepages_total", "hugepages_free")
    return rc, _fields(info, names) if rc == 0 else None


def _ecc(fn: Any, card: int, device: int, kind: int) -> Answer:
    buffer = EccBuffer()  # zero-filled, larger than either struct form
    rc = fn(card, device, kind, byref(buffer))
    names = tuple(name for name, _ in buffer.info._fields_[1:5])  # the counts both forms have
    return rc, _fields(buffer.info, names) if rc == 0 else None


def _errors(fn: Any, card: int, device: int, _: int) -> Answer:
    count, codes = c_int(0), (c_uint * MAX_ERROR_CODES)()
    rc = fn(card, device, byref(count), codes, MAX_ERROR_CODES)
    return rc, [codes[i] for i in range(min(count.value, MAX_ERROR_CODES))] if rc == 0 else None


def _processes(fn: Any, card: int, device: int, _: int) -> Answer:
    entries, count = (ProcMemInfo * MAX_PROCESSES)(), c_int(0)
    rc = fn(card, device, entries, byref(count))
    if rc != 0:
        return rc, None
    n = max(0, min(count.value, MAX_PROCESSES))  # a garbled count: -1, or past the buffer
    # pid 0 is never a process on the device: an empty slot that a garbled count let in
    return rc, [[e.proc_id, e.proc_mem_usage] for e in entries[:n] if e.proc_id > 0]


def _chip(fn: Any, card: int, device: int, _: int) -> Answer:
    info = ChipInfoV2()
    rc = fn(card, device, byref(info))
    if rc != 0:
        return rc, None
    return rc, {
        "chip_name": _text(info.chip_name),
        "aicore_cnt": info.aicore_cnt,
    }


def _pcie(fn: Any, card: int, device: int, _: int) -> Answer:
    info = PcieInfoAll()
    rc = fn(card, device, byref(info))
    names = ("domain", "bdf_busid", "bdf_deviceid", "bdf_funcid")
    return rc, _fields(info, names) if rc == 0 else None


PCIE_BANDWIDTH = ("tx_p_bw", "tx_np_bw", "tx_cpl_bw", "rx_p_bw", "rx_np_bw", "rx_cpl_bw")


def _pcie_bandwidth(fn: Any, card: int, device: int, window_ms: int) -> Answer:
    info = PcieLinkBandwidthInfo(profiling_time=window_ms)
    rc = fn(card, device, byref(info))
    return rc, {name: list(getattr(info, name)) for name in PCIE_BANDWIDTH} if rc == 0 else None


def _vnpus(fn: Any, card: int, device: int, _: int) -> Answer:
    """[[vdev id, AI Core %, memory total KB, free KB], ...]: the list, then each one's activity."""
    total = SocTotalResource()
    size = c_uint(ctypes.sizeof(total))
    rc = fn(card, device, VDEV_MNG, SUB_TOTAL_RESOURCE, byref(total), byref(size))
    found = []
    for vdev in total.vdev_id[: min(total.vdev_num, SOC_SPLIT_MAX)] if rc == 0 else ():
        query = VdevQuery(vdev_id=vdev)
        size = c_uint(ctypes.sizeof(query))
        rc = fn(card, device, VDEV_MNG, SUB_VDEV_ACTIVITY, byref(query), byref(size))
        if rc != 0:
            break
        c = query.query_info.computing
        found.append([vdev, c.vdev_aicore_utilization, c.vdev_memory_total, c.vdev_memory_free])
    return rc, found if rc == 0 else None


def _device_info(fn: Any, card: int, device: int, main: int, sub: int, struct: Any) -> int:
    size = c_uint(ctypes.sizeof(struct))
    return int(fn(card, device, main, sub, byref(struct), byref(size)))


def _hccs(fn: Any, card: int, device: int, _: int) -> Answer:
    """npu-smi's `-t hccs` calls, in its order: statistics, status, lane info; each array by
    port index (the first failing call's code: 310P has the statistics alone)."""
    stats, status, lanes = HccsStatisticsU64(), HccsStatus(), HccsLaneInfo()
    for sub, struct in (
        (SUB_HCCS_STATISTICS_U64, stats),
        (SUB_HCCS_STATUS, status),
        (SUB_HCCS_LANES, lanes),
    ):
        rc = _device_info(fn, card, device, MAIN_HCCS, sub, struct)
        if rc != 0:
            return rc, None
    return 0, {
        "tx": list(stats.tx_cnt),
        "rx": list(stats.rx_cnt),
        "crc": list(stats.crc_err_cnt),
        "retry": list(stats.retry_cnt),
        "pcs_status": status.pcs_status,
        "hdlc_status": status.hdlc_status,
        "ports": lanes.hccs_port_pcs_bitmap,
        "lanes": list(lanes.pcs_lane_bitmap),
    }


def _hccs_bandwidth(fn: Any, card: int, device: int, window_ms: int) -> Answer:
    info = HccsBandwidthInfo(profiling_time=window_ms)
    rc = fn(card, device, byref(info))
    return rc, {"tx": list(info.tx_bandwidth), "rx": list(info.rx_bandwidth)} if rc == 0 else None


def _pcie_errors(fn: Any, card: int, device: int, _: int) -> Answer:
    info = PcieLinkErrorInfo()
    rc = _device_info(fn, card, device, MAIN_PCIE, SUB_PCIE_ERRORS, info)
    names = ("tx_err_cnt", "rx_err_cnt", "lcrc_err_cnt", "ecrc_err_cnt", "retry_cnt")
    return rc, [getattr(info, n) for n in names] if rc == 0 else None


def _sio(fn: Any, card: int, device: int, _: int) -> Answer:
    info = SioCrcErrors()
    rc = _device_info(fn, card, device, MAIN_SIO, SUB_SIO_CRC_ERRORS, info)
    return rc, [info.tx_error_count, info.rx_error_count] if rc == 0 else None


def _int_out_typed(fn: Any, card: int, device: int, kind: int) -> Answer:
    out = c_uint()
    rc = fn(card, device, kind, byref(out))
    return rc, out.value if rc == 0 else None


# request name -> (symbol, reader(function, card, device, arg))
CALLS: dict[str, tuple[str, Callable[[Any, int, int, int], Answer]]] = {
    "health": ("dcmi_get_device_health", lambda f, c, d, _: _int_out(f, c, d, c_uint())),
    "errors": ("dcmi_get_device_errorcode_v2", _errors),
    "power": ("dcmi_get_device_power_info", lambda f, c, d, _: _int_out(f, c, d, c_int())),
    "temperature": ("dcmi_get_device_temperature", lambda f, c, d, _: _int_out(f, c, d, c_int())),
    "hbm": ("dcmi_get_device_hbm_info", _hbm),
    "memory": ("dcmi_get_device_memory_info_v3", _memory),
    "utilization": ("dcmi_get_device_utilization_rate", _int_out_typed),  # arg: the type
    "multi_utilization": ("dcmi_get_device_multi_utilization_rate", _multi_utilization),
    "aicore": ("dcmi_get_device_aicore_info", _aicore),
    "ecc": ("dcmi_get_device_ecc_info", _ecc),
    "processes": ("dcmi_get_device_resource_info", _processes),
    "chip": ("dcmi_get_device_chip_info_v2", _chip),
    "pcie": ("dcmi_get_device_pcie_info_v2", _pcie),
    "voltage": ("dcmi_get_device_voltage", lambda f, c, d, _: _int_out(f, c, d, c_uint())),
    # arg: the sampling window in ms (the call takes about that long)
    "pcie_bandwidth": ("dcmi_get_pcie_link_bandwidth_info", _pcie_bandwidth),
    "vnpus": ("dcmi_get_device_info", _vnpus),
    # the card's, asked of device 0 as npu-smi's get_env_offset_info does
    "mainboard": ("dcmi_get_mainboard_id", lambda f, c, d, _: _int_out(f, c, 0, c_uint())),
    "hccs": ("dcmi_get_device_info", _hccs),
    # arg: the sampling window in ms, as for pcie_bandwidth
    "hccs_bw": ("dcmi_get_hccs_link_bandwidth_info", _hccs_bandwidth),
    "pcie_errors": ("dcmi_get_device_info", _pcie_errors),
    "sio": ("dcmi_get_device_info", _sio),
}


def call(functions: Functions, name: str, card: int, device: int, arg: int) -> Answer:
    symbol, reader = CALLS[name]
    function = functions.get(symbol)
    if function is None:
        return MISSING_SYMBOL, None
    return reader(function, card, device, arg)


def _version(functions: Functions, symbol: str) -> str | None:
    function = functions.get(symbol)
    if function is None:
        return None
    buffer = ctypes.create_string_buffer(VERSION_BYTES)
    return _text(buffer.raw) if function(buffer, VERSION_BYTES) == 0 else None


def pci_device_id(functions: Functions, card: int, device: int) -> int:
    """The chip's PCI device id, which npu-smi's npu_init_ep_chip_type maps to its chip type
    (0xD802 910B, 0xD803 A3, ...); 0 where the chip has no PCIe function (SoC boards: -8255)."""
    function = functions.get("dcmi_get_device_pcie_info_v2")
    if function is None:
        return 0
    info = PcieInfoAll()
    return int(info.deviceid) if function(card, device, byref(info)) == 0 else 0


def enumerate_chips(functions: Functions) -> tuple[int, list[list[int]]]:
    """dcmi_init's chip list as [card, device, logic id, phy id, PCI device id]; (rc, []) on
    the first failure."""
    count, cards = c_int(0), (c_int * MAX_CARDS)()
    rc = functions["dcmi_get_card_list"](byref(count), cards, MAX_CARDS)
    chips: list[list[int]] = []
    for card in cards[: min(count.value, MAX_CARDS)] if rc == 0 else ():
        devices = c_int(0)
        rc = functions["dcmi_get_device_num_in_card"](card, byref(devices))
        for device in range(devices.value) if rc == 0 else ():
            logic, phy = c_int(0), c_uint(0)
            rc = functions["dcmi_get_device_logic_id"](byref(logic), card, device)
            if rc == 0:
                rc = functions["dcmi_get_device_phyid_from_logicid"](logic.value, byref(phy))
            if rc != 0:
                break
            chips.append(
                [card, device, logic.value, phy.value, pci_device_id(functions, card, device)]
            )
        if rc != 0:
            return rc, []
    return rc, chips


NOT_SUPPORTED = -8255
NPU_950 = 0xD806  # NPU_950_DEVICE_ID of npu-smi's npu_common.h
_ENUMERATION_V2 = ("dcmiv2_init", "dcmiv2_get_device_list", "dcmiv2_get_chip_phy_id_by_dev_id")
_ENUMERATION = (
    "dcmi_init",
    "dcmi_get_card_list",
    "dcmi_get_device_num_in_card",
    "dcmi_get_device_logic_id",
    "dcmi_get_device_phyid_from_logicid",
)


def _not_supported(*_: Any) -> int:
    return NOT_SUPPORTED


def _without_device(function: Any) -> Callable[..., int]:
    """A v2 function called as its v1 counterpart: (card, device, rest) -> (dev_id, rest)."""

    def call(dev_id: int, _device: int, *rest: Any) -> int:
        return int(function(dev_id, *rest))

    return call


def v2_functions(functions: Functions) -> Functions:
    """The readers' v1 names bound to the library's v2 functions (absent where it lacks one;
    -8255 where v2 has none)."""
    bound: Functions = {}
    for v1, v2 in V2_OF.items():
        if v2 is None:
            bound[v1] = _not_supported
        elif v2 in functions:
            bound[v1] = _without_device(functions[v2])
    return bound


def enumerate_v2(functions: Functions) -> tuple[int, list[list[int]]]:
    """dcmiv2_init's chips as [logic id, 0, logic id, phy id, 0xD806]: a 950 NPU ID has one
    chip, addressed by its logic id (= npu-smi's NPU ID)."""
    count, ids = c_int(0), (c_int * MAX_CARDS)()
    rc = functions["dcmiv2_get_device_list"](ids, byref(count), MAX_CARDS)
    chips: list[list[int]] = []
    for dev_id in ids[: min(count.value, MAX_CARDS)] if rc == 0 else ():
        phy = c_uint(0)
        rc = functions["dcmiv2_get_chip_phy_id_by_dev_id"](dev_id, byref(phy))
        if rc != 0:
            return rc, []
        chips.append([dev_id, 0, dev_id, phy.value, NPU_950])
    return rc, chips


def hello(functions: Functions, missing: tuple[str, ...]) -> tuple[dict[str, Any], Functions]:
    """The greeting, and the functions the readers call: v1's, or on a 950 (dcmi_init -8255,
    dcmiv2_init 0) the v2 ones under the v1 names."""
    v2_missing = [name for name in missing if name.startswith("dcmiv2_")]
    missing = tuple(name for name in missing if name not in v2_missing)  # the interface in use
    lacking = [name for name in _ENUMERATION if name not in functions]
    if lacking:
        return {"init": MISSING_SYMBOL, "missing": list(missing)}, functions
    rc = functions["dcmi_init"]()
    v2 = rc == NOT_SUPPORTED and all(name in functions for name in _ENUMERATION_V2)
    if v2 and functions["dcmiv2_init"]() == 0:
        enumerated, chips = enumerate_v2(functions)
        return {
            "init": 0,
            "interface": 2,
            "enumerate": enumerated,
            "chips": chips,
            "missing": v2_missing,
            "dcmi_version": _version(functions, "dcmiv2_get_dcmi_version"),
            "driver_version": _version(functions, "dcmiv2_get_driver_version"),
        }, v2_functions(functions)
    if rc != 0:
        return {"init": rc, "missing": list(missing)}, functions
    enumerated, chips = enumerate_chips(functions)
    return {
        "init": 0,
        "interface": 1,
        "enumerate": enumerated,
        "chips": chips,
        "missing": list(missing),
        "dcmi_version": _version(functions, "dcmi_get_dcmi_version"),
        "driver_version": _version(functions, "dcmi_get_driver_version"),
    }, functions


def _write(out: IO[str], message: dict[str, Any]) -> None:
    out.write(json.dumps(message, separators=(",", ":")) + "\n")
    out.flush()


def _own_stdout() -> IO[str]:
    """The answers' stream: a private copy of the daemon's pipe. Descriptor 1 becomes stderr's
    (which the daemon discards), so what the library prints on stdout cannot break an answer."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return answers


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m npumon.daemon.sources.dcmi.child LIBRARY", file=sys.stderr)
        return 2
    out = _own_stdout()
    try:
        functions, missing = load(Path(argv[0]))
    except OSError as error:
        _write(out, {"init": None, "load_error": str(error)})
        return 1
    greeting, functions = hello(functions, missing)
    _write(out, greeting)
    if greeting["init"] != 0:
        return 1
    for line in sys.stdin:
        request = json.loads(line)
        answers = [
            call(functions, name, card, device, arg) for name, card, device, arg in request["calls"]
        ]
        _write(out, {"answers": answers})
    return 0
