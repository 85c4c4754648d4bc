/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The daemon's symbols: where the sources' mappings enter the symbol table
 * and where readers look PCs up, so that the collector never waits on an
 * ELF file.
 *
 *  - The collector thread adds mappings (symbolizer_mapping(), the
 *    daemon's source_sink.mapping callback; --once and the tests feed
 *    their own table through symbolizer_add_mapping(), the one copy of that
 *    glue) and, at each epoch end, publishes the table as an immutable
 *    snapshot (symbolizer_publish()). `published_lock` is held for a
 *    pointer swap only, never while a file is read.
 *  - Readers (HTTP threads) take the newest snapshot and look up under
 *    `cache_lock`, the ELF cache's own lock: a profile holds it for its
 *    whole build (its function names point into the cache), and the
 *    collector never takes it. The counters (symbolizer_stats()) are read
 *    without it.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pprof.h"
#include "prom.h"
#include "cpu-profile.h"
#include "spe-profile.h"
#include "symbolz.h"
#include "source.h"
#include "symbols.h"

struct symbolizer {
        struct symbols_maps *maps;              /* collector thread only */

        pthread_mutex_t published_lock;         /* guards published */
        struct symbols_snapshot *published;     /* NULL before the first publish */

        pthread_mutex_t cache_lock;             /* guards cache */
        struct symbols_cache *cache;

        /* What the profiles may say of addresses (privacy.h); PRIVACY_POLICY_DEFAULT from symbolizer_init(),
         * set before any reader runs and never changed after ([privacy] takes effect at a restart). */
        struct privacy_policy privacy;
};

void symbolizer_init(struct symbolizer *z, const struct symbols_limits *limits);
void symbolizer_done(struct symbolizer *z);

/* A source's mapping into a table (the one copy of that glue): 0 or -EINVAL (symbols_maps_add()). */
int symbolizer_add_mapping(struct symbols_maps *maps, const struct source_mapping *m);

/* Collector thread: a mapping a source reported (logged at debug level when it is refused). */
void symbolizer_mapping(struct symbolizer *z, const struct source_mapping *m);
/* Collector thread: readers see the mappings added so far. */
void symbolizer_publish(struct symbolizer *z);

/* Any thread: a reference to the newest published snapshot (NULL before the first). */
struct symbols_snapshot *symbolizer_snapshot(struct symbolizer *z);

/*
 * Readers. `function`: the function pc of pid lies in; `object`: the file
 * mapped there (SYMBOLS_KERNEL_NAME for kernel addresses); copied into buf,
 * false when unknown.
 */
bool symbolizer_function(struct symbolizer *z, uint32_t pid, uint64_t pc, char *buf, size_t len);
bool symbolizer_object(struct symbolizer *z, uint32_t pid, uint64_t pc, char *buf, size_t len);
/*
 * `source`: pc's source file and line from DWARF, "FILE:LINE" (perf c2c's
 * Source:Line: the innermost inlined frame's), copied into buf; false when
 * unknown. Reads DWARF under cache_lock: a request's thread, never the
 * collector's.
 */
bool symbolizer_source(struct symbolizer *z, uint32_t pid, uint64_t pc, char *buf, size_t len);
/*
 * `data_symbol`: the variable at data address va, "SYMBOL+0xOFFSET" (perf
 * c2c's Data Symbol; symbols_cache_data_symbol()), and in member the member
 * there from its DWARF type ("" when unknown).
 */
bool symbolizer_data_symbol(struct symbolizer *z, uint32_t pid, uint64_t va, char *buf, size_t len, char *member,
                            size_t member_len);
/* The mapping that holds data address va of pid, in the newest snapshot (privacy_region_fn; no ELF file read). */
bool symbolizer_region(struct symbolizer *z, uint32_t pid, uint64_t va, char *name, size_t name_len,
                       uint64_t *ret_offset);
/*
 * Both halves' counters: the published table's and the cache's. Any thread;
 * takes published_lock for a reference only, never cache_lock, so /metrics
 * does not wait while a profile is built.
 */
void symbolizer_stats(struct symbolizer *z, struct symbols_stats *ret);

/*
 * A profile (spe-profile.h) symbolized from the newest snapshot, with the
 * cache locked for the build: window_ns > 0 for the newest window, else
 * the epochs overlapping [start_ns, end_ns).
 */
int symbolizer_profile(struct symbolizer *z, const struct store_snapshot *snap, uint64_t window_ns,
                       uint64_t start_ns, uint64_t end_ns, uint64_t period, struct strbuf *ret_gz);

/*
 * The CPU profile (cpu-profile.h) of the sampler's stacks in the epochs
 * overlapping [start_ns, end_ns), symbolized likewise. event NULL: a clock
 * event, period the sampling interval in ns (1e9 / frequency); else the
 * event's name and period (0: the samples' mean), cpu_profile_build_event().
 */
int symbolizer_cpu_profile(struct symbolizer *z, const struct store_snapshot *snap, uint64_t start_ns,
                           uint64_t end_ns, const char *event, uint64_t period, struct strbuf *ret_gz);

/*
 * The same two profiles as builders (a push splits them into parts the
 * store takes, pprof_finish_parts()), with the labels and times `o` asks
 * for. The SPE builder names each sample's service through `service` (NULL:
 * none). A span without samples gives a builder of an empty profile.
 * symbolizer_cpu_profile() is the CPU builder, finished.
 */
int symbolizer_cpu_builder(struct symbolizer *z, const struct store_snapshot *snap, uint64_t start_ns,
                           uint64_t end_ns, const char *event, uint64_t period, const struct profile_options *o,
                           struct pprof_builder **ret);
int symbolizer_spe_builder(struct symbolizer *z, const struct store_snapshot *snap, uint64_t start_ns,
                           uint64_t end_ns, uint64_t period, const struct profile_options *o,
                           bool (*service)(void *userdata, uint32_t pid, char *buf, size_t len),
                           void *service_userdata, struct pprof_builder **ret);

/*
 * Names of addresses that come without a process (/debug/pprof/symbol,
 * symbolz_names_fn): addrs ascending and distinct. A user address is named
 * when, in the newest snapshot, every process that maps it maps the same
 * file at the same offset there (symbols_snapshot_owners()) and that file's
 * symbols name it; a kernel address only when [privacy] kernel_addresses
 * lets kernel addresses be served and kallsyms names it. The cache is
 * locked for the whole call.
 */
void symbolizer_bare_names(struct symbolizer *z, const uint64_t *addrs, size_t n, symbolz_found_fn found,
                           void *ctx);

/*
 * Kernel addresses named from kallsyms (path NULL: /proc/kallsyms) from
 * now on: 0, or -EPERM when it shows no real addresses (kptr_restrict),
 * another negative errno when it cannot be read. Only when kernel
 * addresses may leave the host ([privacy] kernel_addresses).
 */
int symbolizer_load_kallsyms(struct symbolizer *z, const char *path);

/* A profile_symbolizer over a snapshot and a cache whose lock the caller holds. */
struct symbolizer_locate {
        struct symbols_cache *cache;
        const struct symbols_snapshot *snap;
        struct symbols_result last;     /* what the strings of the last answer point into */
        struct symbols_frame frames[SYMBOLS_MAX_FRAMES];        /* the last answer's source lines */
        struct pprof_line lines[SYMBOLS_MAX_FRAMES];
        /* The service a pid runs in (profile_symbolizer.service), NULL: none. */
        bool (*service)(void *userdata, uint32_t pid, char *buf, size_t len);
        void *service_userdata;
};
bool symbolizer_locate(void *userdata, uint32_t pid, uint64_t pc, struct profile_location *ret);
bool symbolizer_service(void *userdata, uint32_t pid, char *buf, size_t len);

/* The symbol cache's counters as /metrics families (prom_write_counter_rows()). */
#define SYMBOLIZER_METRIC_ROWS 11
size_t symbolizer_metric_rows(const struct symbols_stats *st, struct prom_counter_row rows[SYMBOLIZER_METRIC_ROWS]);
