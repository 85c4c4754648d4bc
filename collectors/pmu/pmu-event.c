/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pmu-event.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>

#include "macro.h"
#include "pmu-sysfs.h"

#define HWC(cache, op, result)                                                       \
        .has_generic = true, .generic_type = PERF_TYPE_HW_CACHE,                     \
        .generic_config = PMU_HW_CACHE_CONFIG(PERF_COUNT_HW_CACHE_##cache,           \
                                              PERF_COUNT_HW_CACHE_OP_##op,           \
                                              PERF_COUNT_HW_CACHE_RESULT_##result)
#define HW(config) .has_generic = true, .generic_type = PERF_TYPE_HARDWARE, .generic_config = (config)
#define SW(config) .has_generic = true, .generic_type = PERF_TYPE_SOFTWARE, .generic_config = (config)

/*
 * Generic equivalents are approximate where the architectures differ, and
 * the HELP text stays with the Arm meaning. Notes:
 * - x86 has no generic "all L1D accesses": the READ access/miss pair is
 *   the closest (perf's own L1-dcache-loads).
 * - On x86 a DTLB read miss is what starts a page walk (Intel maps the
 *   generic DTLB read miss to dtlb_load_misses.miss_causes_a_walk), so it
 *   stands for DTLB_WALK; there is no generic "L1 dTLB refill" distinct
 *   from it, so l1d_tlb_refill has no generic encoding.
 */
static const struct pmu_event_def catalogue[_PMU_EVENT_MAX] = {
        [PMU_EVENT_CYCLES] = {
                .id = PMU_EVENT_CYCLES, .name = "cycles",
                .metric = "armprofd_cpu_cycles_total",
                .help = "CPU cycles (Arm CPU_CYCLES), scaled for multiplexing.",
                .class = PMU_EVENT_CLASS_HARDWARE,
                .arm = { { ARMV8_PMUV3_CPU_CYCLES, "cpu_cycles" } },
                HW(PERF_COUNT_HW_CPU_CYCLES),
        },
        [PMU_EVENT_INSTRUCTIONS] = {
                .id = PMU_EVENT_INSTRUCTIONS, .name = "instructions",
                .metric = "armprofd_instructions_total",
                .help = "Instructions architecturally executed (Arm INST_RETIRED), scaled for multiplexing.",
                .class = PMU_EVENT_CLASS_HARDWARE,
                .arm = { { ARMV8_PMUV3_INST_RETIRED, "inst_retired" } },
                HW(PERF_COUNT_HW_INSTRUCTIONS),
        },
        [PMU_EVENT_L1D_CACHE] = {
                .id = PMU_EVENT_L1D_CACHE, .name = "l1d_cache",
                .metric = "armprofd_l1d_cache_accesses_total",
                .help = "Level 1 data cache accesses (Arm L1D_CACHE), scaled for multiplexing.",
                .class = PMU_EVENT_CLASS_HARDWARE,
                .arm = { { ARMV8_PMUV3_L1D_CACHE, "l1d_cache" } },
                HWC(L1D, READ, ACCESS),
        },
        [PMU_EVENT_L1D_CACHE_REFILL] = {
                .id = PMU_EVENT_L1D_CACHE_REFILL, .name = "l1d_cache_refill",
                .metric = "armprofd_l1d_cache_refills_total",
                .help = "Level 1 data cache refills (Arm L1D_CACHE_REFILL), scaled for multiplexing.",
                .class = PMU_EVENT_CLASS_HARDWARE,
                .arm = { { ARMV8_PMUV3_L1D_CACHE_REFILL, "l1d_cache_refill" } },
                HWC(L1D, READ, MISS),
        },
        [PMU_EVENT_LLC_READ] = {
                .id = PMU_EVENT_LLC_READ, .name = "llc_read",
                .metric = "armprofd_llc_read_accesses_total",
                .help = "Last level cache read accesses (Arm LL_CACHE_RD), scaled for multiplexing.",
                .class = PMU_EVENT_CLASS_HARDWARE,
                .arm = { { ARMV8_PMUV3_LL_CACHE_RD, "ll_cache_rd" } },
                HWC(LL, READ, ACCESS),
        },
        [PMU_EVENT_LLC_READ_MISS] = {
                .id = PMU_EVENT_LLC_READ_MISS, .name = "llc_read_miss",
                .metric = "armprofd_llc_read_misses_total",
                .help = "Last level cache read misses (Arm LL_CACHE_MISS_RD), scaled for multiplexing.",
                .class = PMU_EVENT_CLASS_HARDWARE,
                .arm = { { ARMV8_PMUV3_LL_CACHE_MISS_RD, "ll_cache_miss_rd" } },
                HWC(LL, READ, MISS),
        },
        [PMU_EVENT_L1D_TLB] = {
                .id = PMU_EVENT_L1D_TLB, .name = "l1d_tlb",
                .metric = "armprofd_l1d_tlb_accesses_total",
                .help = "Level 1 data TLB accesses (Arm L1D_TLB), scaled for multiplexing.",
                .class = PMU_EVENT_CLASS_HARDWARE,
                .arm = { { ARMV8_PMUV3_L1D_TLB, "l1d_tlb" } },
                HWC(DTLB, READ, ACCESS),
        },
        [PMU_EVENT_L1D_TLB_REFILL] = {
                .id = PMU_EVENT_L1D_TLB_REFILL, .name = "l1d_tlb_refill",
                .metric = "armprofd_l1d_tlb_refills_total",
                .help = "Level 1 data TLB refills (Arm L1D_TLB_REFILL), scaled for multiplexing.",
                .class = PMU_EVENT_CLASS_HARDWARE,
                .arm = { { ARMV8_PMUV3_L1D_TLB_REFILL, "l1d_tlb_refill" } },
        },
        [PMU_EVENT_DTLB_WALK] = {
                .id = PMU_EVENT_DTLB_WALK, .name = "dtlb_walk",
                .metric = "armprofd_dtlb_walks_total",
                .help = "Data TLB page table walks (Arm DTLB_WALK), scaled for multiplexing.",
                .class = PMU_EVENT_CLASS_HARDWARE,
                .arm = { { ARMV8_PMUV3_DTLB_WALK, "dtlb_walk" } },
                HWC(DTLB, READ, MISS),
        },
        [PMU_EVENT_BRANCH_MISPREDICTS] = {
                .id = PMU_EVENT_BRANCH_MISPREDICTS, .name = "branch_mispredicts",
                .metric = "armprofd_branch_mispredicts_total",
                .help = "Mispredicted branches (Arm BR_MIS_PRED_RETIRED, else BR_MIS_PRED), scaled for multiplexing.",
                .class = PMU_EVENT_CLASS_HARDWARE,
                /* BR_MIS_PRED_RETIRED counts architecturally executed
                 * mispredicts; older cores only have the speculative
                 * BR_MIS_PRED. */
                .arm = { { ARMV8_PMUV3_BR_MIS_PRED_RETIRED, "br_mis_pred_retired" },
                         { ARMV8_PMUV3_BR_MIS_PRED, "br_mis_pred" } },
                HW(PERF_COUNT_HW_BRANCH_MISSES),
        },
        [PMU_EVENT_STALL_FRONTEND] = {
                .id = PMU_EVENT_STALL_FRONTEND, .name = "stall_frontend",
                .metric = "armprofd_stall_frontend_cycles_total",
                .help = "Cycles with no operation issued because of the frontend (Arm STALL_FRONTEND), scaled for multiplexing.",
                .class = PMU_EVENT_CLASS_HARDWARE,
                .arm = { { ARMV8_PMUV3_STALL_FRONTEND, "stall_frontend" } },
                HW(PERF_COUNT_HW_STALLED_CYCLES_FRONTEND),
        },
        [PMU_EVENT_STALL_BACKEND] = {
                .id = PMU_EVENT_STALL_BACKEND, .name = "stall_backend",
                .metric = "armprofd_stall_backend_cycles_total",
                .help = "Cycles with no operation issued because of the backend (Arm STALL_BACKEND), scaled for multiplexing.",
                .class = PMU_EVENT_CLASS_HARDWARE,
                .arm = { { ARMV8_PMUV3_STALL_BACKEND, "stall_backend" } },
                HW(PERF_COUNT_HW_STALLED_CYCLES_BACKEND),
        },
        [PMU_EVENT_CONTEXT_SWITCHES] = {
                .id = PMU_EVENT_CONTEXT_SWITCHES, .name = "context_switches",
                .metric = "armprofd_context_switches_total",
                .help = "Context switches (software event).",
                .class = PMU_EVENT_CLASS_SOFTWARE,
                SW(PERF_COUNT_SW_CONTEXT_SWITCHES),
        },
        [PMU_EVENT_CPU_MIGRATIONS] = {
                .id = PMU_EVENT_CPU_MIGRATIONS, .name = "cpu_migrations",
                .metric = "armprofd_cpu_migrations_total",
                .help = "Task migrations to this CPU (software event).",
                .class = PMU_EVENT_CLASS_SOFTWARE,
                SW(PERF_COUNT_SW_CPU_MIGRATIONS),
        },
        [PMU_EVENT_PAGE_FAULTS] = {
                .id = PMU_EVENT_PAGE_FAULTS, .name = "page_faults",
                .metric = "armprofd_page_faults_total",
                .help = "Page faults, minor and major (software event).",
                .class = PMU_EVENT_CLASS_SOFTWARE,
                SW(PERF_COUNT_SW_PAGE_FAULTS),
        },
};

const struct pmu_event_def *pmu_event_get(enum pmu_event_id id) {
        if (id < 0 || id >= _PMU_EVENT_MAX)
                return NULL;
        return &catalogue[id];
}

int pmu_event_encode(enum pmu_event_id id, const struct pmu_desc *pmu, bool open_unlisted,
                     uint32_t *ret_type, uint64_t *ret_config) {
        const struct pmu_event_def *d = pmu_event_get(id);

        if (!d)
                return -EINVAL;
        if (d->class == PMU_EVENT_CLASS_HARDWARE && pmu && pmu->kind == PMU_KIND_ARM_PMUV3) {
                bool trust = pmu->n_events > 0 && !open_unlisted;

                for (size_t i = 0; i < ELEMENTSOF(d->arm) && d->arm[i].sysfs_name; i++) {
                        if (trust && !pmu_desc_event(pmu, d->arm[i].sysfs_name))
                                continue;
                        *ret_type = pmu->type;
                        *ret_config = d->arm[i].number;
                        return 0;
                }
                return -ENOENT;
        }
        if (!d->has_generic)
                return -EOPNOTSUPP;
        *ret_type = d->generic_type;
        *ret_config = d->generic_config;
        return 0;
}

const char *pmu_event_error_string(int error) {
        switch (error) {
        case -ENOENT:
                return "not implemented by this CPU's PMU (ENOENT)";
        case -EOPNOTSUPP:
                return "not supported by this CPU's PMU (EOPNOTSUPP)";
        default:
                return strerror(-error);
        }
}

const struct pmu_event_def *pmu_event_by_name(const char *name) {
        if (!name)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(catalogue); i++)
                if (streq(catalogue[i].name, name))
                        return &catalogue[i];
        return NULL;
}

int pmu_event_list_parse(const char *const *names, size_t n, const char **bad_name,
                         enum pmu_event_id ret_ids[static _PMU_EVENT_MAX],
                         size_t *ret_n) {
        enum pmu_event_id ids[_PMU_EVENT_MAX];
        bool seen[_PMU_EVENT_MAX] = {};
        size_t k = 0;

        if (n == 0) {
                for (size_t i = 0; i < _PMU_EVENT_MAX; i++)
                        ret_ids[i] = (enum pmu_event_id) i;
                *ret_n = _PMU_EVENT_MAX;
                return 0;
        }
        if (!names)
                return -EINVAL;

        for (size_t i = 0; i < n; i++) {
                const struct pmu_event_def *d = pmu_event_by_name(names[i]);

                if (!d) {
                        if (bad_name)
                                *bad_name = names[i];
                        return -EINVAL;
                }
                if (seen[d->id])
                        continue;
                seen[d->id] = true;
                ids[k++] = d->id;
        }

        memcpy(ret_ids, ids, k * sizeof(ids[0]));
        *ret_n = k;
        return 0;
}
