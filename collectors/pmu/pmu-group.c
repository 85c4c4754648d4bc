/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pmu-group.h"

#include <errno.h>
#include <string.h>

#include "macro.h"

/* Word positions of the read_format header (see pmu-group.h). */
enum {
        READ_WORD_NR,
        READ_WORD_ENABLED,
        READ_WORD_RUNNING,
};

int pmu_group_plan(const enum pmu_event_id *ids, size_t n, unsigned general_counters,
                   bool cycle_counter, struct pmu_group_plan *ret) {
        struct pmu_group_plan plan = {};
        struct pmu_group_spec sw = { .software = true };
        bool seen[_PMU_EVENT_MAX] = {};
        bool bonus = false;
        size_t n_hw = 0;

        if (n > 0 && !ids)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                const struct pmu_event_def *d = pmu_event_get(ids[i]);

                if (!d || seen[ids[i]])
                        return -EINVAL;
                seen[ids[i]] = true;
                if (d->class == PMU_EVENT_CLASS_HARDWARE)
                        n_hw++;
        }
        if (n_hw > 0 && general_counters == 0)
                return -EINVAL;

        /* Cycles first, on the dedicated counter, in the first group. */
        if (cycle_counter && seen[PMU_EVENT_CYCLES]) {
                struct pmu_group_spec *g = &plan.groups[plan.n_groups++];

                g->ev[g->n++] = PMU_EVENT_CYCLES;
                bonus = true;
        }

        for (size_t i = 0; i < n; i++) {
                const struct pmu_event_def *d = pmu_event_get(ids[i]);
                struct pmu_group_spec *g;
                size_t cap;

                if (d->class == PMU_EVENT_CLASS_SOFTWARE) {
                        sw.ev[sw.n++] = ids[i];
                        continue;
                }
                if (bonus && ids[i] == PMU_EVENT_CYCLES)
                        continue; /* already placed */

                g = plan.n_groups > 0 ? &plan.groups[plan.n_groups - 1] : NULL;
                cap = general_counters;
                if (g && bonus && plan.n_groups == 1)
                        cap++; /* the first group also holds cycles */
                if (!g || g->n >= cap) {
                        g = &plan.groups[plan.n_groups++];
                        g->n = 0;
                }
                g->ev[g->n++] = ids[i];
        }

        if (sw.n > 0)
                plan.groups[plan.n_groups++] = sw;

        *ret = plan;
        return 0;
}

int pmu_group_parse_read(const void *buf, size_t len, struct pmu_group_reading *ret) {
        const size_t word = sizeof(uint64_t);
        struct pmu_group_reading reading = {};
        uint64_t nr;

        if (!buf || len < PMU_GROUP_READ_SIZE(0))
                return -EBADMSG;
        /* The buffer may not be 8-byte aligned (it is the caller's). */
        memcpy(&nr, (const char *) buf + READ_WORD_NR * word, word);
        if (nr > PMU_GROUP_MAX_EVENTS)
                return -E2BIG;
        if (len != PMU_GROUP_READ_SIZE(nr))
                return -EBADMSG;

        memcpy(&reading.enabled, (const char *) buf + READ_WORD_ENABLED * word, word);
        memcpy(&reading.running, (const char *) buf + READ_WORD_RUNNING * word, word);
        reading.n = (size_t) nr;
        for (size_t i = 0; i < reading.n; i++) {
                size_t off = PMU_GROUP_READ_SIZE(i);

                memcpy(&reading.value[i], (const char *) buf + off, word);
                memcpy(&reading.id[i], (const char *) buf + off + word, word);
        }
        *ret = reading;
        return 0;
}

int pmu_group_scale(uint64_t value, uint64_t enabled, uint64_t running, uint64_t *ret) {
        unsigned __int128 v;

        if (running == 0)
                return -ENODATA;
        if (running >= enabled) {
                *ret = value;
                return 0;
        }
        v = (unsigned __int128) value * enabled / running;
        *ret = v > UINT64_MAX ? UINT64_MAX : (uint64_t) v;
        return 0;
}

void pmu_group_time_advance(struct pmu_group_time *t, uint64_t enabled, uint64_t running,
                            uint64_t *ret_d_enabled, uint64_t *ret_d_running) {
        /* The kernel's times only grow for one fd; a smaller value would
         * mean a new fd that we were not told about: count it from zero. */
        uint64_t de = enabled >= t->prev_enabled ? enabled - t->prev_enabled : enabled;
        uint64_t dr = running >= t->prev_running ? running - t->prev_running : running;

        /* running can never exceed enabled within one interval. */
        if (dr > de)
                dr = de;
        t->prev_enabled = enabled;
        t->prev_running = running;
        t->enabled_ns_total += de;
        t->running_ns_total += dr;
        *ret_d_enabled = de;
        *ret_d_running = dr;
}

void pmu_group_time_reopen(struct pmu_group_time *t) {
        t->prev_enabled = 0;
        t->prev_running = 0;
}

void pmu_group_counter_advance(struct pmu_group_counter *c, uint64_t raw, uint64_t d_enabled,
                               uint64_t d_running) {
        uint64_t d_raw = raw >= c->prev_raw ? raw - c->prev_raw : raw;
        uint64_t scaled;

        c->prev_raw = raw;
        if (pmu_group_scale(d_raw, d_enabled, d_running, &scaled) < 0) {
                c->delta = 0;
                c->counted = false;
                return;
        }
        /* Saturate rather than wrap: a Prometheus counter must not go
         * backwards (2^64 events is centuries at GHz rates anyway). */
        c->total = scaled > UINT64_MAX - c->total ? UINT64_MAX : c->total + scaled;
        c->delta = scaled;
        c->counted = true;
}

void pmu_group_counter_reopen(struct pmu_group_counter *c) {
        c->prev_raw = 0;
}
