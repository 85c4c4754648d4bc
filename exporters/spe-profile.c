/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "spe-profile.h"

#include <errno.h>
#include <stdio.h>

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

/*
 * The profile's time_nanos/duration_nanos are the span of the epochs it was
 * built from, as Unix time by the store's clock (its fixed offset, taken
 * once); with a perf clock only (a replay without clock data) they are
 * perf's nanoseconds, which pprof will show as a date near 1970.
 */
static int64_t unix_ns(const struct store_interval *iv, uint64_t t) {
        return (int64_t) t + (iv->clock.kind == STORE_CLOCK_UNIX ? iv->clock.unix_offset_ns : 0);
}

static int build(struct store_hotpcs_result *res, const struct profile_symbolizer *sym, uint64_t period,
                 struct strbuf *ret_gz) {
        struct pprof_builder *b;
        int k = 0;

        /* SPE samples one operation in N: the period is N operations when the source said so. */
        b = pprof_builder_new(sample_types, _VALUE_MAX,
                              period ? &(struct pprof_value_type) { "operations", "count" }
                                     : &(struct pprof_value_type) { "samples", "count" },
                              period ? (int64_t) period : 1, (uint64_t) unix_ns(&res->iv, res->iv.start_ns),
                              res->iv.end_ns - res->iv.start_ns);

        for (size_t i = 0; i < res->pcs.n && k >= 0; i++) {
                const struct hotpcs_item *it = &res->pcs.item[i];
                struct profile_location s = {};
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
                /* Strings: a numeric label of 0 (user code, CPU 0) is lost in proto3 encoding. */
                static const char *const el_names[] = { "el0", "el1", "el2", "el3" };
                uint32_t pid = STORE_SAMPLE_PID(it->key), tid = STORE_SAMPLE_TID(it->key);
                unsigned source = STORE_SAMPLE_SOURCE(it->key);
                struct pprof_label labels[6];
                char cpu[DECIMAL_STR_MAX(unsigned)];
                size_t n = 0;

                snprintf(cpu, sizeof(cpu), "%u", STORE_SAMPLE_CPU(it->key));
                if (pid != STORE_SAMPLE_NO_ID)
                        labels[n++] = (struct pprof_label) { .key = "pid", .num = pid };
                if (tid != STORE_SAMPLE_NO_ID)
                        labels[n++] = (struct pprof_label) { .key = "tid", .num = tid };
                labels[n++] = (struct pprof_label) { .key = "cpu", .str = cpu };
                labels[n++] = (struct pprof_label) { .key = "el", .str = el_names[STORE_SAMPLE_EL(it->key)] };
                labels[n++] = (struct pprof_label) { .key = "op", .str = op_names[STORE_SAMPLE_OP(it->key)] };
                if (source != SPE_DATA_SRC_NONE)
                        labels[n++] = (struct pprof_label) { .key = "source", .str = spe_data_src_name(source) };

                if (sym && sym->locate(sym->userdata, pid, it->pc, &s) && s.has_mapping)
                        mapping = pprof_mapping(b, s.map_start, s.map_limit, s.map_pgoff, s.filename,
                                                s.build_id_hex && s.build_id_hex[0] ? s.build_id_hex : NULL);
                k = pprof_sample(b, it->pc, mapping, s.function, values, labels, n);
        }
        if (k >= 0)
                k = pprof_finish(b, ret_gz);
        pprof_builder_free(b);
        return k < 0 ? k : 0;
}

int profile_build(const struct store_snapshot *snap, uint64_t window_ns, const struct profile_symbolizer *sym,
                  uint64_t period, struct strbuf *ret_gz) {
        struct store_hotpcs_result res;
        int k;

        k = store_query_samples(snap, window_ns, SIZE_MAX, &res);
        if (k < 0)
                return k;
        k = build(&res, sym, period, ret_gz);
        store_hotpcs_result_done(&res);
        return k;
}

int profile_build_span(const struct store_snapshot *snap, uint64_t start_ns, uint64_t end_ns,
                       const struct profile_symbolizer *sym, uint64_t period, struct strbuf *ret_gz) {
        struct store_hotpcs_result res;
        int k;

        k = store_query_samples_span(snap, start_ns, end_ns, SIZE_MAX, &res);
        if (k < 0)
                return k;
        k = build(&res, sym, period, ret_gz);
        store_hotpcs_result_done(&res);
        return k;
}
