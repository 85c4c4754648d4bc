/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "budget.h"

#include <math.h>

#include "macro.h"

void budget_init(struct budget *b, const struct budget_options *o) {
        *b = (struct budget) { .opts = *o, .last_percent = -1 };
}

void budget_set_options(struct budget *b, const struct budget_options *o) {
        b->opts = *o;
        /* No budget: nothing slowed down. */
        if (o->cpu_percent <= 0)
                b->shift = 0;
}

/* The doublings that bring `percent` under `limit`: ceil(log2(percent / limit)), 1 at least. */
static unsigned doublings(double percent, double limit) {
        double d = ceil(log2(percent / limit));

        return d < 1 ? 1 : d > BUDGET_MAX_SHIFT ? BUDGET_MAX_SHIFT : (unsigned) d;
}

bool budget_update(struct budget *b, uint64_t now_ns, uint64_t cpu_ns) {
        unsigned before = b->shift;
        double span, percent;

        if (!b->started || now_ns < b->window_start_ns || cpu_ns < b->window_start_cpu_ns) {
                b->started = true;
                b->window_start_ns = now_ns;
                b->window_start_cpu_ns = cpu_ns;
                return false;
        }
        if (now_ns - b->window_start_ns < b->opts.window_ns || b->opts.n_cpus == 0)
                return false;

        span = (double) (now_ns - b->window_start_ns);
        percent = 100.0 * (double) (cpu_ns - b->window_start_cpu_ns) / span / b->opts.n_cpus;
        b->last_percent = percent;
        b->windows++;
        b->window_start_ns = now_ns;
        b->window_start_cpu_ns = cpu_ns;
        if (b->opts.cpu_percent <= 0)
                return false;

        if (percent > b->opts.cpu_percent)
                b->shift = MIN(b->shift + doublings(percent, b->opts.cpu_percent), (unsigned) BUDGET_MAX_SHIFT);
        else if (b->shift > 0 && 2 * percent < BUDGET_RESTORE_FRACTION * b->opts.cpu_percent)
                b->shift--;
        if (b->shift > before)
                b->raises++;
        else if (b->shift < before)
                b->restores++;
        return b->shift != before;
}
