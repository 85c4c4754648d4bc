/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "profile.h"

#include <errno.h>
#include <time.h>

#include "macro.h"
#include "pprof.h"

enum {
        VALUE_SAMPLES,
        VALUE_LATENCY,
        VALUE_L1D_REFILLS,
        VALUE_LLC_MISSES,
        VALUE_TLB_WALKS,
        VALUE_MISPREDICTS,
        _VALUE_MAX,
};

static const struct pprof_value_type sample_types[_VALUE_MAX] = {
        [VALUE_SAMPLES] = { "samples", "count" },
        [VALUE_LATENCY] = { "latency", "cycles" },
        [VALUE_L1D_REFILLS] = { "l1d_refills", "count" },
        [VALUE_LLC_MISSES] = { "llc_misses", "count" },
        [VALUE_TLB_WALKS] = { "tlb_walks", "count" },
        [VALUE_MISPREDICTS] = { "mispredicts", "count" },
};

/* The store keeps CLOCK_MONOTONIC times; profiles carry wall-clock ones. */
static uint64_t mono_to_wall_ns(uint64_t mono_ns) {
        struct timespec m, w;
        uint64_t now_mono, now_wall;

        clock_gettime(CLOCK_MONOTONIC, &m);
        clock_gettime(CLOCK_REALTIME, &w);
        now_mono = (uint64_t) m.tv_sec * NSEC_PER_SEC + (uint64_t) m.tv_nsec;
        now_wall = (uint64_t) w.tv_sec * NSEC_PER_SEC + (uint64_t) w.tv_nsec;
        return now_wall - (now_mono - MIN(mono_ns, now_mono));
}

int profile_build(const struct store_snapshot *snap, uint64_t window_ns, struct symbols *sym, uint64_t period,
                  struct strbuf *ret_gz) {
        struct store_hotpcs_result r;
        struct pprof_builder *b;
        int k;

        k = store_query_hotpcs(snap, window_ns, SIZE_MAX, STORE_PID_ANY, &r);
        if (k < 0)
                return k;
        /* SPE samples one operation in N: the period is N operations when the source said so. */
        b = pprof_builder_new(sample_types, _VALUE_MAX,
                              period ? &(struct pprof_value_type) { "operations", "count" }
                                     : &(struct pprof_value_type) { "samples", "count" },
                              period ? (int64_t) period : 1, mono_to_wall_ns(r.iv.start_ns),
                              r.iv.end_ns - r.iv.start_ns);

        for (size_t i = 0; i < r.pcs.n && k >= 0; i++) {
                const struct hotpcs_item *it = &r.pcs.item[i];
                struct symbols_result s = {};
                uint64_t mapping = 0;
                const int64_t values[_VALUE_MAX] = {
                        [VALUE_SAMPLES] = (int64_t) it->count,
                        [VALUE_LATENCY] = (int64_t) it->lat_sum,
                        [VALUE_L1D_REFILLS] = (int64_t) it->events[HOTPCS_EV_L1D_REFILL],
                        [VALUE_LLC_MISSES] = (int64_t) it->events[HOTPCS_EV_LLC_MISS],
                        [VALUE_TLB_WALKS] = (int64_t) it->events[HOTPCS_EV_TLB_WALK],
                        [VALUE_MISPREDICTS] = (int64_t) it->events[HOTPCS_EV_MISPRED],
                };
                static const char *const op_names[_HOTPCS_OP_MAX] = { "load", "store", "branch", "other" };
                /* A string: a numeric label of 0 (user code) is lost in proto3 encoding. */
                static const char *const el_names[] = { "el0", "el1", "el2", "el3" };
                size_t op = 0;

                /* An instruction is one kind of op; the label names the kind its samples had. */
                for (size_t o = 1; o < _HOTPCS_OP_MAX; o++)
                        if (it->ops[o] > it->ops[op])
                                op = o;
                const struct pprof_label labels[] = {
                        { .key = "pid", .num = it->pid },
                        { .key = "el", .str = el_names[it->el & 3] },
                        { .key = "op", .str = op_names[op] },
                };

                if (sym && symbols_lookup(sym, it->pid, it->pc, &s) == 0 && s.has_mapping)
                        mapping = pprof_mapping(b, s.map_start, s.map_limit, s.map_pgoff, s.filename,
                                                s.build_id_hex[0] ? s.build_id_hex : NULL);
                k = pprof_sample(b, it->pc, mapping, s.function, values, labels, ELEMENTSOF(labels));
        }
        if (k >= 0)
                k = pprof_finish(b, ret_gz);
        pprof_builder_free(b);
        store_hotpcs_result_done(&r);
        return k < 0 ? k : 0;
}
