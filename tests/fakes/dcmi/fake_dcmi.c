/* A fake libdcmi.so for npumon's tests: answers from a state file (NPUMON_FAKE_DCMI_STATE) read
 * at dcmi_init, in DCMI's units (power 0.1 W, HBM and DDR MB, process memory bytes).
 *
 * State file lines:
 *   board 910|910b|a3|310p|310b|950     the board's chip type: what the driver refuses (below)
 *   version <dcmi version> <driver version>
 *   init <code>                          dcmi_init returns this
 *   ecc_size 28|36                       bytes dcmi_get_device_ecc_info writes
 *   hang <function>                      the function never returns
 *   say <function> <word>                the function prints the word on stdout (as some
 *                                        driver builds print debug lines there) and goes on
 *   fail <function> <code>               the function returns the code
 *   chip <card> <device> <logic> <phy> key=value ...   (a missing key: -8255 from its function)
 *   proc <card> <device> <pid> <bytes>
 *   error <card> <device> <hex code>
 *   vnpu <card> <device> <vdev id> <aicore %> <total KB> <free KB>
 * Key proc_count=N makes dcmi_get_device_resource_info report N processes whatever it lists.
 * A list value is a/b/c...: HCCS lists are by port index from 0 (hccs_lanes: one word per bit
 * of hccs_ports, as the driver packs them).
 * Build with -DOMIT_<function> to leave a symbol out.
 *
 * What the driver refuses per board, whatever the state holds (refused(); the rows of
 * tests/fixtures/dcmi/driver_answers.csv, which a test checks against this library, cite the
 * driver source or manual for each): every v1 call on a 950 (dcmi_init -8255); utilization
 * types other than 2, 3, 4, 6, 10, 12, 13 on 910B and A3; the multi-utilization call off 910B
 * and A3; memory_info_v3 on 910B, A3, 950; DDR ECC on 910B, A3, 950 and HBM ECC on 310P. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_dcmi.h"

#define NOT_SUPPORT -8255
#define INNER_ERR -8005
#define INVALID_PARAMETER -8001
#define NOT_READY -8012
#define MAX_CHIPS 64
#define MAX_KEYS 64
#define MAX_RULES 32

struct kv { char key[32]; char value[512]; };
struct chip {
    int card, device, logic, phy, nkeys, nprocs, nerrors;
    struct kv keys[MAX_KEYS];
    int pids[64];
    unsigned long proc_bytes[64];
    unsigned int errors[128];
    int nvnpus;
    unsigned int vnpu_ids[DCMI_SOC_SPLIT_MAX], vnpu_util[DCMI_SOC_SPLIT_MAX];
    unsigned long long vnpu_total[DCMI_SOC_SPLIT_MAX], vnpu_free[DCMI_SOC_SPLIT_MAX];
};
struct rule { char function[64]; int code; int hang; char say[64]; };

static struct chip chips[MAX_CHIPS];
static int nchips;
static struct rule rules[MAX_RULES];
static int nrules;
static int initialised;
static int v2_call;  /* inside a dcmiv2_* call: the 950's own interface */
static int ecc_size = 36;
static char board[16] = "";
static char dcmi_version[64] = "fake";
static char driver_version[64] = "fake";

static struct chip *find(int card, int device) {
    for (int i = 0; i < nchips; i++)
        if (chips[i].card == card && chips[i].device == device) return &chips[i];
    return NULL;
}

static const char *lookup(const struct chip *c, const char *key) {
    for (int i = 0; i < c->nkeys; i++)
        if (strcmp(c->keys[i].key, key) == 0) return c->keys[i].value;
    return NULL;
}

static int number(const struct chip *c, const char *key, long long *out) {
    const char *v = lookup(c, key);
    if (v == NULL) return 0;
    *out = strtoll(v, NULL, 10);
    return 1;
}

/* Every call starts here: a hang or an injected code for the function, then the chip. */
static int injected(const char *function) {
    for (int i = 0; i < nrules; i++) {
        if (strcmp(rules[i].function, function) != 0) continue;
        if (rules[i].hang) for (;;) pause();
        if (rules[i].say[0]) {
            dprintf(STDOUT_FILENO, "%s\n", rules[i].say);
            continue;
        }
        return rules[i].code;
    }
    return 0;
}

static int refused(const char *function, int arg);

static int guard(const char *function, int card, int device, struct chip **out) {
    int rc = injected(function);
    if (rc) return rc;
    if (!initialised && !v2_call) return INNER_ERR;
    if (refused(function, -1)) return NOT_SUPPORT;
    if (out == NULL) return 0;
    *out = find(card, device);
    return *out ? 0 : INVALID_PARAMETER;
}

static void load_chip(char *line) {
    struct chip *c = &chips[nchips];
    int used = 0;
    memset(c, 0, sizeof(*c));
    if (sscanf(line, "chip %d %d %d %d %n", &c->card, &c->device, &c->logic, &c->phy, &used) < 4)
        return;
    for (char *tok = strtok(line + used, " \n"); tok && c->nkeys < MAX_KEYS; tok = strtok(NULL, " \n")) {
        char *eq = strchr(tok, '=');
        if (eq == NULL) continue;
        *eq = '\0';
        snprintf(c->keys[c->nkeys].key, sizeof(c->keys[0].key), "%s", tok);
        snprintf(c->keys[c->nkeys].value, sizeof(c->keys[0].value), "%s", eq + 1);
        c->nkeys++;
    }
    nchips++;
}

static void load_line(char *line) {
    char function[64], word[64];
    int card, device, pid, code;
    unsigned long bytes;
    unsigned int error, vid, util;
    unsigned long long total, free_kb;
    struct chip *c;
    if (strncmp(line, "chip ", 5) == 0 && nchips < MAX_CHIPS) {
        load_chip(line);
    } else if (sscanf(line, "proc %d %d %d %lu", &card, &device, &pid, &bytes) == 4) {
        if ((c = find(card, device)) && c->nprocs < 64) {
            c->pids[c->nprocs] = pid;
            c->proc_bytes[c->nprocs++] = bytes;
        }
    } else if (sscanf(line, "vnpu %d %d %u %u %llu %llu", &card, &device, &vid, &util, &total,
                      &free_kb) == 6) {
        if ((c = find(card, device)) && c->nvnpus < DCMI_SOC_SPLIT_MAX) {
            c->vnpu_ids[c->nvnpus] = vid;
            c->vnpu_util[c->nvnpus] = util;
            c->vnpu_total[c->nvnpus] = total;
            c->vnpu_free[c->nvnpus++] = free_kb;
        }
    } else if (sscanf(line, "error %d %d %x", &card, &device, &error) == 3) {
        if ((c = find(card, device)) && c->nerrors < 128) c->errors[c->nerrors++] = error;
    } else if (sscanf(line, "hang %63s", function) == 1 && nrules < MAX_RULES) {
        snprintf(rules[nrules].function, sizeof(rules[0].function), "%s", function);
        rules[nrules++].hang = 1;
    } else if (sscanf(line, "say %63s %63s", function, word) == 2 && nrules < MAX_RULES) {
        snprintf(rules[nrules].function, sizeof(rules[0].function), "%s", function);
        snprintf(rules[nrules++].say, sizeof(rules[0].say), "%s", word);
    } else if (sscanf(line, "fail %63s %d", function, &code) == 2 && nrules < MAX_RULES) {
        snprintf(rules[nrules].function, sizeof(rules[0].function), "%s", function);
        rules[nrules++].code = code;
    } else if (sscanf(line, "init %d", &code) == 1) {
        snprintf(rules[nrules].function, sizeof(rules[0].function), "dcmi_init");
        rules[nrules++].code = code;
    } else if (sscanf(line, "board %15s", board) == 1) {
    } else if (sscanf(line, "ecc_size %d", &ecc_size) == 1) {
    } else {
        sscanf(line, "version %63s %63s", dcmi_version, driver_version);
    }
}

static int board_in(const char *const *models) {
    for (; *models; models++)
        if (strcmp(board, *models) == 0) return 1;
    return 0;
}

static const char *const NEW_910[] = {"910b", "a3", NULL};
static const char *const NO_DDR[] = {"910b", "a3", "950", NULL};
static const char *const ECC_CHECKED[] = {"910", "910b", "310p", "a3", "950", NULL};

/* The driver's own refusals by board (see the head of this file): 1 where it answers -8255;
 * ``arg`` is the type of a typed call, -1 for the check every call starts with. */
static int refused(const char *function, int arg) {
    /* v1 on a 950 and v2 anywhere else: -8255 (every v2 getter checks for a 950) */
    if ((strcmp(board, "950") == 0) != v2_call) return 1;
    if (strcmp(function, "dcmi_get_device_multi_utilization_rate") == 0)
        return !board_in(NEW_910) && !v2_call;  /* DI/dcmiv2_running_info_intf.c:900-931 */
    if (strcmp(function, "dcmi_get_device_memory_info_v3") == 0) return board_in(NO_DDR);
    if (arg < 0) return 0;  /* a typed call: checked again with its type */
    if (strcmp(function, "dcmi_get_device_utilization_rate") == 0) {
        if (arg == 1) return board_in(NO_DDR);  /* answered from memory_info_v3 */
        return board_in(NEW_910) && !(arg == 2 || arg == 3 || arg == 4 || arg == 6 || arg == 10 ||
                                      arg == 12 || arg == 13);
    }
    if (strcmp(function, "dcmi_get_device_ecc_info") == 0)
        return (arg == DCMI_DEVICE_TYPE_DDR && board_in(NO_DDR)) ||
               (arg == DCMI_DEVICE_TYPE_HBM && strcmp(board, "310p") == 0) ||
               (arg != DCMI_DEVICE_TYPE_DDR && arg != DCMI_DEVICE_TYPE_HBM && board_in(ECC_CHECKED));
    return 0;
}

/* NPU_*_DEVICE_ID of the driver's npucli/inc/npu_common.h, by board; 0: no PCIe (SoC) */
static unsigned int pci_device_id(void) {
    static const char *const models[] = {"910", "910b", "a3", "310p", "950", NULL};
    static const unsigned int ids[] = {0xd801, 0xd802, 0xd803, 0xd500, 0xd806};
    for (int i = 0; models[i]; i++)
        if (strcmp(board, models[i]) == 0) return ids[i];
    return 0;
}

static int load_state(void) {
    const char *path = getenv("NPUMON_FAKE_DCMI_STATE");
    static char line[16384];
    FILE *f = path ? fopen(path, "r") : NULL;
    if (f == NULL) return INNER_ERR;
    nchips = nrules = 0;
    board[0] = '\0';
    while (fgets(line, sizeof(line), f)) load_line(line);
    fclose(f);
    return 0;
}

#ifndef OMIT_dcmi_init
int dcmi_init(void) {
    int rc = load_state();
    if (rc) return rc;
    rc = injected("dcmi_init");
    if (rc == 0 && refused("dcmi_init", 0)) rc = NOT_SUPPORT;  /* DINIT/dcmi_init_basic.c:1447 */
    initialised = rc == 0;
    return rc;
}
#endif

#ifndef OMIT_dcmi_get_card_list
int dcmi_get_card_list(int *card_num, int *card_list, int list_len) {
    int rc = guard("dcmi_get_card_list", 0, 0, NULL), n = 0;
    if (rc) return rc;
    for (int i = 0; i < nchips; i++) {
        int seen = 0;
        for (int j = 0; j < n; j++) seen |= card_list[j] == chips[i].card;
        if (seen) continue;
        if (n >= list_len) return INVALID_PARAMETER;
        card_list[n++] = chips[i].card;
    }
    *card_num = n;
    return 0;
}
#endif

#ifndef OMIT_dcmi_get_device_num_in_card
int dcmi_get_device_num_in_card(int card_id, int *device_num) {
    int rc = guard("dcmi_get_device_num_in_card", 0, 0, NULL), n = 0;
    if (rc) return rc;
    for (int i = 0; i < nchips; i++) n += chips[i].card == card_id;
    if (n == 0) return INVALID_PARAMETER;
    *device_num = n;
    return 0;
}
#endif

#ifndef OMIT_dcmi_get_device_logic_id
int dcmi_get_device_logic_id(int *device_logic_id, int card_id, int device_id) {
    struct chip *c;
    int rc = guard("dcmi_get_device_logic_id", card_id, device_id, &c);
    if (!initialised && rc == INNER_ERR) return NOT_READY;
    if (rc) return rc;
    *device_logic_id = c->logic;
    return 0;
}
#endif

#ifndef OMIT_dcmi_get_device_phyid_from_logicid
int dcmi_get_device_phyid_from_logicid(unsigned int logicid, unsigned int *phyid) {
    int rc = guard("dcmi_get_device_phyid_from_logicid", 0, 0, NULL);
    if (rc) return rc;
    for (int i = 0; i < nchips; i++)
        if ((unsigned int)chips[i].logic == logicid) { *phyid = (unsigned int)chips[i].phy; return 0; }
    return INVALID_PARAMETER;
}
#endif

#ifndef OMIT_dcmi_get_dcmi_version
int dcmi_get_dcmi_version(char *dcmi_ver, int buf_size) {
    int rc = guard("dcmi_get_dcmi_version", 0, 0, NULL);
    if (rc) return rc;
    snprintf(dcmi_ver, (size_t)buf_size, "%s", dcmi_version);
    return 0;
}
#endif

#ifndef OMIT_dcmi_get_driver_version
int dcmi_get_driver_version(char *driver_ver, unsigned int len) {
    int rc = guard("dcmi_get_driver_version", 0, 0, NULL);
    if (rc) return rc;
    snprintf(driver_ver, len, "%s", driver_version);
    return 0;
}
#endif

/* A function answering one integer key of the chip (NOT_SUPPORT where the key is absent). */
#define INT_READER(NAME, TYPE, KEY)                                      \
    int NAME(int card_id, int device_id, TYPE *out) {                   \
        struct chip *c;                                                  \
        long long v;                                                     \
        int rc = guard(#NAME, card_id, device_id, &c);                   \
        if (rc) return rc;                                               \
        if (!number(c, KEY, &v)) return NOT_SUPPORT;                     \
        *out = (TYPE)v;                                                  \
        return 0;                                                        \
    }

#ifndef OMIT_dcmi_get_device_health
INT_READER(dcmi_get_device_health, unsigned int, "health")
#endif
#ifndef OMIT_dcmi_get_device_power_info
INT_READER(dcmi_get_device_power_info, int, "power")
#endif
#ifndef OMIT_dcmi_get_device_temperature
INT_READER(dcmi_get_device_temperature, int, "temp")
#endif

#ifndef OMIT_dcmi_get_device_voltage
INT_READER(dcmi_get_device_voltage, unsigned int, "volt")
#endif

#ifndef OMIT_dcmi_get_device_errorcode_v2
int dcmi_get_device_errorcode_v2(int card_id, int device_id, int *error_count,
                                 unsigned int *error_code_list, unsigned int list_len) {
    struct chip *c;
    int rc = guard("dcmi_get_device_errorcode_v2", card_id, device_id, &c);
    if (rc) return rc;
    if ((unsigned int)c->nerrors > list_len) return INVALID_PARAMETER;
    memcpy(error_code_list, c->errors, sizeof(unsigned int) * (size_t)c->nerrors);
    *error_count = c->nerrors;
    return 0;
}
#endif

#ifndef OMIT_dcmi_get_device_hbm_info
int dcmi_get_device_hbm_info(int card_id, int device_id, struct dcmi_hbm_info *hbm_info) {
    struct chip *c;
    long long total, used, temp = 0, bw = 0, freq = 0;
    int rc = guard("dcmi_get_device_hbm_info", card_id, device_id, &c);
    if (rc) return rc;
    if (!number(c, "hbm_total", &total) || !number(c, "hbm_used", &used)) return NOT_SUPPORT;
    number(c, "hbm_temp", &temp);
    number(c, "hbm_bw", &bw);
    number(c, "hbm_freq", &freq);
    hbm_info->memory_size = (unsigned long long)total;
    hbm_info->memory_usage = (unsigned long long)used;
    hbm_info->temp = (int)temp;
    hbm_info->bandwith_util_rate = (unsigned int)bw;
    hbm_info->freq = (unsigned int)freq;
    return 0;
}
#endif

#ifndef OMIT_dcmi_get_device_memory_info_v3
int dcmi_get_device_memory_info_v3(int card_id, int device_id,
                                   struct dcmi_get_memory_info_stru *memory_info) {
    struct chip *c;
    long long total, available, hp_total = 0, hp_free = 0, freq = 0;
    int rc = guard("dcmi_get_device_memory_info_v3", card_id, device_id, &c);
    if (rc) return rc;
    if (!number(c, "mem_total", &total) || !number(c, "mem_available", &available))
        return NOT_SUPPORT;
    number(c, "hugepages_total", &hp_total);
    number(c, "hugepages_free", &hp_free);
    number(c, "mem_freq", &freq);
    memset(memory_info, 0, sizeof(*memory_info));
    memory_info->memory_size = (unsigned long long)total;
    memory_info->memory_available = (unsigned long long)available;
    memory_info->hugepagesize = 2048;
    memory_info->hugepages_total = (unsigned long)hp_total;
    memory_info->hugepages_free = (unsigned long)hp_free;
    memory_info->freq = (unsigned int)freq;
    return 0;
}
#endif

/* The a/b/c list of a key into out (up to max); -1 where the key is absent. */
static int numbers(const struct chip *c, const char *key, double *out, int max) {
    const char *v = lookup(c, key);
    int n = 0;
    if (v == NULL) return -1;
    while (*v && n < max) {
        char *end;
        out[n++] = strtod(v, &end);
        if (*end != '/') break;
        v = end + 1;
    }
    return n;
}

/* A reading selected by a type argument: the key <prefix><type>. */
static int typed_number(const char *function, int card_id, int device_id, const char *prefix,
                        int type, unsigned int *out) {
    struct chip *c;
    char key[16];
    long long v;
    int rc = guard(function, card_id, device_id, &c);
    if (rc) return rc;
    if (refused(function, type)) return NOT_SUPPORT;
    snprintf(key, sizeof(key), "%s%d", prefix, type);
    if (!number(c, key, &v)) return NOT_SUPPORT;
    *out = (unsigned int)v;
    return 0;
}

#ifndef OMIT_dcmi_get_device_utilization_rate
int dcmi_get_device_utilization_rate(int card_id, int device_id, int input_type,
                                     unsigned int *utilization_rate) {
    return typed_number("dcmi_get_device_utilization_rate", card_id, device_id, "util",
                        input_type, utilization_rate);
}
#endif

#ifndef OMIT_dcmi_get_device_frequency
int dcmi_get_device_frequency(int card_id, int device_id, enum dcmi_freq_type input_type,
                              unsigned int *frequency) {
    return typed_number("dcmi_get_device_frequency", card_id, device_id, "freq",
                        (int)input_type, frequency);
}
#endif

#ifndef OMIT_dcmi_get_device_ecc_info
int dcmi_get_device_ecc_info(int card_id, int device_id, enum dcmi_device_type input_type,
                             struct dcmi_ecc_info *device_ecc_info) {
    static const char *names[] = {"enable", "sbe", "dbe", "total_sbe", "total_dbe",
                                  "sb_pages", "db_pages", "sb_next_pages", "db_next_pages"};
    unsigned int words[9] = {0};
    struct chip *c;
    char key[32];
    long long v;
    int rc = guard("dcmi_get_device_ecc_info", card_id, device_id, &c);
    if (rc) return rc;
    if (refused("dcmi_get_device_ecc_info", (int)input_type)) return NOT_SUPPORT;
    snprintf(key, sizeof(key), "ecc%d_enable", (int)input_type);
    if (!number(c, key, &v)) return NOT_SUPPORT;
    for (int i = 0; i < 9; i++) {
        snprintf(key, sizeof(key), "ecc%d_%s", (int)input_type, names[i]);
        if (number(c, key, &v)) words[i] = (unsigned int)v;
    }
    memcpy(device_ecc_info, words, (size_t)ecc_size);  /* 36: past a 7-field struct */
    return 0;
}
#endif

#ifndef OMIT_dcmi_get_device_resource_info
int dcmi_get_device_resource_info(int card_id, int device_id, struct dcmi_proc_mem_info *proc_info,
                                  int *proc_num) {
    struct chip *c;
    int rc = guard("dcmi_get_device_resource_info", card_id, device_id, &c);
    if (rc) return rc;
    for (int i = 0; i < c->nprocs; i++) {
        proc_info[i].proc_id = c->pids[i];
        proc_info[i].proc_mem_usage = c->proc_bytes[i];
    }
    long long count;
    *proc_num = number(c, "proc_count", &count) ? (int)count : c->nprocs;  /* a garbled count */
    return 0;
}
#endif

#ifndef OMIT_dcmi_get_device_chip_info_v2
int dcmi_get_device_chip_info_v2(int card_id, int device_id, struct dcmi_chip_info_v2 *chip_info) {
    struct chip *c;
    long long cores = 0;
    const char *type, *name, *ver;
    int rc = guard("dcmi_get_device_chip_info_v2", card_id, device_id, &c);
    if (rc) return rc;
    type = lookup(c, "chip_type");
    name = lookup(c, "chip_name");
    ver = lookup(c, "chip_ver");
    if (type == NULL || name == NULL) return NOT_SUPPORT;
    number(c, "aicore_cnt", &cores);
    memset(chip_info, 0, sizeof(*chip_info));
    snprintf((char *)chip_info->chip_type, MAX_CHIP_NAME_LEN, "%s", type);
    snprintf((char *)chip_info->chip_name, MAX_CHIP_NAME_LEN, "%s", name);
    snprintf((char *)chip_info->chip_ver, MAX_CHIP_NAME_LEN, "%s", ver ? ver : "");
    chip_info->aicore_cnt = (unsigned int)cores;
    return 0;
}
#endif

#ifndef OMIT_dcmi_get_device_pcie_info_v2
int dcmi_get_device_pcie_info_v2(int card_id, int device_id, struct dcmi_pcie_info_all *pcie_info) {
    struct chip *c;
    unsigned int domain, bus, dev, func;
    const char *bdf;
    int rc = guard("dcmi_get_device_pcie_info_v2", card_id, device_id, &c);
    if (rc) return rc;
    bdf = lookup(c, "bus");
    if (bdf == NULL || sscanf(bdf, "%x:%x:%x.%x", &domain, &bus, &dev, &func) != 4)
        return NOT_SUPPORT;
    memset(pcie_info, 0, sizeof(*pcie_info));
    pcie_info->venderid = 0x19e5;
    pcie_info->deviceid = pci_device_id();
    pcie_info->domain = (int)domain;
    pcie_info->bdf_busid = bus;
    pcie_info->bdf_deviceid = dev;
    pcie_info->bdf_funcid = func;
    return 0;
}
#endif

#ifndef OMIT_dcmi_get_pcie_link_bandwidth_info
/* Keys pcie_<field>=min/max/avg (MB/ms); no pcie_tx_p_bw key: NOT_SUPPORT. The window the
 * caller set must be positive, as the driver checks it. */
int dcmi_get_pcie_link_bandwidth_info(int card_id, int device_id,
                                      struct dcmi_pcie_link_bandwidth_info *pcie_link_bandwidth_info) {
    static const char *names[] = {"tx_p_bw", "tx_np_bw", "tx_cpl_bw", "tx_np_lantency",
                                  "rx_p_bw", "rx_np_bw", "rx_cpl_bw"};
    struct dcmi_pcie_link_bandwidth_info *out = pcie_link_bandwidth_info;
    unsigned int *arrays[] = {out->tx_p_bw, out->tx_np_bw, out->tx_cpl_bw, out->tx_np_lantency,
                              out->rx_p_bw, out->rx_np_bw, out->rx_cpl_bw};
    struct chip *c;
    char key[32];
    int rc = guard("dcmi_get_pcie_link_bandwidth_info", card_id, device_id, &c);
    if (rc) return rc;
    if (out->profiling_time <= 0) return INVALID_PARAMETER;
    if (lookup(c, "pcie_tx_p_bw") == NULL) return NOT_SUPPORT;
    for (int i = 0; i < 7; i++) {
        const char *v;
        snprintf(key, sizeof(key), "pcie_%s", names[i]);
        v = lookup(c, key);
        if (v == NULL || sscanf(v, "%u/%u/%u", &arrays[i][0], &arrays[i][1], &arrays[i][2]) != 3)
            arrays[i][0] = arrays[i][1] = arrays[i][2] = 0;
    }
    return 0;
}
#endif

#ifndef OMIT_dcmi_get_mainboard_id
INT_READER(dcmi_get_mainboard_id, unsigned int, "mainboard")
#endif

#ifndef OMIT_dcmi_get_hccs_link_bandwidth_info
/* Keys hccs_bw_tx / hccs_bw_rx (GB/s by port); the window must be 1-1000 ms, as the driver's. */
int dcmi_get_hccs_link_bandwidth_info(int card_id, int device_id,
                                      struct dcmi_hccs_bandwidth_info *hccs_bandwidth_info) {
    struct dcmi_hccs_bandwidth_info *out = hccs_bandwidth_info;
    double tx[DCMI_HCCS_MAX_PCS_NUM] = {0}, rx[DCMI_HCCS_MAX_PCS_NUM] = {0};
    struct chip *c;
    int rc = guard("dcmi_get_hccs_link_bandwidth_info", card_id, device_id, &c);
    if (rc) return rc;
    if (out->profiling_time < 1 || out->profiling_time > 1000) return INVALID_PARAMETER;
    if (numbers(c, "hccs_bw_tx", tx, DCMI_HCCS_MAX_PCS_NUM) < 0 ||
        numbers(c, "hccs_bw_rx", rx, DCMI_HCCS_MAX_PCS_NUM) < 0)
        return NOT_SUPPORT;
    out->total_txbw = out->total_rxbw = 0;
    for (int i = 0; i < DCMI_HCCS_MAX_PCS_NUM; i++) {
        out->tx_bandwidth[i] = tx[i];
        out->rx_bandwidth[i] = rx[i];
        out->total_txbw += tx[i];
        out->total_rxbw += rx[i];
    }
    return 0;
}
#endif

/* DCMI_MAIN_CMD_HCCS: status, lane info and the 64-bit statistics, from the hccs_* keys. */
static int hccs_info(const struct chip *c, unsigned int sub_cmd, void *buf, unsigned int size) {
    static const char *stats[] = {"hccs_tx", "hccs_rx", "hccs_crc", "hccs_retry"};
    double v[DCMI_HCCS_MAX_PCS_NUM];
    long long a, b;
    if (sub_cmd == DCMI_HCCS_CMD_GET_STATUS) {
        struct dcmi_hccs_statues *out = buf;
        if (size < sizeof(*out)) return INVALID_PARAMETER;
        if (!number(c, "hccs_pcs_status", &a) || !number(c, "hccs_hdlc_status", &b)) return NOT_SUPPORT;
        memset(out, 0, sizeof(*out));
        out->pcs_status = (unsigned int)a;
        out->hdlc_status = (unsigned int)b;
        return 0;
    }
    if (sub_cmd == DCMI_HCCS_CMD_GET_LANE_INFO) {
        struct dcmi_hccs_lane_info *out = buf;
        int n;
        if (size < sizeof(*out)) return INVALID_PARAMETER;
        memset(v, 0, sizeof(v));
        if (!number(c, "hccs_ports", &a) || (n = numbers(c, "hccs_lanes", v, DCMI_HCCS_MAX_PCS_NUM)) < 0)
            return NOT_SUPPORT;
        memset(out, 0, sizeof(*out));
        out->hccs_port_pcs_bitmap = (unsigned int)a;
        for (int i = 0; i < n; i++) out->pcs_lane_bitmap[i] = (unsigned int)v[i];
        return 0;
    }
    if (sub_cmd == DCMI_HCCS_CMD_GET_STATISTIC_INFO_U64) {
        struct dcmi_hccs_statistic_info_u64 *out = buf;
        unsigned long long *arrays[] = {out->tx_cnt, out->rx_cnt, out->crc_err_cnt, out->retry_cnt};
        if (size < sizeof(*out)) return INVALID_PARAMETER;
        memset(out, 0, sizeof(*out));
        for (int k = 0; k < 4; k++) {
            int n;
            memset(v, 0, sizeof(v));
            if ((n = numbers(c, stats[k], v, DCMI_HCCS_MAX_PCS_NUM)) < 0) return NOT_SUPPORT;
            for (int i = 0; i < n; i++) arrays[k][i] = (unsigned long long)v[i];
        }
        return 0;
    }
    return NOT_SUPPORT;
}

/* DCMI_MAIN_CMD_PCIE's error counters (pcie_err=tx/rx/lcrc/ecrc/retry) and DCMI_MAIN_CMD_SIO's
 * CRC errors (sio_err=tx/rx). */
static int error_counts(const struct chip *c, enum dcmi_main_cmd main_cmd, unsigned int sub_cmd,
                        void *buf, unsigned int size) {
    double v[5] = {0};
    if (main_cmd == DCMI_MAIN_CMD_PCIE && sub_cmd == DCMI_PCIE_SUB_CMD_PCIE_ERROR_INFO) {
        struct dcmi_pcie_link_error_info *out = buf;
        if (size < sizeof(*out)) return INVALID_PARAMETER;
        if (numbers(c, "pcie_err", v, 5) < 0) return NOT_SUPPORT;
        memset(out, 0, sizeof(*out));
        out->tx_err_cnt = (unsigned int)v[0];
        out->rx_err_cnt = (unsigned int)v[1];
        out->lcrc_err_cnt = (unsigned int)v[2];
        out->ecrc_err_cnt = (unsigned int)v[3];
        out->retry_cnt = (unsigned int)v[4];
        return 0;
    }
    if (main_cmd == DCMI_MAIN_CMD_SIO && sub_cmd == DCMI_SIO_SUB_CMD_CRC_ERR_STATISTICS) {
        struct dcmi_sio_crc_err_statistics_info *out = buf;
        if (size < sizeof(*out)) return INVALID_PARAMETER;
        if (numbers(c, "sio_err", v, 2) < 0) return NOT_SUPPORT;
        memset(out, 0, sizeof(*out));
        out->tx_error_count = (unsigned short)v[0];
        out->rx_error_count = (unsigned short)v[1];
        return 0;
    }
    return NOT_SUPPORT;
}

#ifndef OMIT_dcmi_get_device_info
/* DCMI_MAIN_CMD_VDEV_MNG: the vNPU list (total resource) and one vNPU's activity (a chip without
 * vnpu lines answers NOT_SUPPORT); HCCS, PCIe errors and SIO from the chip's keys. */
int dcmi_get_device_info(int card_id, int device_id, enum dcmi_main_cmd main_cmd,
                         unsigned int sub_cmd, void *buf, unsigned int *size) {
    struct chip *c;
    int rc = guard("dcmi_get_device_info", card_id, device_id, &c);
    if (rc) return rc;
    if (main_cmd == DCMI_MAIN_CMD_HCCS) return hccs_info(c, sub_cmd, buf, *size);
    if (main_cmd == DCMI_MAIN_CMD_PCIE || main_cmd == DCMI_MAIN_CMD_SIO)
        return error_counts(c, main_cmd, sub_cmd, buf, *size);
    if (main_cmd != DCMI_MAIN_CMD_VDEV_MNG || c->nvnpus == 0) return NOT_SUPPORT;
    if (sub_cmd == DCMI_VMNG_SUB_CMD_GET_TOTAL_RESOURCE) {
        struct dcmi_soc_total_resource *total = buf;
        if (*size < sizeof(*total)) return INVALID_PARAMETER;
        memset(total, 0, sizeof(*total));
        total->vdev_num = (unsigned int)c->nvnpus;
        memcpy(total->vdev_id, c->vnpu_ids, sizeof(unsigned int) * (size_t)c->nvnpus);
        return 0;
    }
    if (sub_cmd == DCMI_VMNG_SUB_CMD_GET_VDEV_ACTIVITY) {
        struct dcmi_vdev_query_stru *query = buf;
        if (*size < sizeof(*query)) return INVALID_PARAMETER;
        for (int i = 0; i < c->nvnpus; i++) {
            if (c->vnpu_ids[i] != query->vdev_id) continue;
            query->query_info.computing.vdev_aicore_utilization = c->vnpu_util[i];
            query->query_info.computing.vdev_memory_total = c->vnpu_total[i];
            query->query_info.computing.vdev_memory_free = c->vnpu_free[i];
            return 0;
        }
        return INVALID_PARAMETER;
    }
    return NOT_SUPPORT;
}
#endif

#ifndef OMIT_dcmi_get_device_multi_utilization_rate
/* The firmware's AI Cube and AI Vector averages, AI Core and NPU % (keys util14, util12, util2,
 * util13: the simulated chip's figures); npu_util is raised to aicore_util as the driver does
 * (DN/dcmi_inner_info_get_ext.c:1545); a figure the firmware lacks reads 0 with rc 0. */
int dcmi_get_device_multi_utilization_rate(int card_id, int device_id,
                                           struct dcmi_multi_utilization_info *util_info) {
    struct chip *c;
    long long aic = 0, aiv = 0, aicore = 0, npu = 0;
    int rc = guard("dcmi_get_device_multi_utilization_rate", card_id, device_id, &c);
    if (rc) return rc;
    number(c, "util14", &aic);
    number(c, "util12", &aiv);
    number(c, "util2", &aicore);
    number(c, "util13", &npu);
    memset(util_info, 0, sizeof(*util_info));
    util_info->aic_util = (unsigned int)aic;
    util_info->aiv_util = (unsigned int)aiv;
    util_info->aicore_util = (unsigned int)aicore;
    util_info->npu_util = (unsigned int)(aicore > npu ? aicore : npu);
    return 0;
}
#endif

#ifndef OMIT_dcmi_get_device_aicore_info
/* dsmi_get_aicore_info's rated and current AI Core clocks (keys aicore_freq, aicore_cur_freq) */
int dcmi_get_device_aicore_info(int card_id, int device_id, struct dcmi_aicore_info *aicore_info) {
    struct chip *c;
    long long rated, current;
    int rc = guard("dcmi_get_device_aicore_info", card_id, device_id, &c);
    if (rc) return rc;
    if (!number(c, "aicore_freq", &rated) || !number(c, "aicore_cur_freq", &current))
        return NOT_SUPPORT;
    aicore_info->freq = (unsigned int)rated;
    aicore_info->cur_freq = (unsigned int)current;
    return 0;
}
#endif

/* DCMI v2 (the 950's interface, H:2400-3260): chips by logic id (dev_id), each call the v1
 * reading of that chip with the 950 check turned round; an injected fail/hang rule names the
 * v1 function. dcmiv2_init answers -8255 off a 950 (DINIT/dcmi_init_basic.c:1293-1330). */
#ifndef OMIT_dcmiv2
static int v2_initialised;

int dcmiv2_init(void) {
    int rc = load_state();
    if (rc) return rc;
    rc = injected("dcmiv2_init");
    if (rc == 0 && strcmp(board, "950") != 0) rc = NOT_SUPPORT;
    v2_initialised = rc == 0;
    return rc;
}

int dcmiv2_get_device_list(int *device_list, int *device_cnt, int list_len) {
    int n = 0;
    if (!v2_initialised) return INNER_ERR;
    for (int i = 0; i < nchips; i++) {
        if (n >= list_len) return INVALID_PARAMETER;
        device_list[n++] = chips[i].logic;
    }
    *device_cnt = n;
    return 0;
}

int dcmiv2_get_chip_phy_id_by_dev_id(int dev_id, unsigned int *phyid) {
    if (!v2_initialised) return INNER_ERR;
    for (int i = 0; i < nchips; i++)
        if (chips[i].logic == dev_id) { *phyid = (unsigned int)chips[i].phy; return 0; }
    return INVALID_PARAMETER;
}

/* The chip of a dev_id as (card, device) for the v1 reading, inside a v2 call. */
static int v2_enter(int dev_id, int *card, int *device) {
    if (!v2_initialised) return INNER_ERR;
    for (int i = 0; i < nchips; i++) {
        if (chips[i].logic != dev_id) continue;
        *card = chips[i].card;
        *device = chips[i].device;
        v2_call = 1;
        return 0;
    }
    return INVALID_PARAMETER;
}

#define V2(NAME, V1, PARAMS, ...)                              \
    int NAME PARAMS {                                          \
        int card, device, rc = v2_enter(dev_id, &card, &device); \
        if (rc) return rc;                                     \
        rc = V1(card, device, __VA_ARGS__);                    \
        v2_call = 0;                                           \
        return rc;                                             \
    }

V2(dcmiv2_get_device_health, dcmi_get_device_health, (int dev_id, unsigned int *health), health)
V2(dcmiv2_get_device_error_code_list, dcmi_get_device_errorcode_v2,
   (int dev_id, int *error_count, unsigned int *error_code_list, unsigned int list_len),
   error_count, error_code_list, list_len)
V2(dcmiv2_get_device_power_info, dcmi_get_device_power_info, (int dev_id, int *power_info),
   power_info)
V2(dcmiv2_get_device_temperature, dcmi_get_device_temperature, (int dev_id, int *temperature),
   temperature)
V2(dcmiv2_get_device_voltage, dcmi_get_device_voltage, (int dev_id, unsigned int *voltage),
   voltage)
V2(dcmiv2_get_device_hbm_info, dcmi_get_device_hbm_info,
   (int dev_id, struct dcmi_hbm_info *hbm_info), hbm_info)
V2(dcmiv2_get_device_utilization_rate, dcmi_get_device_utilization_rate,
   (int dev_id, int input_type, unsigned int *utilization_rate), input_type, utilization_rate)
V2(dcmiv2_get_device_multi_utilization_rate, dcmi_get_device_multi_utilization_rate,
   (int dev_id, struct dcmi_multi_utilization_info *util_info), util_info)
V2(dcmiv2_get_device_aicore_info, dcmi_get_device_aicore_info,
   (int dev_id, struct dcmi_aicore_info *aicore_info), aicore_info)
V2(dcmiv2_get_device_ecc_info, dcmi_get_device_ecc_info,
   (int dev_id, enum dcmi_device_type input_type, struct dcmi_ecc_info *device_ecc_info),
   input_type, device_ecc_info)
V2(dcmiv2_get_device_proc_mem_info, dcmi_get_device_resource_info,
   (int dev_id, struct dcmi_proc_mem_info *proc_info, int *proc_num), proc_info, proc_num)
V2(dcmiv2_get_device_chip_info, dcmi_get_device_chip_info_v2,
   (int dev_id, struct dcmi_chip_info_v2 *chip_info), chip_info)
V2(dcmiv2_get_device_pcie_info, dcmi_get_device_pcie_info_v2,
   (int dev_id, struct dcmi_pcie_info_all *pcie_info), pcie_info)
V2(dcmiv2_get_device_info, dcmi_get_device_info,
   (int dev_id, enum dcmi_main_cmd main_cmd, unsigned int sub_cmd, void *buf, unsigned int *size),
   main_cmd, sub_cmd, buf, size)
V2(dcmiv2_get_pcie_link_bandwidth_info, dcmi_get_pcie_link_bandwidth_info,
   (int dev_id, struct dcmi_pcie_link_bandwidth_info *pcie_link_bandwidth_info),
   pcie_link_bandwidth_info)

int dcmiv2_get_mainboard_id(int dev_id, unsigned int *mainboard_id) {
    int card, device, rc = v2_enter(dev_id, &card, &device);
    if (rc) return rc;
    rc = dcmi_get_mainboard_id(card, 0, mainboard_id);
    v2_call = 0;
    return rc;
}

int dcmiv2_get_dcmi_version(char *dcmi_ver, unsigned int len) {
    if (!v2_initialised) return INNER_ERR;
    snprintf(dcmi_ver, len, "%s", dcmi_version);
    return 0;
}

int dcmiv2_get_driver_version(char *driver_ver, unsigned int len) {
    if (!v2_initialised) return INNER_ERR;
    snprintf(driver_ver, len, "%s", driver_version);
    return 0;
}
#endif
