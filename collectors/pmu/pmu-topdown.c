/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pmu-topdown.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "strbuf.h"

#define PROCFS_DEFAULT_ROOT "/proc"
/* /proc/cpuinfo: a line of it ("model name : ..." is the longest we meet). */
#define CPUINFO_LINE_MAX 512U

/* AMD raw events: the event select's low 8 bits in config 0-7, its high 4 in
 * config 32-35, the unit mask in 8-15 (AMD64_EVENTSEL_EVENT and
 * ARCH_PERFMON_EVENTSEL_UMASK, arch/x86/include/asm/perf_event.h). */
#define AMD_RAW(event, umask) \
        (((uint64_t) (event) & 0xffU) | (((uint64_t) (event) >> 8) << 32) | ((uint64_t) (umask) << 8))
/* Dispatch slots per cycle: amdzen4/pipeline.json "6 * ls_not_halted_cyc",
 * amdzen5/pipeline.json "8 * ls_not_halted_cyc". */
#define AMD_ZEN4_DISPATCH_SLOTS 6U
#define AMD_ZEN5_DISPATCH_SLOTS 8U

/* Issue slots per cycle where caps/slots (PMMIR_EL1.SLOTS, exposed by
 * drivers/perf/arm_pmuv3.c as caps/slots since Linux 5.15) reads 0 or is
 * absent: the widths Linux's own metric files write down for these cores
 * (neoverse-v1/metrics.json "CPU_CYCLES * 8", neoverse-v3/metrics.json
 * "10 * CPU_CYCLES", and 5 for N2 in the review of neoverse-n2-v2/metrics.json). */
#define NEOVERSE_N2_SLOTS 5U
#define NEOVERSE_V1_SLOTS 8U
#define NEOVERSE_V2_SLOTS 8U
#define NEOVERSE_V3_SLOTS 10U

/* STALL_FRONTEND_FLUSH, an Armv9 event that the kernel's PMUv3 driver does
 * not list in events/ (drivers/perf/arm_pmuv3.c lists the common events
 * 0x0000-0x003f and 0x4000-0x403f only): its number from
 * tools/perf/pmu-events/arch/arm64/common-and-microarch.json. */
#define ARMV9_STALL_FRONTEND_FLUSH 0x8162U

/* N2 r0p3 and later count STALL_SLOT* correctly: the formula's
 * strcmp_cpuid_str(0x410fd493) (tools/perf/pmu-events/arch/arm64/arm/
 * neoverse-n2-v2/metrics.json, commit "perf vendor events arm64: Update
 * stall_slot workaround for N2 r0p3"). Variant and revision as one number. */
#define NEOVERSE_N2_FIXED_VARIANT_REVISION 0x03U

struct input_def {
        const char *sysfs_name; /* in the PMU's events/ */
        uint64_t raw;           /* used when sysfs_name is NULL */
};

static const struct input_def inputs[_PMU_TD_INPUT_MAX] = {
        [PMU_TD_CPU_CYCLES] = { "cpu_cycles", 0 },
        [PMU_TD_STALL_SLOT] = { "stall_slot", 0 },
        [PMU_TD_STALL_SLOT_FRONTEND] = { "stall_slot_frontend", 0 },
        [PMU_TD_STALL_SLOT_BACKEND] = { "stall_slot_backend", 0 },
        [PMU_TD_OP_RETIRED] = { "op_retired", 0 },
        [PMU_TD_OP_SPEC] = { "op_spec", 0 },
        [PMU_TD_BR_MIS_PRED] = { "br_mis_pred", 0 },
        [PMU_TD_STALL_FRONTEND_FLUSH] = { NULL, ARMV9_STALL_FRONTEND_FLUSH },
        [PMU_TD_STALL_FRONTEND] = { "stall_frontend", 0 },
        [PMU_TD_STALL_BACKEND] = { "stall_backend", 0 },
        /* arch/x86/events/intel/core.c: EVENT_ATTR_STR(slots, ...),
         * td_retiring ... td_mem_bound, listed on Ice Lake and later. */
        [PMU_TD_SLOTS] = { "slots", 0 },
        [PMU_TD_RETIRING] = { "topdown-retiring", 0 },
        [PMU_TD_BAD_SPEC] = { "topdown-bad-spec", 0 },
        [PMU_TD_FE_BOUND] = { "topdown-fe-bound", 0 },
        [PMU_TD_BE_BOUND] = { "topdown-be-bound", 0 },
        [PMU_TD_HEAVY_OPS] = { "topdown-heavy-ops", 0 },
        [PMU_TD_BR_MISPREDICT] = { "topdown-br-mispredict", 0 },
        [PMU_TD_FETCH_LAT] = { "topdown-fetch-lat", 0 },
        [PMU_TD_MEM_BOUND] = { "topdown-mem-bound", 0 },
        /* tools/perf/pmu-events/arch/x86/amdzen4/other.json and core.json
         * (amdzen5/decode.json: the same codes): the AMD `cpu` PMU lists none
         * of them in events/, so by number, for the models Linux maps. */
        [PMU_TD_AMD_NOT_HALTED_CYC] = { NULL, AMD_RAW(0x76, 0x00) },
        [PMU_TD_AMD_NO_OPS_FROM_FRONTEND] = { NULL, AMD_RAW(0x1a0, 0x01) },
        [PMU_TD_AMD_BACKEND_STALLS] = { NULL, AMD_RAW(0x1a0, 0x1e) },
        [PMU_TD_AMD_SMT_CONTENTION] = { NULL, AMD_RAW(0x1a0, 0x60) },
        [PMU_TD_AMD_OP_DISP_ALL] = { NULL, AMD_RAW(0xaa, 0x07) },
        [PMU_TD_AMD_RET_OPS] = { NULL, AMD_RAW(0xc1, 0x00) },
        /* PMUv3 common events, include/linux/perf/arm_pmuv3.h */
        /* arch/x86/events/intel/core.c snb_events_attrs: td_total_slots,
         * td_slots_issued, td_slots_retired, td_fetch_bubbles, td_recovery_bubbles */
        [PMU_TD_TOTAL_SLOTS] = { "topdown-total-slots", 0 },
        [PMU_TD_SLOTS_ISSUED] = { "topdown-slots-issued", 0 },
        [PMU_TD_SLOTS_RETIRED] = { "topdown-slots-retired", 0 },
        [PMU_TD_FETCH_BUBBLES] = { "topdown-fetch-bubbles", 0 },
        [PMU_TD_RECOVERY_BUBBLES] = { "topdown-recovery-bubbles", 0 },
        [PMU_TD_INST_RETIRED] = { "inst_retired", 0 },
        [PMU_TD_L1I_CACHE_REFILL] = { "l1i_cache_refill", 0 },
        [PMU_TD_L1D_CACHE_REFILL] = { "l1d_cache_refill", 0 },
        [PMU_TD_L2D_CACHE_REFILL] = { "l2d_cache_refill", 0 },
        [PMU_TD_LL_CACHE_MISS_RD] = { "ll_cache_miss_rd", 0 },
        [PMU_TD_BR_MIS_PRED_RETIRED] = { "br_mis_pred_retired", 0 },
};

static const char *const method_names[_PMU_TOPDOWN_METHOD_MAX] = {
        [PMU_TOPDOWN_NONE] = "none",
        [PMU_TOPDOWN_ARM_CYCLES] = "arm-stall-cycles",
        [PMU_TOPDOWN_ARM_SLOTS] = "arm-slots",
        [PMU_TOPDOWN_ARM_V1] = "arm-neoverse-v1",
        [PMU_TOPDOWN_ARM_V3] = "arm-neoverse-v3",
        [PMU_TOPDOWN_INTEL_PERF_METRICS] = "intel-perf-metrics",
        [PMU_TOPDOWN_INTEL_LEGACY] = "intel-tma-legacy",
        [PMU_TOPDOWN_AMD_PIPELINE] = "amd-pipeline",
        [PMU_TOPDOWN_ARM_MPKI] = "arm-mpki",
};

static const char *const metric_names[_PMU_TOPDOWN_METRIC_MAX] = {
        [PMU_TOPDOWN_FRONTEND_BOUND] = "frontend_bound",
        [PMU_TOPDOWN_BAD_SPECULATION] = "bad_speculation",
        [PMU_TOPDOWN_RETIRING] = "retiring",
        [PMU_TOPDOWN_BACKEND_BOUND] = "backend_bound",
        [PMU_TOPDOWN_SMT_CONTENTION] = "smt_contention",
        [PMU_TOPDOWN_FRONTEND_STALLED_CYCLES] = "frontend_stalled_cycles",
        [PMU_TOPDOWN_BACKEND_STALLED_CYCLES] = "backend_stalled_cycles",
        [PMU_TOPDOWN_FETCH_LATENCY] = "fetch_latency",
        [PMU_TOPDOWN_FETCH_BANDWIDTH] = "fetch_bandwidth",
        [PMU_TOPDOWN_BRANCH_MISPREDICTS] = "branch_mispredicts",
        [PMU_TOPDOWN_MACHINE_CLEARS] = "machine_clears",
        [PMU_TOPDOWN_HEAVY_OPERATIONS] = "heavy_operations",
        [PMU_TOPDOWN_LIGHT_OPERATIONS] = "light_operations",
        [PMU_TOPDOWN_MEMORY_BOUND] = "memory_bound",
        [PMU_TOPDOWN_CORE_BOUND] = "core_bound",
        [PMU_TOPDOWN_L1I_MPKI] = "l1i_cache_mpki",
        [PMU_TOPDOWN_L1D_MPKI] = "l1d_cache_mpki",
        [PMU_TOPDOWN_L2D_MPKI] = "l2d_cache_mpki",
        [PMU_TOPDOWN_LL_READ_MPKI] = "ll_cache_read_mpki",
        [PMU_TOPDOWN_BRANCH_MPKI] = "branch_mpki",
};

/* The MPKI metrics and the event each counts, in plan order after INST_RETIRED. */
static const struct {
        enum pmu_topdown_metric metric;
        enum pmu_topdown_input in;
} mpki_events[] = {
        { PMU_TOPDOWN_L1I_MPKI, PMU_TD_L1I_CACHE_REFILL },     { PMU_TOPDOWN_L1D_MPKI, PMU_TD_L1D_CACHE_REFILL },
        { PMU_TOPDOWN_L2D_MPKI, PMU_TD_L2D_CACHE_REFILL },     { PMU_TOPDOWN_LL_READ_MPKI, PMU_TD_LL_CACHE_MISS_RD },
        { PMU_TOPDOWN_BRANCH_MPKI, PMU_TD_BR_MIS_PRED_RETIRED },
};

bool pmu_topdown_metric_is_mpki(enum pmu_topdown_metric m) {
        return m >= PMU_TOPDOWN_L1I_MPKI && m <= PMU_TOPDOWN_BRANCH_MPKI;
}

const char *pmu_topdown_method_to_string(enum pmu_topdown_method m) {
        if (m < 0 || m >= _PMU_TOPDOWN_METHOD_MAX)
                return NULL;
        return method_names[m];
}

const char *pmu_topdown_metric_name(enum pmu_topdown_metric m) {
        if (m < 0 || m >= _PMU_TOPDOWN_METRIC_MAX)
                return NULL;
        return metric_names[m];
}

unsigned pmu_topdown_metric_level(enum pmu_topdown_metric m) {
        return m >= PMU_TOPDOWN_FETCH_LATENCY ? 2U : 1U;
}

bool pmu_topdown_method_complete(enum pmu_topdown_method m) {
        return m != PMU_TOPDOWN_NONE && m != PMU_TOPDOWN_ARM_CYCLES;
}

static bool plan_has(const struct pmu_topdown_plan *p, enum pmu_topdown_input in) {
        for (size_t i = 0; i < p->n; i++)
                if (p->in[i] == in)
                        return true;
        return false;
}

bool pmu_topdown_plan_computes(const struct pmu_topdown_plan *p, enum pmu_topdown_metric m) {
        switch (p->method) {
        case PMU_TOPDOWN_NONE:
        case _PMU_TOPDOWN_METHOD_MAX:
                return false;
        case PMU_TOPDOWN_ARM_CYCLES:
                return m == PMU_TOPDOWN_FRONTEND_STALLED_CYCLES || m == PMU_TOPDOWN_BACKEND_STALLED_CYCLES;
        case PMU_TOPDOWN_ARM_SLOTS:
        case PMU_TOPDOWN_ARM_V1:
        case PMU_TOPDOWN_ARM_V3:
                return m <= PMU_TOPDOWN_BACKEND_BOUND;
        case PMU_TOPDOWN_AMD_PIPELINE:
                return m <= PMU_TOPDOWN_SMT_CONTENTION;
        case PMU_TOPDOWN_INTEL_LEGACY:
                return m <= PMU_TOPDOWN_BACKEND_BOUND;
        case PMU_TOPDOWN_ARM_MPKI:
                for (size_t i = 0; i < ELEMENTSOF(mpki_events); i++)
                        if (mpki_events[i].metric == m)
                                return plan_has(p, mpki_events[i].in);
                return false;
        case PMU_TOPDOWN_INTEL_PERF_METRICS:
                if (m <= PMU_TOPDOWN_BACKEND_BOUND)
                        return true;
                return m >= PMU_TOPDOWN_FETCH_LATENCY && m <= PMU_TOPDOWN_CORE_BOUND && plan_has(p, PMU_TD_MEM_BOUND);
        }
        return false;
}

/* Add the inputs to the plan, leader first; on a missing event, method NONE
 * and a note naming every missing one. */
static void plan_events(struct pmu_topdown_plan *p, const struct pmu_desc *pmu, const enum pmu_topdown_input *want,
                        size_t n_want, bool x86_terms) {
        size_t missing = 0;

        p->n = 0;
        p->type = pmu->type;
        for (size_t i = 0; i < n_want; i++) {
                const struct input_def *d = &inputs[want[i]];
                uint64_t config = d->raw;
                int r = 0;

                if (d->sysfs_name)
                        r = x86_terms ? pmu_desc_event_config_terms(pmu, d->sysfs_name, &config)
                                      : pmu_desc_event_config(pmu, d->sysfs_name, &config);
                if (r < 0) {
                        STR_APPENDF(p->note, "%s%s%s", missing++ == 0 ? "events/ lacks " : ", ", d->sysfs_name,
                                    r == -ENOENT ? "" : " (unparsable)");
                        continue;
                }
                p->in[p->n] = want[i];
                p->config[p->n] = config;
                p->scale[want[i]] = 1;
                if (d->sysfs_name) {
                        char scale_name[PMU_EVENT_STRING_MAX];
                        const char *v;
                        char *end = NULL;
                        double f;

                        snprintf(scale_name, sizeof(scale_name), "%s.scale", d->sysfs_name);
                        v = pmu_desc_event(pmu, scale_name);
                        if (v) {
                                f = strtod(v, &end);
                                if (end != v && *end == '\0' && f > 0)
                                        p->scale[want[i]] = f;
                        }
                }
                p->n++;
        }
        if (missing > 0) {
                STR_APPENDF(p->note, " (the kernel lists an event when the core counts it, PMCEID on Arm)");
                p->method = PMU_TOPDOWN_NONE;
                p->n = 0;
        }
}

/* Hardware counters the group takes beyond a dedicated cycle counter and
 * the fixed ones. */
static unsigned general_needed(const struct pmu_topdown_plan *p, bool cycle_counter) {
        unsigned n = 0;

        for (size_t i = 0; i < p->n; i++) {
                if (p->in[i] == PMU_TD_CPU_CYCLES && cycle_counter)
                        continue; /* PMCCNTR_EL0, Arm ARM D17.2 */
                /* slots is fixed counter 3 and topdown-* are read from
                 * PERF_METRICS, not counters (intel_icl_event_constraints,
                 * METRIC_EVENT_CONSTRAINT in arch/x86/events/intel/core.c) */
                if (p->in[i] >= PMU_TD_SLOTS && p->in[i] <= PMU_TD_MEM_BOUND)
                        continue;
                /* topdown-total-slots is event 0x3c umask 0 (CPU_CLK_UNHALTED),
                 * which fixed counter 1 takes: FIXED_EVENT_CONSTRAINT(0x003c, 1)
                 * in intel_snb_event_constraints and the later tables. */
                if (p->in[i] == PMU_TD_TOTAL_SLOTS)
                        continue;
                n++;
        }
        return n;
}

static int read_midr(const char *sysfs_root, unsigned cpu, uint32_t *ret) {
        char path[PATH_MAX], value[DECIMAL_STR_MAX(uint64_t) + 3];
        uint64_t midr;
        int r;

        /* Documentation/ABI/testing/sysfs-devices-system-cpu:
         * /sys/devices/system/cpu/cpuX/regs/identification/midr_el1 */
        if (snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%u/regs/identification/midr_el1", sysfs_root,
                     cpu) >= (int) sizeof(path))
                return -ENAMETOOLONG;
        r = pmu_sysfs_read_string(path, value, sizeof(value));
        if (r < 0)
                return r;
        r = pmu_sysfs_parse_hex(value, &midr);
        if (r < 0)
                return r;
        *ret = (uint32_t) midr; /* the upper half is RES0 */
        return 0;
}

static unsigned caps_slots(const struct pmu_desc *pmu, unsigned fallback) {
        const char *v = pmu_desc_attr(pmu->caps, pmu->n_caps, "slots");
        uint64_t slots;

        if (!v || pmu_sysfs_parse_hex(v, &slots) < 0 || slots == 0 || slots > UINT_MAX)
                return fallback;
        return (unsigned) slots;
}

static void plan_arm(const char *sysfs_root, unsigned cpu, const struct pmu_desc *pmu, struct pmu_topdown_plan *p) {
        static const enum pmu_topdown_input cycles_in[] = { PMU_TD_CPU_CYCLES, PMU_TD_STALL_FRONTEND,
                                                            PMU_TD_STALL_BACKEND };
        static const enum pmu_topdown_input slots_in[] = { PMU_TD_CPU_CYCLES, PMU_TD_STALL_SLOT,
                                                           PMU_TD_STALL_SLOT_FRONTEND, PMU_TD_STALL_SLOT_BACKEND,
                                                           PMU_TD_OP_RETIRED, PMU_TD_OP_SPEC };
        static const enum pmu_topdown_input v1_in[] = { PMU_TD_CPU_CYCLES, PMU_TD_STALL_SLOT,
                                                        PMU_TD_STALL_SLOT_FRONTEND, PMU_TD_STALL_SLOT_BACKEND,
                                                        PMU_TD_OP_RETIRED, PMU_TD_OP_SPEC, PMU_TD_BR_MIS_PRED };
        static const enum pmu_topdown_input v3_in[] = { PMU_TD_CPU_CYCLES, PMU_TD_STALL_SLOT,
                                                        PMU_TD_STALL_SLOT_FRONTEND, PMU_TD_STALL_SLOT_BACKEND,
                                                        PMU_TD_OP_RETIRED, PMU_TD_OP_SPEC,
                                                        PMU_TD_STALL_FRONTEND_FLUSH };
        const char *name;
        uint32_t midr = 0;
        int r;

        r = read_midr(sysfs_root, cpu, &midr);
        if (r < 0) {
                STR_APPENDF(p->note, "cannot read cpu%u's midr_el1 (%s): the core, and so its formulas, is "
                                     "unknown", cpu,
                            strerror(-r));
                return;
        }
        p->midr = midr;
        if (MIDR_IMPLEMENTER(midr) != ARM_CPU_IMP_ARM) {
                snprintf(p->core, sizeof(p->core), "midr 0x%08x", midr);
                STR_APPENDF(p->note, "MIDR 0x%08x (implementer 0x%02x, part 0x%03x): no published top-down "
                                     "formulas for this core",
                            midr, MIDR_IMPLEMENTER(midr), MIDR_PARTNUM(midr));
                return;
        }
        switch (MIDR_PARTNUM(midr)) {
        case ARM_CPU_PART_NEOVERSE_N1:
                name = "neoverse-n1";
                p->method = PMU_TOPDOWN_ARM_CYCLES;
                plan_events(p, pmu, cycles_in, ELEMENTSOF(cycles_in), false);
                if (p->method != PMU_TOPDOWN_NONE)
                        STR_APPENDF(p->note, "level 1 is partial: Neoverse N1 has no STALL_SLOT* or OP_* events, only "
                                             "stall cycles (frontend_stalled_cycles, backend_stalled_cycles); bad "
                                             "speculation and retiring are not computed");
                break;
        case ARM_CPU_PART_NEOVERSE_V1:
                name = "neoverse-v1";
                p->method = PMU_TOPDOWN_ARM_V1;
                p->slots = caps_slots(pmu, NEOVERSE_V1_SLOTS);
                plan_events(p, pmu, v1_in, ELEMENTSOF(v1_in), false);
                break;
        case ARM_CPU_PART_NEOVERSE_N2:
                name = "neoverse-n2";
                p->method = PMU_TOPDOWN_ARM_SLOTS;
                p->slots = caps_slots(pmu, NEOVERSE_N2_SLOTS);
                p->n2_stall_slot_quirk = ((MIDR_VARIANT(midr) << 4) | MIDR_REVISION(midr)) <
                                         NEOVERSE_N2_FIXED_VARIANT_REVISION;
                plan_events(p, pmu, slots_in, ELEMENTSOF(slots_in), false);
                break;
        case ARM_CPU_PART_NEOVERSE_V2:
                name = "neoverse-v2";
                p->method = PMU_TOPDOWN_ARM_SLOTS;
                p->slots = caps_slots(pmu, NEOVERSE_V2_SLOTS);
                plan_events(p, pmu, slots_in, ELEMENTSOF(slots_in), false);
                break;
        case ARM_CPU_PART_NEOVERSE_V3:
                name = "neoverse-v3";
                p->method = PMU_TOPDOWN_ARM_V3;
                p->slots = caps_slots(pmu, NEOVERSE_V3_SLOTS);
                plan_events(p, pmu, v3_in, ELEMENTSOF(v3_in), false);
                break;
        default:
                snprintf(p->core, sizeof(p->core), "arm part 0x%03x r%up%u", MIDR_PARTNUM(midr), MIDR_VARIANT(midr),
                         MIDR_REVISION(midr));
                STR_APPENDF(p->note, "Arm part 0x%03x: no top-down formulas implemented for this core "
                                     "(Neoverse N1, V1, N2, V2 and V3 have them)",
                            MIDR_PARTNUM(midr));
                return;
        }
        snprintf(p->core, sizeof(p->core), "%s r%up%u", name, MIDR_VARIANT(midr), MIDR_REVISION(midr));
        if (p->n2_stall_slot_quirk)
                STR_APPENDF(p->note, "%sN2 before r0p3: STALL_SLOT and STALL_SLOT_FRONTEND less CPU_CYCLES",
                            p->note[0] ? "; " : "");
}

static void fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}

/* vendor_id, cpu family and model of cpu from /proc/cpuinfo (the
 * "processor : N" block; arch/x86/kernel/cpu/proc.c show_cpuinfo()). */
static int read_cpuinfo(const char *procfs_root, unsigned cpu, char *vendor, size_t vendor_len, unsigned *ret_family,
                        unsigned *ret_model) {
        char path[PATH_MAX], line[CPUINFO_LINE_MAX];
        _cleanup_(fclosep) FILE *f = NULL;
        bool mine = false, have_family = false, have_model = false;
        unsigned family = 0, model = 0, n;

        if (snprintf(path, sizeof(path), "%s/cpuinfo", procfs_root) >= (int) sizeof(path))
                return -ENAMETOOLONG;
        f = fopen(path, "re");
        if (!f)
                return -errno;
        vendor[0] = '\0';
        while (fgets(line, sizeof(line), f)) {
                char *colon = strchr(line, ':');
                const char *value;

                if (!colon)
                        continue;
                value = colon + 1 + strspn(colon + 1, " \t");
                if (strncmp(line, "processor", strlen("processor")) == 0) {
                        if (mine)
                                break;
                        mine = sscanf(value, "%u", &n) == 1 && n == cpu;
                        continue;
                }
                if (!mine)
                        continue;
                if (strncmp(line, "vendor_id", strlen("vendor_id")) == 0)
                        snprintf(vendor, vendor_len, "%.*s", (int) strcspn(value, "\n"), value);
                else if (strncmp(line, "cpu family", strlen("cpu family")) == 0)
                        have_family = sscanf(value, "%u", &family) == 1;
                else if (strncmp(line, "model\t", strlen("model\t")) == 0 ||
                         strncmp(line, "model :", strlen("model :")) == 0)
                        have_model = sscanf(value, "%u", &model) == 1;
        }
        if (!mine || !have_family || !have_model || !vendor[0])
                return -ENOENT;
        *ret_family = family;
        *ret_model = model;
        return 0;
}

/* AMD: Zen 4 and Zen 5 publish pipeline utilization (amdzen4/ and
 * amdzen5/pipeline.json, PipelineL1); the model decides which, as Linux's
 * tools/perf/pmu-events/arch/x86/mapfile.csv does:
 *   AuthenticAMD-25-([245][[:xdigit:]]|[[:xdigit:]]) amdzen3
 *   AuthenticAMD-25-[[:xdigit:]]+                    amdzen4
 *   AuthenticAMD-26-[[:xdigit:]]+                    amdzen5 */
static void plan_amd(const struct pmu_desc *pmu, unsigned family, unsigned model, struct pmu_topdown_plan *p) {
        static const enum pmu_topdown_input amd_in[] = { PMU_TD_AMD_NOT_HALTED_CYC, PMU_TD_AMD_NO_OPS_FROM_FRONTEND,
                                                         PMU_TD_AMD_BACKEND_STALLS, PMU_TD_AMD_SMT_CONTENTION,
                                                         PMU_TD_AMD_OP_DISP_ALL,    PMU_TD_AMD_RET_OPS };
        bool zen3 = family == 25 && (model < 0x10 || (model >= 0x20 && model < 0x60));

        if (family == 25 && !zen3) {
                snprintf(p->core, sizeof(p->core), "zen4 family 0x%x model 0x%x", family, model);
                p->slots = AMD_ZEN4_DISPATCH_SLOTS;
        } else if (family == 26) {
                snprintf(p->core, sizeof(p->core), "zen5 family 0x%x model 0x%x", family, model);
                p->slots = AMD_ZEN5_DISPATCH_SLOTS;
        } else {
                snprintf(p->core, sizeof(p->core), "%s family 0x%x model 0x%x", zen3 ? "zen3" : "amd", family,
                         model);
                STR_APPENDF(p->note, "AMD family 0x%x model 0x%x: Linux publishes pipeline utilization (PipelineL1) "
                                     "for Zen 4 and Zen 5 only",
                            family, model);
                return;
        }
        p->method = PMU_TOPDOWN_AMD_PIPELINE;
        plan_events(p, pmu, amd_in, ELEMENTSOF(amd_in), true);
}

static void plan_x86(const char *procfs_root, unsigned cpu, const struct pmu_desc *pmu,
                     struct pmu_topdown_plan *p) {
        static const enum pmu_topdown_input l1_in[] = { PMU_TD_SLOTS, PMU_TD_RETIRING, PMU_TD_BAD_SPEC,
                                                        PMU_TD_FE_BOUND, PMU_TD_BE_BOUND };
        static const enum pmu_topdown_input l2_in[] = { PMU_TD_SLOTS,     PMU_TD_RETIRING,      PMU_TD_BAD_SPEC,
                                                        PMU_TD_FE_BOUND,  PMU_TD_BE_BOUND,      PMU_TD_HEAVY_OPS,
                                                        PMU_TD_BR_MISPREDICT, PMU_TD_FETCH_LAT, PMU_TD_MEM_BOUND };
        const char *pmu_name = pmu_desc_attr(pmu->caps, pmu->n_caps, "pmu_name");

        char vendor[CPUINFO_LINE_MAX];
        unsigned family = 0, model = 0;

        snprintf(p->core, sizeof(p->core), "%s", pmu_name ? pmu_name : pmu->name);
        if (!pmu_desc_event(pmu, "slots") &&
            read_cpuinfo(procfs_root, cpu, vendor, sizeof(vendor), &family, &model) >= 0 &&
            streq(vendor, "AuthenticAMD")) {
                plan_amd(pmu, family, model, p);
                return;
        }
        if (!pmu_desc_event(pmu, "slots") && pmu_desc_event(pmu, "topdown-total-slots")) {
                static const enum pmu_topdown_input legacy_in[] = { PMU_TD_TOTAL_SLOTS, PMU_TD_SLOTS_ISSUED,
                                                                    PMU_TD_SLOTS_RETIRED, PMU_TD_FETCH_BUBBLES,
                                                                    PMU_TD_RECOVERY_BUBBLES };

                p->method = PMU_TOPDOWN_INTEL_LEGACY;
                plan_events(p, pmu, legacy_in, ELEMENTSOF(legacy_in), true);
                return;
        }
        if (!pmu_desc_event(pmu, "slots")) {
                STR_APPENDF(p->note, "%s has no `slots` event (no perf-metrics top-down: an E-core, or a core "
                                     "whose kernel lists neither perf metrics nor topdown-total-slots); the formulas "
                                     "from model-specific events are not implemented",
                            pmu->name);
                return;
        }
        p->method = PMU_TOPDOWN_INTEL_PERF_METRICS;
        /* Sapphire Rapids and later list the level-2 metrics too (the
         * td_heavy_ops ... td_mem_bound attrs, arch/x86/events/intel/core.c). */
        if (pmu_desc_event(pmu, "topdown-mem-bound"))
                plan_events(p, pmu, l2_in, ELEMENTSOF(l2_in), true);
        else {
                plan_events(p, pmu, l1_in, ELEMENTSOF(l1_in), true);
                if (p->method != PMU_TOPDOWN_NONE)
                        STR_APPENDF(p->note, "level 2 needs topdown-heavy-ops/br-mispredict/fetch-lat/mem-bound "
                                             "(Sapphire Rapids and later)");
        }
}

int pmu_topdown_plan_cpu(const char *sysfs_root, const char *procfs_root, unsigned cpu, const struct pmu_desc *pmu,
                         unsigned general_counters, bool cycle_counter, struct pmu_topdown_plan *ret) {
        struct pmu_topdown_plan p = { .method = PMU_TOPDOWN_NONE };
        unsigned needed;

        if (!ret)
                return -EINVAL;
        if (!sysfs_root)
                sysfs_root = PMU_SYSFS_DEFAULT_ROOT;
        if (!procfs_root)
                procfs_root = PROCFS_DEFAULT_ROOT;
        if (!pmu) {
                STR_APPENDF(p.note, "no core PMU counts for this CPU");
                *ret = p;
                return 0;
        }
        if (pmu->kind == PMU_KIND_ARM_PMUV3)
                plan_arm(sysfs_root, cpu, pmu, &p);
        else if (pmu->kind == PMU_KIND_X86)
                plan_x86(procfs_root, cpu, pmu, &p);
        else
                STR_APPENDF(p.note, "%s: no top-down formulas for this kind of PMU", pmu->name);

        needed = general_needed(&p, cycle_counter);
        if (p.method != PMU_TOPDOWN_NONE && needed > general_counters) {
                /* One group or nothing: split, its members would count in
                 * different windows and the fractions would not add up. */
                STR_APPENDF(p.note, "%sthe top-down group needs %u general counters and %s has %u",
                            p.note[0] ? "; " : "",
                            needed, pmu->name, general_counters);
                p.method = PMU_TOPDOWN_NONE;
                p.n = 0;
        }
        *ret = p;
        return 0;
}

int pmu_topdown_plan_mpki(const struct pmu_desc *pmu, unsigned general_counters, struct pmu_topdown_plan *ret) {
        struct pmu_topdown_plan p = { .method = PMU_TOPDOWN_NONE };
        uint64_t config;

        if (!ret)
                return -EINVAL;
        if (!pmu || pmu->kind != PMU_KIND_ARM_PMUV3) {
                STR_APPENDF(p.note, "misses per kilo-instruction are computed on Arm PMUv3 cores only");
                *ret = p;
                return 0;
        }
        p.type = pmu->type;
        if (general_counters < 2 || pmu_desc_event_config(pmu, inputs[PMU_TD_INST_RETIRED].sysfs_name, &config) < 0) {
                STR_APPENDF(p.note, general_counters < 2
                                            ? "the MPKI group needs 2 general counters at least"
                                            : "events/ lacks inst_retired (qemu counts it with -icount only)");
                *ret = p;
                return 0;
        }
        p.in[p.n] = PMU_TD_INST_RETIRED;
        p.config[p.n++] = config;
        for (size_t i = 0; i < ELEMENTSOF(mpki_events); i++) {
                const char *name = inputs[mpki_events[i].in].sysfs_name;

                if (pmu_desc_event_config(pmu, name, &config) < 0) {
                        STR_APPENDF(p.note, "%sevents/ lacks %s", p.note[0] ? "; " : "", name);
                        continue;
                }
                if (p.n == general_counters) {
                        STR_APPENDF(p.note, "%s%s: beyond the %u general counters", p.note[0] ? "; " : "", name,
                                    general_counters);
                        continue;
                }
                p.in[p.n] = mpki_events[i].in;
                p.config[p.n++] = config;
        }
        if (p.n > 1)
                p.method = PMU_TOPDOWN_ARM_MPKI;
        else
                p.n = 0;
        *ret = p;
        return 0;
}

static double clamp01(double v) {
        return v < 0 ? 0 : v > 1 ? 1 : v;
}

static void set(struct pmu_topdown *t, enum pmu_topdown_metric m, double v) {
        t->present[m] = true;
        t->value[m] = clamp01(v);
}

void pmu_topdown_compute(const struct pmu_topdown_plan *p, const uint64_t delta[static _PMU_TD_INPUT_MAX],
                         struct pmu_topdown *ret) {
        double c = (double) delta[PMU_TD_CPU_CYCLES];
        double s = (double) delta[PMU_TD_STALL_SLOT], s_fe = (double) delta[PMU_TD_STALL_SLOT_FRONTEND];
        double s_be = (double) delta[PMU_TD_STALL_SLOT_BACKEND];
        double op_ret = (double) delta[PMU_TD_OP_RETIRED], op_spec = (double) delta[PMU_TD_OP_SPEC];
        double bmp = (double) delta[PMU_TD_BR_MIS_PRED], flush = (double) delta[PMU_TD_STALL_FRONTEND_FLUSH];
        double slots = (double) p->slots;
        struct pmu_topdown t = {};

        switch (p->method) {
        case PMU_TOPDOWN_NONE:
        case _PMU_TOPDOWN_METHOD_MAX:
                break;

        case PMU_TOPDOWN_ARM_CYCLES:
                /* tools/perf/pmu-events/arch/arm64/arm/neoverse-n1/metrics.json:
                 * frontend_stalled_cycles = STALL_FRONTEND / CPU_CYCLES,
                 * backend_stalled_cycles = STALL_BACKEND / CPU_CYCLES */
                if (c == 0)
                        break;
                set(&t, PMU_TOPDOWN_FRONTEND_STALLED_CYCLES, (double) delta[PMU_TD_STALL_FRONTEND] / c);
                set(&t, PMU_TOPDOWN_BACKEND_STALLED_CYCLES, (double) delta[PMU_TD_STALL_BACKEND] / c);
                break;

        case PMU_TOPDOWN_ARM_SLOTS:
                /* tools/perf/pmu-events/arch/arm64/arm/neoverse-n2-v2/metrics.json
                 * (at d43f5491, "Update stall_slot workaround for N2 r0p3"):
                 *   FRONTEND_BOUND  = (stall_slot_frontend [- cpu_cycles on N2 < r0p3]) / (#slots * cpu_cycles)
                 *   BAD_SPECULATION = (1 - op_retired / op_spec) * (1 - (stall_slot [- cpu_cycles]) / (#slots * cpu_cycles))
                 *   RETIRING        = (op_retired / op_spec) * (1 - (stall_slot [- cpu_cycles]) / (#slots * cpu_cycles))
                 * and BACKEND_BOUND from tools/perf/pmu-events/arch/arm64/sbsa.json:
                 *   stall_slot_backend / (#slots * cpu_cycles) */
                if (c == 0 || op_spec == 0 || slots == 0)
                        break;
                if (p->n2_stall_slot_quirk) {
                        s -= c;
                        s_fe -= c;
                }
                set(&t, PMU_TOPDOWN_FRONTEND_BOUND, s_fe / (slots * c));
                set(&t, PMU_TOPDOWN_BAD_SPECULATION, (1 - op_ret / op_spec) * (1 - s / (slots * c)));
                set(&t, PMU_TOPDOWN_RETIRING, (op_ret / op_spec) * (1 - s / (slots * c)));
                set(&t, PMU_TOPDOWN_BACKEND_BOUND, s_be / (slots * c));
                break;

        case PMU_TOPDOWN_ARM_V1:
                /* tools/perf/pmu-events/arch/arm64/arm/neoverse-v1/metrics.json:
                 *   frontend_bound  = STALL_SLOT_FRONTEND / (CPU_CYCLES * 8) - BR_MIS_PRED * 4 / CPU_CYCLES
                 *   bad_speculation = (1 - OP_RETIRED / OP_SPEC) * (1 - STALL_SLOT / (CPU_CYCLES * 8))
                 *                     + BR_MIS_PRED * 4 / CPU_CYCLES
                 * backend_bound and retiring are the ArchStdEvent defaults,
                 * tools/perf/pmu-events/arch/arm64/sbsa.json:
                 *   backend_bound = stall_slot_backend / (#slots * cpu_cycles)
                 *   retiring      = (op_retired / op_spec) * (1 - stall_slot / (#slots * cpu_cycles)) */
                if (c == 0 || op_spec == 0 || slots == 0)
                        break;
                set(&t, PMU_TOPDOWN_FRONTEND_BOUND, s_fe / (c * 8) - bmp * 4 / c);
                set(&t, PMU_TOPDOWN_BAD_SPECULATION, (1 - op_ret / op_spec) * (1 - s / (c * 8)) + bmp * 4 / c);
                set(&t, PMU_TOPDOWN_RETIRING, (op_ret / op_spec) * (1 - s / (slots * c)));
                set(&t, PMU_TOPDOWN_BACKEND_BOUND, s_be / (slots * c));
                break;

        case PMU_TOPDOWN_ARM_V3:
                /* tools/perf/pmu-events/arch/arm64/arm/neoverse-v3/metrics.json:
                 *   frontend_bound  = STALL_SLOT_FRONTEND / (10 * CPU_CYCLES) - STALL_FRONTEND_FLUSH / CPU_CYCLES
                 *   bad_speculation = (1 - STALL_SLOT / (10 * CPU_CYCLES)) * (1 - OP_RETIRED / OP_SPEC)
                 *                     + STALL_FRONTEND_FLUSH / CPU_CYCLES
                 * backend_bound and retiring from sbsa.json as for V1. */
                if (c == 0 || op_spec == 0 || slots == 0)
                        break;
                set(&t, PMU_TOPDOWN_FRONTEND_BOUND, s_fe / (10 * c) - flush / c);
                set(&t, PMU_TOPDOWN_BAD_SPECULATION, (1 - s / (10 * c)) * (1 - op_ret / op_spec) + flush / c);
                set(&t, PMU_TOPDOWN_RETIRING, (op_ret / op_spec) * (1 - s / (slots * c)));
                set(&t, PMU_TOPDOWN_BACKEND_BOUND, s_be / (slots * c));
                break;

        case PMU_TOPDOWN_INTEL_LEGACY: {
                /* tools/perf/util/stat-shadow.c before Linux 6.2 (perf stat --topdown on
                 * cores without perf metrics), the counts scaled by events/<name>.scale:
                 *   td_fe_bound = topdown-fetch-bubbles / total_slots
                 *   td_bad_spec = (topdown-slots-issued - topdown-slots-retired
                 *                  + topdown-recovery-bubbles) / total_slots
                 *   td_retiring = topdown-slots-retired / total_slots
                 *   td_be_bound = 1 - (td_fe_bound + td_bad_spec + td_retiring) */
                double total = (double) delta[PMU_TD_TOTAL_SLOTS] * p->scale[PMU_TD_TOTAL_SLOTS];
                double fe, bad, ret_;

                if (total == 0)
                        break;
                fe = (double) delta[PMU_TD_FETCH_BUBBLES] * p->scale[PMU_TD_FETCH_BUBBLES] / total;
                bad = ((double) delta[PMU_TD_SLOTS_ISSUED] * p->scale[PMU_TD_SLOTS_ISSUED] -
                       (double) delta[PMU_TD_SLOTS_RETIRED] * p->scale[PMU_TD_SLOTS_RETIRED] +
                       (double) delta[PMU_TD_RECOVERY_BUBBLES] * p->scale[PMU_TD_RECOVERY_BUBBLES]) /
                      total;
                ret_ = (double) delta[PMU_TD_SLOTS_RETIRED] * p->scale[PMU_TD_SLOTS_RETIRED] / total;
                set(&t, PMU_TOPDOWN_FRONTEND_BOUND, fe);
                set(&t, PMU_TOPDOWN_BAD_SPECULATION, bad);
                set(&t, PMU_TOPDOWN_RETIRING, ret_);
                set(&t, PMU_TOPDOWN_BACKEND_BOUND, 1 - (clamp01(fe) + clamp01(bad) + clamp01(ret_)));
                break;
        }

        case PMU_TOPDOWN_AMD_PIPELINE: {
                /* tools/perf/pmu-events/arch/x86/amdzen4/pipeline.json (and
                 * amdzen5/, with 8 slots), total_dispatch_slots = 6 * ls_not_halted_cyc:
                 *   frontend_bound  = de_no_dispatch_per_slot.no_ops_from_frontend / total_dispatch_slots
                 *   bad_speculation = (de_src_op_disp.all - ex_ret_ops) / total_dispatch_slots
                 *   backend_bound   = de_no_dispatch_per_slot.backend_stalls / total_dispatch_slots
                 *   smt_contention  = de_no_dispatch_per_slot.smt_contention / total_dispatch_slots
                 *   retiring        = ex_ret_ops / total_dispatch_slots */
                double total = slots * (double) delta[PMU_TD_AMD_NOT_HALTED_CYC];
                double ret_ops = (double) delta[PMU_TD_AMD_RET_OPS];

                if (total == 0)
                        break;
                set(&t, PMU_TOPDOWN_FRONTEND_BOUND, (double) delta[PMU_TD_AMD_NO_OPS_FROM_FRONTEND] / total);
                set(&t, PMU_TOPDOWN_BAD_SPECULATION, ((double) delta[PMU_TD_AMD_OP_DISP_ALL] - ret_ops) / total);
                set(&t, PMU_TOPDOWN_BACKEND_BOUND, (double) delta[PMU_TD_AMD_BACKEND_STALLS] / total);
                set(&t, PMU_TOPDOWN_SMT_CONTENTION, (double) delta[PMU_TD_AMD_SMT_CONTENTION] / total);
                set(&t, PMU_TOPDOWN_RETIRING, ret_ops / total);
                break;
        }

        case PMU_TOPDOWN_ARM_MPKI: {
                /* tools/perf/pmu-events/arch/arm64/arm/neoverse-n1/metrics.json (and the V1,
                 * N2/V2, V3 files alike): l1i_cache_mpki = L1I_CACHE_REFILL / INST_RETIRED * 1000,
                 * l1d_cache_mpki, l2_cache_mpki (L2D_CACHE_REFILL), ll_cache_read_mpki
                 * (LL_CACHE_MISS_RD), branch_mpki = BR_MIS_PRED_RETIRED / INST_RETIRED * 1000.
                 * Counts, not fractions: not clamped. */
                double inst = (double) delta[PMU_TD_INST_RETIRED];

                if (inst == 0)
                        break;
                for (size_t i = 0; i < ELEMENTSOF(mpki_events); i++)
                        if (plan_has(p, mpki_events[i].in)) {
                                t.present[mpki_events[i].metric] = true;
                                t.value[mpki_events[i].metric] = (double) delta[mpki_events[i].in] / inst * 1000;
                        }
                break;
        }

        case PMU_TOPDOWN_INTEL_PERF_METRICS: {
                /* tools/perf/pmu-events/arch/x86/sapphirerapids/spr-metrics.json
                 * (and icelakex/icx-metrics.json for level 1):
                 *   tma_retiring = topdown-retiring / (topdown-fe-bound + topdown-bad-spec
                 *                  + topdown-retiring + topdown-be-bound), likewise the other three;
                 *   tma_heavy_operations = topdown-heavy-ops / (same sum),
                 *   tma_light_operations = max(0, tma_retiring - tma_heavy_operations),
                 *   tma_branch_mispredicts = topdown-br-mispredict / (sum),
                 *   tma_machine_clears = max(0, tma_bad_speculation - tma_branch_mispredicts),
                 *   tma_fetch_latency = topdown-fetch-lat / (sum),
                 *   tma_fetch_bandwidth = max(0, tma_frontend_bound - tma_fetch_latency),
                 *   tma_memory_bound = topdown-mem-bound / (sum),
                 *   tma_core_bound = max(0, tma_backend_bound - tma_memory_bound).
                 * The kernel hands each topdown-* event out as its share of
                 * slots (icl_get_topdown_value(), arch/x86/events/intel/core.c). */
                double ret_ = (double) delta[PMU_TD_RETIRING], bad = (double) delta[PMU_TD_BAD_SPEC];
                double fe = (double) delta[PMU_TD_FE_BOUND], be = (double) delta[PMU_TD_BE_BOUND];
                double sum = fe + bad + ret_ + be;

                if (sum == 0)
                        break;
                set(&t, PMU_TOPDOWN_FRONTEND_BOUND, fe / sum);
                set(&t, PMU_TOPDOWN_BAD_SPECULATION, bad / sum);
                set(&t, PMU_TOPDOWN_RETIRING, ret_ / sum);
                set(&t, PMU_TOPDOWN_BACKEND_BOUND, be / sum);
                if (!plan_has(p, PMU_TD_MEM_BOUND))
                        break;
                set(&t, PMU_TOPDOWN_HEAVY_OPERATIONS, (double) delta[PMU_TD_HEAVY_OPS] / sum);
                set(&t, PMU_TOPDOWN_LIGHT_OPERATIONS, ret_ / sum - (double) delta[PMU_TD_HEAVY_OPS] / sum);
                set(&t, PMU_TOPDOWN_BRANCH_MISPREDICTS, (double) delta[PMU_TD_BR_MISPREDICT] / sum);
                set(&t, PMU_TOPDOWN_MACHINE_CLEARS, bad / sum - (double) delta[PMU_TD_BR_MISPREDICT] / sum);
                set(&t, PMU_TOPDOWN_FETCH_LATENCY, (double) delta[PMU_TD_FETCH_LAT] / sum);
                set(&t, PMU_TOPDOWN_FETCH_BANDWIDTH, fe / sum - (double) delta[PMU_TD_FETCH_LAT] / sum);
                set(&t, PMU_TOPDOWN_MEMORY_BOUND, (double) delta[PMU_TD_MEM_BOUND] / sum);
                set(&t, PMU_TOPDOWN_CORE_BOUND, be / sum - (double) delta[PMU_TD_MEM_BOUND] / sum);
                break;
        }
        }
        *ret = t;
}

void pmu_topdown_window_reset(struct pmu_topdown_window *w) {
        *w = (struct pmu_topdown_window) {};
}

int pmu_topdown_window_advance(struct pmu_topdown_window *w, const struct pmu_topdown_plan *p,
                               const uint64_t ids[static _PMU_TD_INPUT_MAX],
                               const struct pmu_group_reading *rd, struct pmu_topdown *ret) {
        uint64_t value[_PMU_TD_INPUT_MAX] = {}, delta[_PMU_TD_INPUT_MAX] = {};
        bool seen[_PMU_TD_INPUT_MAX] = {};
        bool ran;

        if (p->method == PMU_TOPDOWN_NONE || rd->n != p->n)
                return 0;
        for (size_t i = 0; i < rd->n; i++) {
                size_t j;

                for (j = 0; j < p->n; j++)
                        if (ids[j] == rd->id[i])
                                break;
                if (j == p->n || seen[p->in[j]])
                        return 0; /* not this group's read */
                seen[p->in[j]] = true;
                value[p->in[j]] = rd->value[i];
        }

        ran = w->primed && rd->running > w->running;
        for (size_t j = 0; ran && j < p->n; j++) {
                enum pmu_topdown_input in = p->in[j];

                if (value[in] < w->value[in])
                        ran = false; /* went backwards: other fds, start over */
                else
                        delta[in] = value[in] - w->value[in];
        }
        w->primed = true;
        w->running = rd->running;
        memcpy(w->value, value, sizeof(w->value));
        if (!ran)
                return 0;
        pmu_topdown_compute(p, delta, ret);
        return 1;
}
