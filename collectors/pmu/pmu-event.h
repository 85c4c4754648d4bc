/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The event catalogue: what armprofd counts, under which metric name
 * (ARCHITECTURE.md §7), and how each event is encoded for each kind of PMU.
 *
 * On Arm, hardware events are raw PMUv3 common event numbers (Arm ARM
 * D17.11 "PMU events and event numbers"; include/linux/perf/arm_pmuv3.h),
 * opened with the core PMU's own dynamic sysfs `type`. Their meaning is
 * architectural and does not move between kernels, unlike the generic
 * PERF_TYPE_HARDWARE mapping (armv8_pmuv3_perf_map has changed over time).
 * Elsewhere (x86 `cpu` PMU, unknown cores) the generic PERF_TYPE_HARDWARE
 * and PERF_TYPE_HW_CACHE encodings are used where one exists.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Arm PMUv3 common event numbers (Arm ARM D17.11; include/linux/perf/arm_pmuv3.h). */
#define ARMV8_PMUV3_L1D_CACHE_REFILL     0x0003
#define ARMV8_PMUV3_L1D_CACHE            0x0004
#define ARMV8_PMUV3_L1D_TLB_REFILL       0x0005
#define ARMV8_PMUV3_INST_RETIRED         0x0008
#define ARMV8_PMUV3_BR_MIS_PRED          0x0010
#define ARMV8_PMUV3_CPU_CYCLES           0x0011
#define ARMV8_PMUV3_BR_MIS_PRED_RETIRED  0x0022
#define ARMV8_PMUV3_STALL_FRONTEND       0x0023
#define ARMV8_PMUV3_STALL_BACKEND        0x0024
#define ARMV8_PMUV3_L1D_TLB              0x0025
#define ARMV8_PMUV3_DTLB_WALK            0x0034
#define ARMV8_PMUV3_LL_CACHE_RD          0x0036
#define ARMV8_PMUV3_LL_CACHE_MISS_RD     0x0037

/* PERF_TYPE_HW_CACHE config = id | (op << 8) | (result << 16), perf_event_open(2). */
#define PMU_HW_CACHE_OP_SHIFT     8
#define PMU_HW_CACHE_RESULT_SHIFT 16
#define PMU_HW_CACHE_CONFIG(id, op, result)                                  \
        ((uint64_t) (id) | ((uint64_t) (op) << PMU_HW_CACHE_OP_SHIFT) |      \
         ((uint64_t) (result) << PMU_HW_CACHE_RESULT_SHIFT))

enum pmu_event_id {
        PMU_EVENT_CYCLES,
        PMU_EVENT_INSTRUCTIONS,
        PMU_EVENT_L1D_CACHE,
        PMU_EVENT_L1D_CACHE_REFILL,
        PMU_EVENT_LLC_READ,
        PMU_EVENT_LLC_READ_MISS,
        PMU_EVENT_L1D_TLB,
        PMU_EVENT_L1D_TLB_REFILL,
        PMU_EVENT_DTLB_WALK,
        PMU_EVENT_BRANCH_MISPREDICTS,
        PMU_EVENT_STALL_FRONTEND,
        PMU_EVENT_STALL_BACKEND,
        PMU_EVENT_CONTEXT_SWITCHES,
        PMU_EVENT_CPU_MIGRATIONS,
        PMU_EVENT_PAGE_FAULTS,
        _PMU_EVENT_MAX,
        _PMU_EVENT_INVALID = -1,
};

enum pmu_event_class {
        PMU_EVENT_CLASS_HARDWARE, /* needs a core PMU counter */
        PMU_EVENT_CLASS_SOFTWARE, /* kernel software counter, never multiplexed */
};

/* One Arm PMUv3 encoding: the common event number and its name in
 * /sys/bus/event_source/devices/<pmu>/events/ (the kernel hides the file
 * when PMCEID says the core does not implement the event). */
struct pmu_event_arm {
        uint16_t number;
        const char *sysfs_name;
};

struct pmu_event_def {
        enum pmu_event_id id;
        const char *name;   /* short name for config: "cycles", "page_faults" */
        const char *metric; /* Prometheus name, ARCHITECTURE.md §7 */
        const char *help;   /* HELP text */
        enum pmu_event_class class;
        /* Arm PMUv3 raw encodings, tried in order (the second is a
         * fallback for cores without the first); number 0 with a NULL
         * name ends the list. Hardware events only. */
        struct pmu_event_arm arm[2];
        /* Generic encoding: perf_event_attr.type/config, for software
         * events and for hardware events on non-Arm PMUs. */
        bool has_generic;
        uint32_t generic_type;
        uint64_t generic_config;
};

struct pmu_desc;

const struct pmu_event_def *pmu_event_get(enum pmu_event_id id);

/*
 * perf_event_attr.type/config for event id on a CPU whose core PMU is pmu
 * (NULL: no core PMU found). Hardware events on an Arm PMUv3 use its own
 * dynamic type and the first raw encoding that its events/ folder lists
 * (the kernel hides events/<name> when PMCEID0/1 say the core does not
 * implement the event, armv8pmu_event_attr_is_visible() in
 * drivers/perf/arm_pmuv3.c, while a raw number is never checked and would
 * open and read 0). With open_unlisted, or when events/ is missing
 * altogether, the first encoding is used regardless. Everything else uses
 * the generic encoding. Returns -ENOENT (not listed) or -EOPNOTSUPP (no
 * encoding for this kind of PMU) without touching ret_*.
 */
int pmu_event_encode(enum pmu_event_id id, const struct pmu_desc *pmu, bool open_unlisted,
                     uint32_t *ret_type, uint64_t *ret_config);
/*
 * Why an event is unavailable, from the negative errno of its encoding or of
 * perf_event_open(): ENOENT and EOPNOTSUPP mean the CPU's PMU lacks it
 * (pmu_event_encode()'s "not in events/", and perf_event_open(2)'s "some
 * unsupported generic events" / "no hardware support"), said so rather than
 * as strerror()'s "No such file or directory"; anything else is strerror().
 */
const char *pmu_event_error_string(int error);

/* By short name; NULL when unknown. */
const struct pmu_event_def *pmu_event_by_name(const char *name);

/*
 * Turn a configured list of short names into event ids, dropping
 * duplicates and keeping the order given. n == 0 means "every event".
 * On an unknown name returns -EINVAL and, if bad_name is not NULL, points
 * it at the offending name (one of the caller's strings) so the caller can
 * name it in its error. ret_ids must hold _PMU_EVENT_MAX entries.
 */
int pmu_event_list_parse(const char *const *names, size_t n, const char **bad_name,
                         enum pmu_event_id ret_ids[static _PMU_EVENT_MAX],
                         size_t *ret_n);
