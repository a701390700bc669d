/* The fake libdcmi's own header: the structs of shared/reference/dcmi_interface_api.h (MC-H,
 * Apache-2.0, (c) Huawei), member order and types unchanged, with plain exported prototypes.
 * MC-H defines DCMIDLLEXPORT as `static`: a library built against it exports nothing. */
#ifndef NPUMON_FAKE_DCMI_H
#define NPUMON_FAKE_DCMI_H

#define MAX_CHIP_NAME_LEN 32
#define DIE_ID_COUNT 5
#define MAX_LENGTH 256
#define DCMI_UTIL_RESERVED_LEN 8
#define AGENTDRV_PROF_DATA_NUM 3
#define DCMI_VDEV_RES_NAME_LEN 16
#define DCMI_VDEV_SIZE 20
#define DCMI_VDEV_FOR_RESERVE 32
#define DCMI_SOC_SPLIT_MAX 32

struct dcmi_chip_info_v2 {
    unsigned char chip_type[MAX_CHIP_NAME_LEN];
    unsigned char chip_name[MAX_CHIP_NAME_LEN];
    unsigned char chip_ver[MAX_CHIP_NAME_LEN];
    unsigned int aicore_cnt;
    unsigned char npu_name[MAX_CHIP_NAME_LEN];
};
struct dcmi_pcie_info_all {
    unsigned int venderid;
    unsigned int subvenderid;
    unsigned int deviceid;
    unsigned int subdeviceid;
    int domain;
    unsigned int bdf_busid;
    unsigned int bdf_deviceid;
    unsigned int bdf_funcid;
    unsigned char reserve[32];
};
struct dcmi_die_id { unsigned int soc_die[DIE_ID_COUNT]; };
/* The 9-field (36-byte) form of newer drivers; older drivers write the first 7 (28 bytes). */
struct dcmi_ecc_info {
    int enable_flag;
    unsigned int single_bit_error_cnt;
    unsigned int double_bit_error_cnt;
    unsigned int total_single_bit_error_cnt;
    unsigned int total_double_bit_error_cnt;
    unsigned int single_bit_isolated_pages_cnt;
    unsigned int double_bit_isolated_pages_cnt;
    unsigned int single_bit_next_isolated_pages_cnt;
    unsigned int double_bit_next_isolated_pages_cnt;
};
struct dcmi_hbm_info {
    unsigned long long memory_size;
    unsigned int freq;
    unsigned long long memory_usage;
    int temp;
    unsigned int bandwith_util_rate;
};
struct dcmi_get_memory_info_stru {
    unsigned long long memory_size;
    unsigned long long memory_available;
    unsigned int freq;
    unsigned long hugepagesize;
    unsigned long hugepages_total;
    unsigned long hugepages_free;
    unsigned int utiliza;
    unsigned char reserve[60];
};
struct dcmi_proc_mem_info {
    int proc_id;
    unsigned long proc_mem_usage;
};
struct dcmi_multi_utilization_info {
    unsigned int aic_util;
    unsigned int aiv_util;
    unsigned int aicore_util;
    unsigned int npu_util;
    unsigned int reserved[DCMI_UTIL_RESERVED_LEN];
};
/* not in MC-H; DRV-H (the vendor header, H:138) */
struct dcmi_aicore_info {
    unsigned int freq;
    unsigned int cur_freq;
};
struct dcmi_pcie_link_bandwidth_info {
    int profiling_time;
    unsigned int tx_p_bw[AGENTDRV_PROF_DATA_NUM];
    unsigned int tx_np_bw[AGENTDRV_PROF_DATA_NUM];
    unsigned int tx_cpl_bw[AGENTDRV_PROF_DATA_NUM];
    unsigned int tx_np_lantency[AGENTDRV_PROF_DATA_NUM];
    unsigned int rx_p_bw[AGENTDRV_PROF_DATA_NUM];
    unsigned int rx_np_bw[AGENTDRV_PROF_DATA_NUM];
    unsigned int rx_cpl_bw[AGENTDRV_PROF_DATA_NUM];
};
struct dcmi_base_resource {
    unsigned long long token;
    unsigned long long token_max;
    unsigned long long task_timeout;
    unsigned int vfg_id;
    unsigned char vip_mode;
    unsigned char reserved[DCMI_VDEV_FOR_RESERVE - 1];
};
struct dcmi_computing_resource {
    float aic;
    float aiv;
    unsigned short dsa;
    unsigned short rtsq;
    unsigned short acsq;
    unsigned short cdqm;
    unsigned short c_core;
    unsigned short ffts;
    unsigned short sdma;
    unsigned short pcie_dma;
    unsigned long long memory_size;
    unsigned int event_id;
    unsigned int notify_id;
    unsigned int stream_id;
    unsigned int model_id;
    unsigned short topic_schedule_aicpu;
    unsigned short host_ctrl_cpu;
    unsigned short host_aicpu;
    unsigned short device_aicpu;
    unsigned short topic_ctrl_cpu_slot;
    unsigned int vdev_aicore_utilization;
    unsigned long long vdev_memory_total;
    unsigned long long vdev_memory_free;
    unsigned char reserved[DCMI_VDEV_FOR_RESERVE - DCMI_VDEV_SIZE];
};
struct dcmi_media_resource {
    float jpegd;
    float jpege;
    float vpc;
    float vdec;
    float pngd;
    float venc;
    unsigned char reserved[DCMI_VDEV_FOR_RESERVE];
};
struct dcmi_vdev_query_info {
    char name[DCMI_VDEV_RES_NAME_LEN];
    unsigned int status;
    unsigned int is_container_used;
    unsigned int vfid;
    unsigned int vfg_id;
    unsigned long long container_id;
    struct dcmi_base_resource base;
    struct dcmi_computing_resource computing;
    struct dcmi_media_resource media;
};
struct dcmi_vdev_query_stru {
    unsigned int vdev_id;
    struct dcmi_vdev_query_info query_info;
};
struct dcmi_soc_total_resource {
    unsigned int vdev_num;
    unsigned int vdev_id[DCMI_SOC_SPLIT_MAX];
    unsigned int vfg_num;
    unsigned int vfg_bitmap;
    struct dcmi_base_resource base;
    struct dcmi_computing_resource computing;
    struct dcmi_media_resource media;
};
/* The interconnect structs of the driver's own dcmi_interface_api.h (not in MC-H) */
#define DCMI_HCCS_MAX_PCS_NUM 16
#define DCMI_HCCS_RES_FIELD_NUM 64
struct dcmi_hccs_statues {
    unsigned int pcs_status;
    unsigned int hdlc_status;
    unsigned char reserve[4];
};
struct dcmi_hccs_lane_info {
    unsigned int hccs_port_pcs_bitmap;
    unsigned int pcs_lane_bitmap[DCMI_HCCS_MAX_PCS_NUM];
    unsigned int reserve[16];
};
struct dcmi_hccs_statistic_info_u64 {
    unsigned long long tx_cnt[DCMI_HCCS_MAX_PCS_NUM];
    unsigned long long rx_cnt[DCMI_HCCS_MAX_PCS_NUM];
    unsigned long long crc_err_cnt[DCMI_HCCS_MAX_PCS_NUM];
    unsigned long long retry_cnt[DCMI_HCCS_MAX_PCS_NUM];
    unsigned long long reserved[DCMI_HCCS_RES_FIELD_NUM];
};
struct dcmi_hccs_bandwidth_info {
    int profiling_time;
    double total_txbw;
    double total_rxbw;
    double tx_bandwidth[DCMI_HCCS_MAX_PCS_NUM];
    double rx_bandwidth[DCMI_HCCS_MAX_PCS_NUM];
};
struct dcmi_pcie_link_error_info {
    unsigned int tx_err_cnt;
    unsigned int rx_err_cnt;
    unsigned int lcrc_err_cnt;
    unsigned int ecrc_err_cnt;
    unsigned int retry_cnt;
    unsigned int rsv[32];
};
struct dcmi_sio_crc_err_statistics_info {
    unsigned short tx_error_count;
    unsigned short rx_error_count;
    unsigned char reserved[8];
};
enum dcmi_main_cmd {
    DCMI_MAIN_CMD_HCCS = 16, DCMI_MAIN_CMD_VDEV_MNG = 52, DCMI_MAIN_CMD_PCIE = 55,
    DCMI_MAIN_CMD_SIO = 56
};
enum {
    DCMI_HCCS_CMD_GET_STATUS = 0, DCMI_HCCS_CMD_GET_LANE_INFO = 1,
    DCMI_HCCS_CMD_GET_STATISTIC_INFO_U64 = 5
};
#define DCMI_PCIE_SUB_CMD_PCIE_ERROR_INFO 1
#define DCMI_SIO_SUB_CMD_CRC_ERR_STATISTICS 0
/* DRV-H's DCMI_VDEV_MNG_SUB_CMD (not in MC-H) */
enum { DCMI_VMNG_SUB_CMD_GET_TOTAL_RESOURCE = 1, DCMI_VMNG_SUB_CMD_GET_VDEV_ACTIVITY = 5 };
enum dcmi_freq_type {
    DCMI_FREQ_DDR = 1, DCMI_FREQ_CTRLCPU = 2, DCMI_FREQ_HBM = 6, DCMI_FREQ_AICORE_CURRENT_ = 7,
    DCMI_FREQ_AICORE_MAX = 9, DCMI_FREQ_VECTORCORE_CURRENT = 12
};
enum dcmi_device_type {
    DCMI_DEVICE_TYPE_DDR, DCMI_DEVICE_TYPE_SRAM, DCMI_DEVICE_TYPE_HBM, DCMI_DEVICE_TYPE_NPU,
    DCMI_DEVICE_TYPE_NONE = 0xff
};

int dcmi_init(void);
int dcmi_get_card_list(int *card_num, int *card_list, int list_len);
int dcmi_get_device_num_in_card(int card_id, int *device_num);
int dcmi_get_device_logic_id(int *device_logic_id, int card_id, int device_id);
int dcmi_get_device_phyid_from_logicid(unsigned int logicid, unsigned int *phyid);
int dcmi_get_dcmi_version(char *dcmi_ver, int buf_size);
/* not in MC-H; DRV-H (the vendor header): int dcmi_get_driver_version(char *, unsigned int) */
int dcmi_get_driver_version(char *driver_ver, unsigned int len);
int dcmi_get_device_health(int card_id, int device_id, unsigned int *health);
int dcmi_get_device_errorcode_v2(int card_id, int device_id, int *error_count,
                                 unsigned int *error_code_list, unsigned int list_len);
int dcmi_get_device_power_info(int card_id, int device_id, int *power);
int dcmi_get_device_temperature(int card_id, int device_id, int *temperature);
int dcmi_get_device_hbm_info(int card_id, int device_id, struct dcmi_hbm_info *hbm_info);
int dcmi_get_device_memory_info_v3(int card_id, int device_id,
                                   struct dcmi_get_memory_info_stru *memory_info);
int dcmi_get_device_utilization_rate(int card_id, int device_id, int input_type,
                                     unsigned int *utilization_rate);
int dcmi_get_device_frequency(int card_id, int device_id, enum dcmi_freq_type input_type,
                              unsigned int *frequency);
/* DRV-H; MC-H has the same prototype */
int dcmi_get_device_multi_utilization_rate(int card_id, int device_id,
                                           struct dcmi_multi_utilization_info *util_info);
/* not in MC-H; DRV-H */
int dcmi_get_device_aicore_info(int card_id, int device_id, struct dcmi_aicore_info *aicore_info);
int dcmi_get_device_ecc_info(int card_id, int device_id, enum dcmi_device_type input_type,
                             struct dcmi_ecc_info *device_ecc_info);
int dcmi_get_device_resource_info(int card_id, int device_id, struct dcmi_proc_mem_info *proc_info,
                                  int *proc_num);
int dcmi_get_device_chip_info_v2(int card_id, int device_id, struct dcmi_chip_info_v2 *chip_info);
int dcmi_get_device_pcie_info_v2(int card_id, int device_id, struct dcmi_pcie_info_all *pcie_info);
int dcmi_get_device_voltage(int card_id, int device_id, unsigned int *voltage);
int dcmi_get_device_info(int card_id, int device_id, enum dcmi_main_cmd main_cmd,
                         unsigned int sub_cmd, void *buf, unsigned int *size);
int dcmi_get_pcie_link_bandwidth_info(int card_id, int device_id,
                                      struct dcmi_pcie_link_bandwidth_info *pcie_link_bandwidth_info);
int dcmi_get_mainboard_id(int card_id, int device_id, unsigned int *mainboard_id);
int dcmi_get_hccs_link_bandwidth_info(int card_id, int device_id,
                                      struct dcmi_hccs_bandwidth_info *hccs_bandwidth_info);

/* DCMI v2 (the driver's header, H:2400-3260): a chip is its logic id (dev_id) */
int dcmiv2_init(void);
int dcmiv2_get_device_list(int *device_list, int *device_cnt, int list_len);
int dcmiv2_get_chip_phy_id_by_dev_id(int dev_id, unsigned int *phyid);
int dcmiv2_get_dcmi_version(char *dcmi_ver, unsigned int len);
int dcmiv2_get_driver_version(char *driver_ver, unsigned int len);
int dcmiv2_get_device_health(int dev_id, unsigned int *health);
int dcmiv2_get_device_error_code_list(int dev_id, int *error_count, unsigned int *error_code_list,
                                      unsigned int list_len);
int dcmiv2_get_device_power_info(int dev_id, int *power_info);
int dcmiv2_get_device_temperature(int dev_id, int *temperature);
int dcmiv2_get_device_voltage(int dev_id, unsigned int *voltage);
int dcmiv2_get_device_hbm_info(int dev_id, struct dcmi_hbm_info *hbm_info);
int dcmiv2_get_device_utilization_rate(int dev_id, int input_type, unsigned int *utilization_rate);
int dcmiv2_get_device_multi_utilization_rate(int dev_id, struct dcmi_multi_utilization_info *util_info);
int dcmiv2_get_device_aicore_info(int dev_id, struct dcmi_aicore_info *aicore_info);
int dcmiv2_get_device_ecc_info(int dev_id, enum dcmi_device_type input_type,
                               struct dcmi_ecc_info *device_ecc_info);
int dcmiv2_get_device_proc_mem_info(int dev_id, struct dcmi_proc_mem_info *proc_info, int *proc_num);
int dcmiv2_get_device_chip_info(int dev_id, struct dcmi_chip_info_v2 *chip_info);
int dcmiv2_get_device_pcie_info(int dev_id, struct dcmi_pcie_info_all *pcie_info);
int dcmiv2_get_device_info(int dev_id, enum dcmi_main_cmd main_cmd, unsigned int sub_cmd, void *buf,
                           unsigned int *size);
int dcmiv2_get_pcie_link_bandwidth_info(int dev_id,
                                        struct dcmi_pcie_link_bandwidth_info *pcie_link_bandwidth_info);
int dcmiv2_get_mainboard_id(int dev_id, unsigned int *mainboard_id);

#endif