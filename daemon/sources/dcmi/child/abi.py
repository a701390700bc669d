"""libdcmi's structs as ctypes, and the functions the helper calls (shared/reference/dcmi.md §3-4).

Struct layouts are those of Huawei's Apache-2.0 `dcmi_interface_api.h` (mind-cluster), member
order and C types unchanged, never packed; a test compares every size and offset with gcc's.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from ctypes import (
    POINTER,
    c_char,
    c_double,
    c_float,
    c_int,
    c_ubyte,
    c_uint,
    c_ulong,
    c_ulonglong,
    c_ushort,
    c_void_p,
)
from pathlib import Path

MAX_CHIP_NAME_LEN = 32
MAX_CARDS = 64
MAX_ERROR_CODES = 128
MAX_PROCESSES = 64  # the driver writes up to 64 (MAX_PROC_NUM_IN_DEVICE), the manual says 32
VERSION_BYTES = 64


class ChipInfoV2(ctypes.Structure):
    _fields_ = (
        ("chip_type", c_ubyte * MAX_CHIP_NAME_LEN),
        ("chip_name", c_ubyte * MAX_CHIP_NAME_LEN),
        ("chip_ver", c_ubyte * MAX_CHIP_NAME_LEN),
        ("aicore_cnt", c_uint),
        ("npu_name", c_ubyte * MAX_CHIP_NAME_LEN),
    )


class PcieInfoAll(ctypes.Structure):
    _fields_ = (
        ("venderid", c_uint),
        ("subvenderid", c_uint),
        ("deviceid", c_uint),
        ("subdeviceid", c_uint),
        ("domain", c_int),
        ("bdf_busid", c_uint),
        ("bdf_deviceid", c_uint),
        ("bdf_funcid", c_uint),
        ("reserve", c_ubyte * 32),
    )


class EccInfo(ctypes.Structure):
    """The 9-field (36-byte) form; drivers with the 7-field form write only the first 28."""

    _fields_ = (
        ("enable_flag", c_int),
        ("single_bit_error_cnt", c_uint),
        ("double_bit_error_cnt", c_uint),
        ("total_single_bit_error_cnt", c_uint),
        ("total_double_bit_error_cnt", c_uint),
        ("single_bit_isolated_pages_cnt", c_uint),
        ("double_bit_isolated_pages_cnt", c_uint),
        ("single_bit_next_isolated_pages_cnt", c_uint),
        ("double_bit_next_isolated_pages_cnt", c_uint),
    )


class EccBuffer(ctypes.Union):
    """What the helper passes for an ECC struct: room for a struct grown again, zero-filled."""

    _fields_ = (("info", EccInfo), ("room", c_ubyte * 64))


class HbmInfo(ctypes.Structure):
    _fields_ = (
        ("memory_size", c_ulonglong),  # MB
        ("freq", c_uint),  # MHz
        ("memory_usage", c_ulonglong),  # MB
        ("temp", c_int),  # Celsius
        ("bandwith_util_rate", c_uint),  # %
    )


class MemoryInfoV3(ctypes.Structure):
    _fields_ = (
        ("memory_size", c_ulonglong),  # MB
        ("memory_available", c_ulonglong),  # MB
        ("freq", c_uint),
        ("hugepagesize", c_ulong),  # KB
        ("hugepages_total", c_ulong),
        ("hugepages_free", c_ulong),
        ("utiliza", c_uint),
        ("reserve", c_ubyte * 60),
    )


class MultiUtilizationInfo(ctypes.Structure):
    """dcmi_multi_utilization_info: AI Cube (the firmware's average), AI Vector, AI Core and
    the NPU's overall %, as npu-smi's `-t usages` reads them on 910B and A3."""

    _fields_ = (
        ("aic_util", c_uint),
        ("aiv_util", c_uint),
        ("aicore_util", c_uint),
        ("npu_util", c_uint),
        ("reserved", c_uint * 8),  # DCMI_UTIL_RESERVED_LEN
    )


class AicoreInfo(ctypes.Structure):
    """dcmi_aicore_info of the driver's header: AI Core rated and current frequency, MHz."""

    _fields_ = (("freq", c_uint), ("cur_freq", c_uint))


class ProcMemInfo(ctypes.Structure):
    _fields_ = (("proc_id", c_int), ("proc_mem_usage", c_ulong))  # bytes


PCIE_PROF_DATA_NUM = 3  # AGENTDRV_PROF_DATA_NUM: min, max, avg over the sampling window


class PcieLinkBandwidthInfo(ctypes.Structure):
    """``profiling_time`` (ms) is the caller's sampling window; each array is (min, max, avg)."""

    _fields_ = (
        ("profiling_time", c_int),
        ("tx_p_bw", c_uint * PCIE_PROF_DATA_NUM),  # MB/ms
        ("tx_np_bw", c_uint * PCIE_PROF_DATA_NUM),
        ("tx_cpl_bw", c_uint * PCIE_PROF_DATA_NUM),
        ("tx_np_lantency", c_uint * PCIE_PROF_DATA_NUM),
        ("rx_p_bw", c_uint * PCIE_PROF_DATA_NUM),
        ("rx_np_bw", c_uint * PCIE_PROF_DATA_NUM),
        ("rx_cpl_bw", c_uint * PCIE_PROF_DATA_NUM),
    )


VDEV_RESERVE, VDEV_SIZE, SOC_SPLIT_MAX = 32, 20, 32  # DCMI_VDEV_FOR_RESERVE, _SIZE, _SPLIT_MAX
VDEV_MNG = 52  # enum dcmi_main_cmd DCMI_MAIN_CMD_VDEV_MNG
# DRV-H's DCMI_VDEV_MNG_SUB_CMD (not in MC-H; npu-exporter's vnpu collector uses 5)
SUB_TOTAL_RESOURCE, SUB_VDEV_ACTIVITY = 1, 5


class BaseResource(ctypes.Structure):
    _fields_ = (
        ("token", c_ulonglong),
        ("token_max", c_ulonglong),
        ("task_timeout", c_ulonglong),
        ("vfg_id", c_uint),
        ("vip_mode", c_ubyte),
        ("reserved", c_ubyte * (VDEV_RESERVE - 1)),
    )


class ComputingResource(ctypes.Structure):
    _fields_ = (
        ("aic", c_float),
        ("aiv", c_float),
        *((name, c_ushort) for name in ("dsa", "rtsq", "acsq", "cdqm", "c_core", "ffts")),
        ("sdma", c_ushort),
        ("pcie_dma", c_ushort),
        ("memory_size", c_ulonglong),  # MB
        ("event_id", c_uint),
        ("notify_id", c_uint),
        ("stream_id", c_uint),
        ("model_id", c_uint),
        ("topic_schedule_aicpu", c_ushort),
        ("host_ctrl_cpu", c_ushort),
        ("host_aicpu", c_ushort),
        ("device_aicpu", c_ushort),
        ("topic_ctrl_cpu_slot", c_ushort),
        ("vdev_aicore_utilization", c_uint),  # %
        ("vdev_memory_total", c_ulonglong),  # KB (npu-exporter's vnpu_pod_total_memory)
        ("vdev_memory_free", c_ulonglong),  # KB
        ("reserved", c_ubyte * (VDEV_RESERVE - VDEV_SIZE)),
    )


class MediaResource(ctypes.Structure):
    _fields_ = (
        *((name, c_float) for name in ("jpegd", "jpege", "vpc", "vdec", "pngd", "venc")),
        ("reserved", c_ubyte * VDEV_RESERVE),
    )


class VdevQueryInfo(ctypes.Structure):
    _fields_ = (
        ("name", c_char * 16),
        ("status", c_uint),
        ("is_container_used", c_uint),
        ("vfid", c_uint),
        ("vfg_id", c_uint),
        ("container_id", c_ulonglong),
        ("base", BaseResource),
        ("computing", ComputingResource),
        ("media", MediaResource),
    )


class VdevQuery(ctypes.Structure):
    """dcmi_vdev_query_stru: the caller sets ``vdev_id``."""

    _fields_ = (("vdev_id", c_uint), ("query_info", VdevQueryInfo))


class SocTotalResource(ctypes.Structure):
    _fields_ = (
        ("vdev_num", c_uint),
        ("vdev_id", c_uint * SOC_SPLIT_MAX),
        ("vfg_num", c_uint),
        ("vfg_bitmap", c_uint),
        ("base", BaseResource),
        ("computing", ComputingResource),
        ("media", MediaResource),
    )


# dcmi_get_device_info's interconnect commands (enum dcmi_main_cmd, DCMI_HCCS_SUB_CMD,
# DCMI_SIO_SUB_CMD, DCMI_PCIE_SUB_CMD_PCIE_ERROR_INFO of the driver's dcmi_interface_api.h)
MAIN_HCCS, MAIN_PCIE, MAIN_SIO = 16, 55, 56
SUB_HCCS_STATUS, SUB_HCCS_LANES, SUB_HCCS_STATISTICS_U64 = 0, 1, 5
SUB_PCIE_ERRORS, SUB_SIO_CRC_ERRORS = 1, 0
HCCS_MAX_PCS = 16  # DCMI_HCCS_MAX_PCS_NUM
HCCS_RESERVED_FIELDS = 64  # DCMI_HCCS_RES_FIELD_NUM


class HccsStatus(ctypes.Structure):
    """dcmi_hccs_statues (sic): links healthy when pcs_status is 0 and hdlc_status 3."""

    _fields_ = (("pcs_status", c_uint), ("hdlc_status", c_uint), ("reserve", c_ubyte * 4))


class HccsLaneInfo(ctypes.Structure):
    """``pcs_lane_bitmap`` holds one word per bit set in ``hccs_port_pcs_bitmap``, in order."""

    _fields_ = (
        ("hccs_port_pcs_bitmap", c_uint),
        ("pcs_lane_bitmap", c_uint * HCCS_MAX_PCS),
        ("reserve", c_uint * 16),
    )


class HccsStatisticsU64(ctypes.Structure):
    """dcmi_hccs_statistic_info_u64: per port since the driver loaded."""

    _fields_ = (
        ("tx_cnt", c_ulonglong * HCCS_MAX_PCS),  # packets
        ("rx_cnt", c_ulonglong * HCCS_MAX_PCS),
        ("crc_err_cnt", c_ulonglong * HCCS_MAX_PCS),
        ("retry_cnt", c_ulonglong * HCCS_MAX_PCS),
        ("reserved", c_ulonglong * HCCS_RESERVED_FIELDS),
    )


class HccsBandwidthInfo(ctypes.Structure):
    """The caller sets ``profiling_time`` (1-1000 ms, the call samples that long); GB/s."""

    _fields_ = (
        ("profiling_time", c_int),
        ("total_txbw", c_double),
        ("total_rxbw", c_double),
        ("tx_bandwidth", c_double * HCCS_MAX_PCS),
        ("rx_bandwidth", c_double * HCCS_MAX_PCS),
    )


class PcieLinkErrorInfo(ctypes.Structure):
    _fields_ = (
        ("tx_err_cnt", c_uint),
        ("rx_err_cnt", c_uint),
        ("lcrc_err_cnt", c_uint),  # DLLP LCRC
        ("ecrc_err_cnt", c_uint),  # TLP ECRC
        ("retry_cnt", c_uint),
        ("rsv", c_uint * 32),
    )


class SioCrcErrors(ctypes.Structure):
    """dcmi_sio_crc_err_statistics_info: CRC errors on the die-to-die link."""

    _fields_ = (
        ("tx_error_count", c_ushort),
        ("rx_error_count", c_ushort),
        ("reserved", c_ubyte * 8),
    )


STRUCTS: dict[str, type[ctypes.Structure]] = {
    "dcmi_hccs_statues": HccsStatus,
    "dcmi_hccs_lane_info": HccsLaneInfo,
    "dcmi_hccs_statistic_info_u64": HccsStatisticsU64,
    "dcmi_hccs_bandwidth_info": HccsBandwidthInfo,
    "dcmi_pcie_link_error_info": PcieLinkErrorInfo,
    "dcmi_sio_crc_err_statistics_info": SioCrcErrors,
    "dcmi_base_resource": BaseResource,
    "dcmi_computing_resource": ComputingResource,
    "dcmi_media_resource": MediaResource,
    "dcmi_vdev_query_info": VdevQueryInfo,
    "dcmi_vdev_query_stru": VdevQuery,
    "dcmi_soc_total_resource": SocTotalResource,
    "dcmi_pcie_link_bandwidth_info": PcieLinkBandwidthInfo,
    "dcmi_chip_info_v2": ChipInfoV2,
    "dcmi_pcie_info_all": PcieInfoAll,
    "dcmi_ecc_info": EccInfo,
    "dcmi_hbm_info": HbmInfo,
    "dcmi_get_memory_info_stru": MemoryInfoV3,
    "dcmi_proc_mem_info": ProcMemInfo,
    "dcmi_multi_utilization_info": MultiUtilizationInfo,
    "dcmi_aicore_info": AicoreInfo,
}

_INT_P = POINTER(c_int)
_UINT_P = POINTER(c_uint)
# every symbol the helper resolves, with its argument types (dlsym'd one by one: a missing one
# is a function the backend lacks, not a failed load)
FUNCTIONS: dict[str, tuple[object, ...]] = {
    "dcmi_init": (),
    "dcmi_get_card_list": (_INT_P, _INT_P, c_int),
    "dcmi_get_device_num_in_card": (c_int, _INT_P),
    "dcmi_get_device_logic_id": (_INT_P, c_int, c_int),
    "dcmi_get_device_phyid_from_logicid": (c_uint, _UINT_P),
    "dcmi_get_dcmi_version": (POINTER(c_char), c_int),
    "dcmi_get_driver_version": (POINTER(c_char), c_uint),
    "dcmi_get_device_health": (c_int, c_int, _UINT_P),
    "dcmi_get_device_errorcode_v2": (c_int, c_int, _INT_P, _UINT_P, c_uint),
    "dcmi_get_device_power_info": (c_int, c_int, _INT_P),
    "dcmi_get_device_temperature": (c_int, c_int, _INT_P),
    "dcmi_get_device_hbm_info": (c_int, c_int, POINTER(HbmInfo)),
    "dcmi_get_device_memory_info_v3": (c_int, c_int, POINTER(MemoryInfoV3)),
    "dcmi_get_device_utilization_rate": (c_int, c_int, c_int, _UINT_P),
    "dcmi_get_device_multi_utilization_rate": (c_int, c_int, POINTER(MultiUtilizationInfo)),
    "dcmi_get_device_aicore_info": (c_int, c_int, POINTER(AicoreInfo)),
    "dcmi_get_device_ecc_info": (c_int, c_int, c_int, POINTER(EccBuffer)),
    "dcmi_get_device_resource_info": (c_int, c_int, POINTER(ProcMemInfo), _INT_P),
    "dcmi_get_device_chip_info_v2": (c_int, c_int, POINTER(ChipInfoV2)),
    "dcmi_get_device_pcie_info_v2": (c_int, c_int, POINTER(PcieInfoAll)),
    "dcmi_get_device_voltage": (c_int, c_int, _UINT_P),
    "dcmi_get_device_info": (c_int, c_int, c_int, c_uint, c_void_p, _UINT_P),
    "dcmi_get_pcie_link_bandwidth_info": (c_int, c_int, POINTER(PcieLinkBandwidthInfo)),
    "dcmi_get_mainboard_id": (c_int, c_int, _UINT_P),
    "dcmi_get_hccs_link_bandwidth_info": (c_int, c_int, POINTER(HccsBandwidthInfo)),
    # DCMI v2 (the 950's interface, in the same library; the driver's header): one int dev_id,
    # the chip's logic id, where v1 has (card, device); the structs are v1's
    "dcmiv2_init": (),
    "dcmiv2_get_device_list": (_INT_P, _INT_P, c_int),
    "dcmiv2_get_chip_phy_id_by_dev_id": (c_int, _UINT_P),
    "dcmiv2_get_dcmi_version": (POINTER(c_char), c_uint),
    "dcmiv2_get_driver_version": (POINTER(c_char), c_uint),
    "dcmiv2_get_device_health": (c_int, _UINT_P),
    "dcmiv2_get_device_error_code_list": (c_int, _INT_P, _UINT_P, c_uint),
    "dcmiv2_get_device_power_info": (c_int, _INT_P),
    "dcmiv2_get_device_temperature": (c_int, _INT_P),
    "dcmiv2_get_device_hbm_info": (c_int, POINTER(HbmInfo)),
    "dcmiv2_get_device_utilization_rate": (c_int, c_int, _UINT_P),
    "dcmiv2_get_device_multi_utilization_rate": (c_int, POINTER(MultiUtilizationInfo)),
    "dcmiv2_get_device_aicore_info": (c_int, POINTER(AicoreInfo)),
    "dcmiv2_get_device_ecc_info": (c_int, c_int, POINTER(EccBuffer)),
    "dcmiv2_get_device_proc_mem_info": (c_int, POINTER(ProcMemInfo), _INT_P),
    "dcmiv2_get_device_chip_info": (c_int, POINTER(ChipInfoV2)),
    "dcmiv2_get_device_pcie_info": (c_int, POINTER(PcieInfoAll)),
    "dcmiv2_get_device_voltage": (c_int, _UINT_P),
    "dcmiv2_get_device_info": (c_int, c_int, c_uint, c_void_p, _UINT_P),
    "dcmiv2_get_pcie_link_bandwidth_info": (c_int, POINTER(PcieLinkBandwidthInfo)),
    "dcmiv2_get_mainboard_id": (c_int, _UINT_P),
}
# the v1 function each helper reader calls -> its v2 counterpart (the same struct and
# arguments without the device); v1 functions with none (HCCS bandwidth, DDR memory) answer
# -8255 under v2, as npu-smi has no such query on a 950
V2_OF: dict[str, str | None] = {
    "dcmi_get_device_health": "dcmiv2_get_device_health",
    "dcmi_get_device_errorcode_v2": "dcmiv2_get_device_error_code_list",
    "dcmi_get_device_power_info": "dcmiv2_get_device_power_info",
    "dcmi_get_device_temperature": "dcmiv2_get_device_temperature",
    "dcmi_get_device_hbm_info": "dcmiv2_get_device_hbm_info",
    "dcmi_get_device_memory_info_v3": None,
    "dcmi_get_device_utilization_rate": "dcmiv2_get_device_utilization_rate",
    "dcmi_get_device_multi_utilization_rate": "dcmiv2_get_device_multi_utilization_rate",
    "dcmi_get_device_aicore_info": "dcmiv2_get_device_aicore_info",
    "dcmi_get_device_ecc_info": "dcmiv2_get_device_ecc_info",
    "dcmi_get_device_resource_info": "dcmiv2_get_device_proc_mem_info",
    "dcmi_get_device_chip_info_v2": "dcmiv2_get_device_chip_info",
    "dcmi_get_device_pcie_info_v2": "dcmiv2_get_device_pcie_info",
    "dcmi_get_device_voltage": "dcmiv2_get_device_voltage",
    "dcmi_get_device_info": "dcmiv2_get_device_info",
    "dcmi_get_pcie_link_bandwidth_info": "dcmiv2_get_pcie_link_bandwidth_info",
    "dcmi_get_mainboard_id": "dcmiv2_get_mainboard_id",
    "dcmi_get_hccs_link_bandwidth_info": None,
}


def load(path: Path) -> tuple[dict[str, Callable[..., int]], tuple[str, ...]]:
    """dlopen the library; each function of FUNCTIONS resolved on its own.

    Returns the functions found and the names missing. OSError when dlopen fails.
    """
    library = ctypes.CDLL(str(path), mode=os.RTLD_LAZY | os.RTLD_GLOBAL)
    found: dict[str, Callable[..., int]] = {}
    missing = []
    for name, argtypes in FUNCTIONS.items():
        try:
            function = getattr(library, name)
        except AttributeError:
            missing.append(name)
            continue
        function.argtypes = argtypes
        function.restype = ctypes.c_int
        found[name] = function
    return found, tuple(missing)
