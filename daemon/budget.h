/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The CPU budget ([budget] cpu_percent): the collector thread's share of
 * the host's CPUs, measured over a window (a minute by default), held
 * under the budget by sampling less often. The collector's work (decode,
 * attribute, aggregate, unwind) is what the sampling rate drives, so it
 * is what the budget measures; answering requests is not slowed down.
 *
 * At the end of each window: over the budget, the slowdown (a shift: SPE's
 * period << shift, the sampler's frequency >> shift) rises at once by as
 * many doublings as the overshoot needs (log2 of share / budget, rounded
 * up); under BUDGET_RESTORE_FRACTION of the budget even at twice today's
 * rate, it falls one step. A window that saw a change is measured anew.
 * Pure arithmetic on the readings it is given; the collector reads the
 * clocks and applies the shift to its sources.
 */

#include <stdbool.h>
#include <stdint.h>

/* The slowdown stops here: SPE's period x 256, the sampler at 1 Hz. */
#define BUDGET_MAX_SHIFT 8
/* One step back when twice the rate would stay under this part of the budget. */
#define BUDGET_RESTORE_FRACTION 0.75

struct budget_options {
        double cpu_percent;             /* of the host's CPUs; 0: no budget */
        uint64_t window_ns;
        unsigned n_cpus;                /* the host's online CPUs */
};

struct budget {
        struct budget_options opts;
        bool started;
        uint64_t window_start_ns, window_start_cpu_ns;
        unsigned shift;
        double last_percent;            /* the share of the last full window, -1 before one */
        uint64_t windows, raises, restores;
};

void budget_init(struct budget *b, const struct budget_options *o);
/* Options that can change while running: the budget, the window, the CPUs. */
void budget_set_options(struct budget *b, const struct budget_options *o);
/*
 * A reading: the collector's CPU time (ns) at now_ns (monotonic). Returns
 * true when the shift changed (the caller applies b->shift).
 */
bool budget_update(struct budget *b, uint64_t now_ns, uint64_t cpu_ns);
/* Whether sampling is slowed down now. */
static inline bool budget_throttled(const struct budget *b) {
        return b->shift > 0;
}
