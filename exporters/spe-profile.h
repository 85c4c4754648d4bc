/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * pprof profiles of sampled operations: the store's PC-by-context table
 * over a window, symbolized, as a gzip-compressed profile.proto (go tool
 * pprof reads it). Sample types: samples/count (the SPE samples), latency
 * /cycles (their total latency), l1d_refills, llc_misses, tlb_walks and
 * mispredicts/count; each sample carries pid, tid, cpu, el, op and (for
 * loads) data source labels, or with PROFILE_LABELS_SERVICE (below) only
 * its service's, for a store that makes a series of each label set.
 *
 * Symbols come through a callback, so this file knows no symbol table:
 * the daemon's symbolizer answers it from its mapping snapshot and ELF
 * cache, on the requesting thread.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pprof.h"
#include "privacy.h"
#include "store.h"
#include "strbuf.h"

/* Where a PC lies. Strings stay valid until the next call of the callback. */
struct profile_location {
        const char *function;           /* NULL when unknown */
        bool has_mapping;               /* false for kernel addresses */
        uint64_t map_start, map_limit;  /* [start, limit) */
        uint64_t map_pgoff;             /* file offset of map_start */
        const char *filename;
        const char *build_id_hex;       /* NULL or "" when none */
        /* The mapping's file was read for symbols: a pc of it without a function has none (pprof's has_functions). */
        bool symbols_read;
        /* Its source lines from DWARF, innermost inlined frame first (pprof_location_lines()); n_lines 0: none. */
        const struct pprof_line *lines;
        size_t n_lines;
};

struct profile_symbolizer {
        /* Fill ret and return true, or return false (and leave ret alone) when pid has no mapping at pc. */
        bool (*locate)(void *userdata, uint32_t pid, uint64_t pc, struct profile_location *ret);
        void *userdata;
        /* Optional (NULL: no service labels in the SPE profile): pid's service, NUL-terminated in
         * buf (AGG_SERVICE_MAX bytes, aggregates.h), and true; false when it has none. The CPU profile has it per stack
         * (store_stack.service). Last, so that positional initializers of the two above stay valid. */
        bool (*service)(void *userdata, uint32_t pid, char *buf, size_t len);
        /* What may be served of PCs (privacy.h); NULL: PRIVACY_POLICY_DEFAULT. A kernel PC it withholds is
         * one location of address 0, no mapping, function PRIVACY_KERNEL, and is not looked up. */
        const struct privacy_policy *privacy;
};

/*
 * Which sample labels a profile carries. A store like Grafana Pyroscope
 * makes a series of every distinct set of sample labels (its
 * pkg/distributor splits a pushed profile by its samples' label sets), so
 * pid, tid, comm or cpu labels would make a series per thread or CPU; for
 * it the profile carries a "service" label only, and only for the services
 * that weigh enough, within a bounded count of them.
 */
enum profile_labels {
        PROFILE_LABELS_ALL,     /* what /debug/pprof serves today: unchanged */
        PROFILE_LABELS_SERVICE, /* only "service", for a store that makes series of sample labels */
};

struct profile_options {
        enum profile_labels labels;
        /* PROFILE_LABELS_SERVICE: a service keeps its label when its samples weigh at least
         * service_min_permille of the profile's total (its default sample type), for the
         * max_services heaviest such; the others' samples carry no label (they stay in the
         * host's total). */
        unsigned service_min_permille;  /* e.g. 10 = 1 % */
        unsigned max_services;          /* e.g. 20 */
        /* When nonzero, time_nanos and duration_nanos of the profile (a replay pushed now). */
        uint64_t time_nanos, duration_nanos;
};

/* For the two builders: a service's weight in a profile, and whether it keeps its label. */
struct profile_service_weight {
        const char *name;       /* not owned; "" for none */
        uint64_t weight;
        bool keep;
};

/*
 * Sorts w by name, merges entries of the same name (summing their weights)
 * and sets keep by o's rule (the total: every entry's weight, unnamed ones
 * too). Returns the entries left.
 */
size_t profile_services_pick(const struct profile_options *o, struct profile_service_weight *w, size_t n);
/* Whether name keeps its label, in w as profile_services_pick() left it. */
bool profile_service_kept(const struct profile_service_weight *w, size_t n, const char *name);

/*
 * `sym` may be NULL (no symbols, PRIVACY_POLICY_DEFAULT). `period`: the SPE sampling interval (one
 * sample every N operations), 0 when unknown. Returns 0 or a negative errno.
 */
int profile_build(const struct store_snapshot *snap, uint64_t window_ns, const struct profile_symbolizer *sym,
                  uint64_t period, struct strbuf *ret_gz);
/* The same of the epochs overlapping [start_ns, end_ns) of the store's clock; time_nanos and
 * duration_nanos say the span those epochs cover. */
int profile_build_span(const struct store_snapshot *snap, uint64_t start_ns, uint64_t end_ns,
                       const struct profile_symbolizer *sym, uint64_t period, struct strbuf *ret_gz);

struct pprof_builder;

/*
 * The builder of profile_build_span()'s profile, for pprof_finish_parts()
 * (free it with pprof_builder_free()). o NULL: PROFILE_LABELS_ALL and the
 * epochs' times, as profile_build_span(). With PROFILE_LABELS_SERVICE the
 * services come from sym->service and weigh by their samples. The builder
 * owns copies of every string. Returns 0 or a negative errno (ret is then
 * untouched).
 */
int profile_builder_span(const struct store_snapshot *snap, uint64_t start_ns, uint64_t end_ns,
                         const struct profile_symbolizer *sym, uint64_t period,
                         const struct profile_options *o, struct pprof_builder **ret);
