/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pmu-ratio.h"

#include <stddef.h>

static const struct pmu_ratio_def ratios[_PMU_RATIO_MAX] = {
        [PMU_RATIO_IPC] = {
                .id = PMU_RATIO_IPC,
                .metric = "armprofd_instructions_per_cycle",
                .help = "Instructions per cycle over the last counting interval.",
                .numerator = PMU_EVENT_INSTRUCTIONS,
                .denominator = PMU_EVENT_CYCLES,
        },
        [PMU_RATIO_L1D_MISS] = {
                .id = PMU_RATIO_L1D_MISS,
                .metric = "armprofd_l1d_miss_ratio",
                .help = "L1D cache refills per L1D cache access over the last counting interval.",
                .numerator = PMU_EVENT_L1D_CACHE_REFILL,
                .denominator = PMU_EVENT_L1D_CACHE,
        },
        [PMU_RATIO_LLC_MISS] = {
                .id = PMU_RATIO_LLC_MISS,
                .metric = "armprofd_llc_miss_ratio",
                .help = "Last level cache read misses per read access over the last counting interval.",
                .numerator = PMU_EVENT_LLC_READ_MISS,
                .denominator = PMU_EVENT_LLC_READ,
        },
        [PMU_RATIO_DTLB_WALK] = {
                .id = PMU_RATIO_DTLB_WALK,
                .metric = "armprofd_dtlb_walk_ratio",
                .help = "Data TLB walks per L1D TLB access over the last counting interval.",
                .numerator = PMU_EVENT_DTLB_WALK,
                .denominator = PMU_EVENT_L1D_TLB,
        },
};

const struct pmu_ratio_def *pmu_ratio_get(enum pmu_ratio_id id) {
        if (id < 0 || id >= _PMU_RATIO_MAX)
                return NULL;
        return &ratios[id];
}

void pmu_ratio_compute(const bool counted[static _PMU_EVENT_MAX],
                       const uint64_t delta[static _PMU_EVENT_MAX],
                       struct pmu_ratio ret[static _PMU_RATIO_MAX]) {
        for (size_t i = 0; i < _PMU_RATIO_MAX; i++) {
                const struct pmu_ratio_def *d = &ratios[i];

                if (!counted[d->numerator] || !counted[d->denominator] || delta[d->denominator] == 0) {
                        ret[i] = (struct pmu_ratio) { .present = false };
                        continue;
                }
                ret[i] = (struct pmu_ratio) {
                        .present = true,
                        .value = (double) delta[d->numerator] / (double) delta[d->denominator],
                };
        }
}
