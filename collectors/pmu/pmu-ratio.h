/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Derived ratios over the last counting interval (the gauges of ARCHITECTURE.md §7),
 * from scaled deltas. A ratio is present only when both of its events were
 * counted in the interval and the denominator is not zero: never a
 * division by zero, never NaN, never a made-up 0.
 */

#include <stdbool.h>
#include <stdint.h>

#include "pmu-event.h"

enum pmu_ratio_id {
        PMU_RATIO_IPC,       /* instructions / cycles */
        PMU_RATIO_L1D_MISS,  /* L1D refills / L1D accesses */
        PMU_RATIO_LLC_MISS,  /* LL_CACHE_MISS_RD / LL_CACHE_RD */
        PMU_RATIO_DTLB_WALK, /* DTLB walks / L1D TLB accesses */
        _PMU_RATIO_MAX,
};

struct pmu_ratio_def {
        enum pmu_ratio_id id;
        const char *metric;
        const char *help;
        enum pmu_event_id numerator;
        enum pmu_event_id denominator;
};

struct pmu_ratio {
        bool present;
        double value;
};

const struct pmu_ratio_def *pmu_ratio_get(enum pmu_ratio_id id);

/* counted[e] says whether delta[e] is valid for this interval. */
void pmu_ratio_compute(const bool counted[static _PMU_EVENT_MAX],
                       const uint64_t delta[static _PMU_EVENT_MAX],
                       struct pmu_ratio ret[static _PMU_RATIO_MAX]);
