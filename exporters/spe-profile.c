/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "spe-profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregates.h"
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

static int service_name_cmp(const void *x, const void *y) {
        const struct profile_service_weight *a = x, *b = y;

        return strcmp(a->name, b->name);
}

/* Heaviest first; equal weights by name, so that the choice does not depend on the input's order. */
static int service_weight_cmp(const void *x, const void *y) {
        const struct profile_service_weight *const *a = x, *const *b = y;

        if ((*a)->weight != (*b)->weight)
                return (*a)->weight > (*b)->weight ? -1 : 1;
        return strcmp((*a)->name, (*b)->name);
}

size_t profile_services_pick(const struct profile_options *o, struct profile_service_weight *w, size_t n) {
        struct profile_service_weight **heavy;
        unsigned __int128 total = 0;
        size_t m = 0, n_heavy = 0;

        if (n == 0)
                return 0;
        qsort(w, n, sizeof(*w), service_name_cmp);
        for (size_t i = 0; i < n; i++) {
                total += w[i].weight;
                if (m > 0 && streq(w[m - 1].name, w[i].name)) {
                        w[m - 1].weight += w[i].weight;
                        continue;
                }
                w[m] = w[i];
                w[m++].keep = false;
        }
        heavy = xcalloc(m, sizeof(*heavy));
        for (size_t i = 0; i < m; i++)
                /* weight / total >= permille / 1000, in integers (128 bits: no overflow). */
                if (w[i].name[0] &&
                    (unsigned __int128) w[i].weight * 1000 >= total * (o ? o->service_min_permille : 0))
                        heavy[n_heavy++] = &w[i];
        qsort(heavy, n_heavy, sizeof(*heavy), service_weight_cmp);
        for (size_t i = 0; i < n_heavy && i < (o ? o->max_services : 0); i++)
                heavy[i]->keep = true;
        free(heavy);
        return m;
}

bool profile_service_kept(const struct profile_service_weight *w, size_t n, const char *name) {
        const struct profile_service_weight key = { .name = name }, *f;

        f = bsearch(&key, w, n, sizeof(*w), service_name_cmp);
        return f && f->keep;
}

/* pid -> service (SPE: asked of the symbolizer once per pid of a build). */
struct pid_service {
        uint32_t pid;
        char *name;             /* "" for none */
};

static int pid_service_cmp(const void *x, const void *y) {
        const struct pid_service *a = x, *b = y;

        return a->pid < b->pid ? -1 : a->pid > b->pid;
}

/*
 * What the table behind the profile left out, for whoever reads it (go tool
 * pprof prints a profile's comments above its reports): the profile's
 * samples come from a Space-Saving table per epoch (store_query_samples(),
 * hotpcs.h), whose counts are upper bounds and whose other values count
 * only while an entry is monitored, as /hotpcs says with its error_bound.
 */
static void add_table_comments(struct pprof_builder *b, const struct store_hotpcs_result *res) {
        struct strbuf c = STRBUF_INIT;

        if (res->pcs.evictions == 0)
                strbuf_printf(&c, "armprofd: no sample left the table (%" PRIu32 " entries an epoch, %zu epochs): "
                                  "every value is exact",
                              res->pcs.capacity, (size_t) res->iv.epochs);
        else
                strbuf_printf(&c, "armprofd: %" PRIu64 " evictions from the table of %" PRIu32 " entries an epoch "
                                  "over %zu epochs: each sample's samples/count is at most %" PRIu64 " over the "
                                  "operations sampled (Space-Saving's error bound), its other values count only "
                                  "since its entry took an evicted one's place, and a context with at most 1/%" PRIu32
                                  " of an epoch's samples may be missing",
                              res->pcs.evictions, res->pcs.capacity, (size_t) res->iv.epochs,
                              res->pcs.error_bound, res->pcs.capacity);
        pprof_add_comment(b, c.buf);
        strbuf_done(&c);
}

/*
 * The builder. With PROFILE_LABELS_SERVICE and a sym->service, each pid's
 * service is asked once; services weigh by their samples (the default
 * sample type).
 */
static int build_builder(struct store_hotpcs_result *res, const struct profile_symbolizer *sym, uint64_t period,
                         const struct profile_options *o, struct pprof_builder **ret) {
        bool service_labels = o && o->labels == PROFILE_LABELS_SERVICE;
        struct pid_service *pids = NULL;
        struct profile_service_weight *services = NULL;
        size_t n_pids = 0, n_services = 0;
        struct pprof_builder *b;
        int k = 0;

        /* SPE samples one operation in N: the period is N operations when the source said so. */
        b = pprof_builder_new(sample_types, _VALUE_MAX,
                              period ? &(struct pprof_value_type) { "operations", "count" }
                                     : &(struct pprof_value_type) { "samples", "count" },
                              period ? (int64_t) period : 1,
                              o && o->time_nanos ? o->time_nanos : (uint64_t) unix_ns(&res->iv, res->iv.start_ns),
                              o && o->duration_nanos ? o->duration_nanos : res->iv.end_ns - res->iv.start_ns);
        add_table_comments(b, res);

        if (service_labels && sym && sym->service && res->pcs.n > 0) {
                pids = xcalloc(res->pcs.n, sizeof(*pids));
                for (size_t i = 0; i < res->pcs.n; i++)
                        pids[i].pid = STORE_SAMPLE_PID(res->pcs.item[i].key);
                qsort(pids, res->pcs.n, sizeof(*pids), pid_service_cmp);
                for (size_t i = 0; i < res->pcs.n; i++) {
                        char buf[AGG_SERVICE_MAX] = "";

                        if (n_pids > 0 && pids[n_pids - 1].pid == pids[i].pid)
                                continue;
                        if (pids[i].pid == STORE_SAMPLE_NO_ID ||
                            !sym->service(sym->userdata, pids[i].pid, buf, sizeof(buf)))
                                buf[0] = '\0';
                        buf[sizeof(buf) - 1] = '\0';
                        pids[n_pids++] = (struct pid_service) { pids[i].pid, xstrdup(buf) };
                }
                services = xcalloc(res->pcs.n, sizeof(*services));
                for (size_t i = 0; i < res->pcs.n; i++) {
                        const struct pid_service key = { .pid = STORE_SAMPLE_PID(res->pcs.item[i].key) };
                        const struct pid_service *f = bsearch(&key, pids, n_pids, sizeof(*pids), pid_service_cmp);

                        services[i] = (struct profile_service_weight) { f->name, res->pcs.item[i].count };
                }
                n_services = profile_services_pick(o, services, res->pcs.n);
        }

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

                if (service_labels) {
                        const struct pid_service key = { .pid = pid }, *f = NULL;

                        if (n_pids > 0)
                                f = bsearch(&key, pids, n_pids, sizeof(*pids), pid_service_cmp);
                        if (f && f->name[0] && profile_service_kept(services, n_services, f->name))
                                labels[n++] = (struct pprof_label) { .key = "service", .str = f->name };
                } else {
                        snprintf(cpu, sizeof(cpu), "%u", STORE_SAMPLE_CPU(it->key));
                        if (pid != STORE_SAMPLE_NO_ID)
                                labels[n++] = (struct pprof_label) { .key = "pid", .num = pid };
                        if (tid != STORE_SAMPLE_NO_ID)
                                labels[n++] = (struct pprof_label) { .key = "tid", .num = tid };
                        labels[n++] = (struct pprof_label) { .key = "cpu", .str = cpu };
                        labels[n++] = (struct pprof_label) { .key = "el", .str = el_names[STORE_SAMPLE_EL(it->key)] };
                        labels[n++] = (struct pprof_label) { .key = "op", .str = op_names[STORE_SAMPLE_OP(it->key)] };
                        if (source != SPE_DATA_SRC_NONE)
                                labels[n++] = (struct pprof_label) {
                                        .key = "source",
                                        .str = spe_data_src_name(source),
                                };
                }

                /* privacy.h: every withheld kernel PC is the one [kernel] location. */
                if (!privacy_pc_shown(sym ? sym->privacy : NULL, STORE_SAMPLE_EL(it->key), it->pc)) {
                        k = pprof_sample(b, 0, 0, PRIVACY_KERNEL, values, labels, n);
                        continue;
                }
                if (sym && sym->locate(sym->userdata, pid, it->pc, &s) && s.has_mapping)
                        mapping = pprof_mapping(b, s.map_start, s.map_limit, s.map_pgoff, s.filename,
                                                s.build_id_hex && s.build_id_hex[0] ? s.build_id_hex : NULL,
                                                s.symbols_read);
                if (s.n_lines > 0)
                        k = pprof_location_lines(b, it->pc, mapping, s.lines, s.n_lines);
                if (k >= 0)
                        k = pprof_sample(b, it->pc, mapping, s.function, values, labels, n);
        }
        for (size_t i = 0; i < n_pids; i++)
                free(pids[i].name);
        free(pids);
        free(services);
        if (k < 0) {
                pprof_builder_free(b);
                return k;
        }
        *ret = b;
        return 0;
}

static int build(struct store_hotpcs_result *res, const struct profile_symbolizer *sym, uint64_t period,
                 struct strbuf *ret_gz) {
        struct pprof_builder *b = NULL;
        int k;

        k = build_builder(res, sym, period, NULL, &b);
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

int profile_builder_span(const struct store_snapshot *snap, uint64_t start_ns, uint64_t end_ns,
                         const struct profile_symbolizer *sym, uint64_t period,
                         const struct profile_options *o, struct pprof_builder **ret) {
        struct store_hotpcs_result res;
        int k;

        if (!ret)
                return -EINVAL;
        k = store_query_samples_span(snap, start_ns, end_ns, SIZE_MAX, &res);
        if (k < 0)
                return k;
        k = build_builder(&res, sym, period, o, ret);
        store_hotpcs_result_done(&res);
        return k;
}
