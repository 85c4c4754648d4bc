/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "source.h"

#include <stdlib.h>

#include "macro.h"

uint64_t source_clock_perf_ns(const struct source_clock *c, uint64_t cyc) {
        uint64_t quot, rem;

        /* tools/perf/util/tsc.c tsc_to_perf_time(); a shift of 64 or more is no conversion. */
        if (c->time_shift >= 64)
                return cyc;
        if (c->cap_user_time_short)
                cyc = c->time_cycles + ((cyc - c->time_cycles) & c->time_mask);
        quot = cyc >> c->time_shift;
        rem = cyc & ((UINT64_C(1) << c->time_shift) - 1);
        return c->time_zero + quot * c->time_mult + ((rem * c->time_mult) >> c->time_shift);
}

void source_status_done(struct source_status *s) {
        free(s->cpus);
        s->cpus = NULL;
        s->n_cpus = 0;
        free(s->sampler_cpus);
        s->sampler_cpus = NULL;
        s->n_sampler_cpus = 0;
}

const char *source_state_to_string(enum source_state s) {
        static const char *const names[] = {
                [SOURCE_STARTING] = "starting",
                [SOURCE_RUNNING] = "running",
                [SOURCE_DONE] = "done",
                [SOURCE_FAILED] = "failed",
                [SOURCE_OFF] = "off",
                [SOURCE_IDLE] = "idle",
        };

        return (size_t) s < ELEMENTSOF(names) ? names[s] : "unknown";
}
