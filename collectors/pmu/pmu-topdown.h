/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Top-down ("where the cycles go") per CPU from counting: which formulas a
 * core has (chosen from its MIDR on Arm, from the PMU's sysfs events on
 * x86), the one event group that feeds them, and the fractions computed
 * from the deltas of one read of that group. Every fraction of a CPU comes
 * from the same group and therefore from the same multiplexing window: the
 * group is scheduled as a whole or not at all (perf_event_open(2), "group
 * leader"), so its members share time_enabled and time_running and the
 * scaling cancels out of every ratio. Nothing here is ever computed from
 * the catalogue's counters (pmu-event.h), which live in other groups.
 *
 * The formulas are Linux's published metric definitions, each cited where
 * it is written down in pmu-topdown.c. Pure: reads sysfs files under the
 * given root and nothing else; no perf_event_open here (pmu-collector.c).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pmu-group.h"
#include "pmu-sysfs.h"

/* A note for /status: which events are missing, or why level 1 is partial. */
#define PMU_TOPDOWN_NOTE_MAX 256U
/* A core's name for /status: "neoverse-n2 r0p0", "sapphire_rapids". */
#define PMU_TOPDOWN_CORE_MAX 64U

/* MIDR_EL1 fields (Arm ARM D23.2.122; arch/arm64/include/asm/cputype.h). */
#define MIDR_IMPLEMENTER(m) (((m) >> 24) & 0xffU)
#define MIDR_VARIANT(m)     (((m) >> 20) & 0xfU)
#define MIDR_PARTNUM(m)     (((m) >> 4) & 0xfffU)
#define MIDR_REVISION(m)    ((m) & 0xfU)
#define ARM_CPU_IMP_ARM 0x41U
/* arch/arm64/include/asm/cputype.h, ARM_CPU_PART_NEOVERSE_* */
#define ARM_CPU_PART_NEOVERSE_N1 0xd0cU
#define ARM_CPU_PART_NEOVERSE_V1 0xd40U
#define ARM_CPU_PART_NEOVERSE_N2 0xd49U
#define ARM_CPU_PART_NEOVERSE_V2 0xd4fU
#define ARM_CPU_PART_NEOVERSE_V3 0xd84U

enum pmu_topdown_method {
        PMU_TOPDOWN_NONE,               /* no formulas for this core, or its events are missing */
        PMU_TOPDOWN_ARM_CYCLES,         /* Neoverse N1: stall cycles only (level 1 partial) */
        PMU_TOPDOWN_ARM_SLOTS,          /* Neoverse N2, V2: sbsa.json + neoverse-n2-v2/metrics.json */
        PMU_TOPDOWN_ARM_V1,             /* Neoverse V1: neoverse-v1/metrics.json */
        PMU_TOPDOWN_ARM_V3,             /* Neoverse V3: neoverse-v3/metrics.json */
        PMU_TOPDOWN_INTEL_PERF_METRICS, /* Ice Lake and later P-cores: slots + topdown-* */
        PMU_TOPDOWN_INTEL_LEGACY,       /* Sandy Bridge .. Skylake: topdown-total-slots & co. */
        PMU_TOPDOWN_AMD_PIPELINE,       /* Zen 4, Zen 5: dispatch-slot pipeline utilization */
        PMU_TOPDOWN_ARM_MPKI,           /* any PMUv3 core: misses per kilo-instruction, a group of its own */
        _PMU_TOPDOWN_METHOD_MAX,
};

/* The events a method reads; a plan lists those of its method, leader first. */
enum pmu_topdown_input {
        PMU_TD_CPU_CYCLES,
        PMU_TD_STALL_SLOT,
        PMU_TD_STALL_SLOT_FRONTEND,
        PMU_TD_STALL_SLOT_BACKEND,
        PMU_TD_OP_RETIRED,
        PMU_TD_OP_SPEC,
        PMU_TD_BR_MIS_PRED,
        PMU_TD_STALL_FRONTEND_FLUSH,
        PMU_TD_STALL_FRONTEND,
        PMU_TD_STALL_BACKEND,
        PMU_TD_SLOTS,
        PMU_TD_RETIRING,
        PMU_TD_BAD_SPEC,
        PMU_TD_FE_BOUND,
        PMU_TD_BE_BOUND,
        PMU_TD_HEAVY_OPS,
        PMU_TD_BR_MISPREDICT,
        PMU_TD_FETCH_LAT,
        PMU_TD_MEM_BOUND,
        PMU_TD_AMD_NOT_HALTED_CYC, /* ls_not_halted_cyc */
        PMU_TD_AMD_NO_OPS_FROM_FRONTEND, /* de_no_dispatch_per_slot.no_ops_from_frontend */
        PMU_TD_AMD_BACKEND_STALLS,       /* de_no_dispatch_per_slot.backend_stalls */
        PMU_TD_AMD_SMT_CONTENTION,       /* de_no_dispatch_per_slot.smt_contention */
        PMU_TD_AMD_OP_DISP_ALL,          /* de_src_op_disp.all */
        PMU_TD_AMD_RET_OPS,              /* ex_ret_ops */
        PMU_TD_TOTAL_SLOTS,       /* topdown-total-slots (x .scale) */
        PMU_TD_SLOTS_ISSUED,      /* topdown-slots-issued */
        PMU_TD_SLOTS_RETIRED,     /* topdown-slots-retired */
        PMU_TD_FETCH_BUBBLES,     /* topdown-fetch-bubbles */
        PMU_TD_RECOVERY_BUBBLES,  /* topdown-recovery-bubbles (x .scale) */
        PMU_TD_INST_RETIRED,
        PMU_TD_L1I_CACHE_REFILL,
        PMU_TD_L1D_CACHE_REFILL,
        PMU_TD_L2D_CACHE_REFILL,
        PMU_TD_LL_CACHE_MISS_RD,
        PMU_TD_BR_MIS_PRED_RETIRED,
        _PMU_TD_INPUT_MAX,
};

enum pmu_topdown_metric {
        /* Level 1: sums to 1 */
        PMU_TOPDOWN_FRONTEND_BOUND,
        PMU_TOPDOWN_BAD_SPECULATION,
        PMU_TOPDOWN_RETIRING,
        PMU_TOPDOWN_BACKEND_BOUND,
        /* AMD's fifth level-1 category: slots the other SMT thread took */
        PMU_TOPDOWN_SMT_CONTENTION,
        /* Neoverse N1's partial level 1: fractions of cycles, not of slots */
        PMU_TOPDOWN_FRONTEND_STALLED_CYCLES,
        PMU_TOPDOWN_BACKEND_STALLED_CYCLES,
        /* Level 2 (Intel perf metrics with the four level-2 events) */
        PMU_TOPDOWN_FETCH_LATENCY,
        PMU_TOPDOWN_FETCH_BANDWIDTH,
        PMU_TOPDOWN_BRANCH_MISPREDICTS,
        PMU_TOPDOWN_MACHINE_CLEARS,
        PMU_TOPDOWN_HEAVY_OPERATIONS,
        PMU_TOPDOWN_LIGHT_OPERATIONS,
        PMU_TOPDOWN_MEMORY_BOUND,
        PMU_TOPDOWN_CORE_BOUND,
        /* Level 2 on Arm: misses per 1000 instructions (not fractions) */
        PMU_TOPDOWN_L1I_MPKI,
        PMU_TOPDOWN_L1D_MPKI,
        PMU_TOPDOWN_L2D_MPKI,
        PMU_TOPDOWN_LL_READ_MPKI,
        PMU_TOPDOWN_BRANCH_MPKI,
        _PMU_TOPDOWN_METRIC_MAX,
};

struct pmu_topdown_plan {
        enum pmu_topdown_method method;
        char core[PMU_TOPDOWN_CORE_MAX];
        uint32_t midr;     /* Arm: MIDR_EL1 of the CPU, 0 when unknown */
        unsigned slots;    /* Arm: issue slots per cycle (caps/slots, or the core's width); AMD: dispatch width */
        bool n2_stall_slot_quirk; /* N2 before r0p3: STALL_SLOT* count one slot per cycle too many */
        uint32_t type;     /* perf_event_attr.type for every member */
        size_t n;          /* members, [0] the group leader */
        enum pmu_topdown_input in[_PMU_TD_INPUT_MAX];
        uint64_t config[_PMU_TD_INPUT_MAX];
        /* By input: the factor the PMU's events/<name>.scale gives a count
         * (perf applies it too, evsel's scale), 1 when there is none. */
        double scale[_PMU_TD_INPUT_MAX];
        /* Why there is no plan, or what is partial or missing (level 2). */
        char note[PMU_TOPDOWN_NOTE_MAX];
};

struct pmu_topdown {
        bool present[_PMU_TOPDOWN_METRIC_MAX];
        double value[_PMU_TOPDOWN_METRIC_MAX];
};

/*
 * Plan top-down for cpu, whose core PMU is pmu (NULL: none), reading
 * <sysfs_root>/devices/system/cpu/cpu<N>/regs/identification/midr_el1 on
 * Arm, <procfs_root>/cpuinfo (NULL: "/proc") for AMD's family and model.
 * general_counters and cycle_counter are the PMU's counter budget: a
 * group that would not fit is not planned (no multiplexing inside a group
 * is possible, and splitting it would mix windows). Always fills *ret;
 * method NONE with a note when nothing can be computed. Returns 0, or
 * -EINVAL for bad arguments.
 */
int pmu_topdown_plan_cpu(const char *sysfs_root, const char *procfs_root, unsigned cpu, const struct pmu_desc *pmu,
                         unsigned general_counters, bool cycle_counter, struct pmu_topdown_plan *ret);

/*
 * The MPKI group of a PMUv3 core: INST_RETIRED leading, then those of
 * L1I_CACHE_REFILL, L1D_CACHE_REFILL, L2D_CACHE_REFILL, LL_CACHE_MISS_RD and
 * BR_MIS_PRED_RETIRED that events/ lists, as many as general_counters holds
 * (no cycle counter used); the others are named in the note. Method NONE
 * with a note elsewhere. Returns 0, or -EINVAL.
 */
int pmu_topdown_plan_mpki(const struct pmu_desc *pmu, unsigned general_counters, struct pmu_topdown_plan *ret);
/* Whether m is one of the MPKI metrics (a count per 1000 instructions, not a fraction). */
bool pmu_topdown_metric_is_mpki(enum pmu_topdown_metric m);

/*
 * The fractions from delta[in], the counts of one interval of the plan's
 * group (indexed by input; the others are ignored). A fraction is present
 * only when its denominators are not zero, and is clamped to [0, 1]
 * (Linux's V1/V2/V3 formulas subtract a branch-misprediction or flush
 * term that can exceed the stall term over a short interval).
 */
void pmu_topdown_compute(const struct pmu_topdown_plan *p, const uint64_t delta[static _PMU_TD_INPUT_MAX],
                         struct pmu_topdown *ret);

/*
 * One interval of one group: the counts of its members between two reads
 * of the same fds. The first read after an open only sets the baseline;
 * a read in which the group did not run (time_running unchanged: it was
 * multiplexed out for the whole interval) gives nothing; a read whose ids
 * are not exactly the plan's members gives nothing. Never mixes the values
 * of two opens or of two groups.
 */
struct pmu_topdown_window {
        bool primed;
        uint64_t running;
        uint64_t value[_PMU_TD_INPUT_MAX];
};

void pmu_topdown_window_reset(struct pmu_topdown_window *w);
/* ids[i] is the kernel id (PERF_EVENT_IOC_ID) of p->in[i]. Returns 1 and
 * fills *ret when an interval was computed, 0 when not (ret untouched). */
int pmu_topdown_window_advance(struct pmu_topdown_window *w, const struct pmu_topdown_plan *p,
                               const uint64_t ids[static _PMU_TD_INPUT_MAX],
                               const struct pmu_group_reading *rd, struct pmu_topdown *ret);

const char *pmu_topdown_method_to_string(enum pmu_topdown_method m);
/* "frontend_bound", ... : the `category` label. */
const char *pmu_topdown_metric_name(enum pmu_topdown_metric m);
/* 1 or 2. */
unsigned pmu_topdown_metric_level(enum pmu_topdown_metric m);
/* Whether level 1 is complete (the four fractions) for this method. */
bool pmu_topdown_method_complete(enum pmu_topdown_method m);
/* Whether method computes metric m at all (with the plan's events). */
bool pmu_topdown_plan_computes(const struct pmu_topdown_plan *p, enum pmu_topdown_metric m);
