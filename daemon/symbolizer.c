/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "symbolizer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "log.h"
#include "macro.h"

void symbolizer_init(struct symbolizer *z, const struct symbols_limits *limits) {
        *z = (struct symbolizer) {
                .maps = symbols_maps_new(limits),
                .cache = symbols_cache_new(limits),
                .privacy = PRIVACY_POLICY_DEFAULT,
        };
        pthread_mutex_init(&z->published_lock, NULL);
        pthread_mutex_init(&z->cache_lock, NULL);
}

void symbolizer_done(struct symbolizer *z) {
        z->maps = symbols_maps_free(z->maps);
        z->published = symbols_snapshot_unref(z->published);
        z->cache = symbols_cache_free(z->cache);
        pthread_mutex_destroy(&z->published_lock);
        pthread_mutex_destroy(&z->cache_lock);
}

int symbolizer_add_mapping(struct symbols_maps *maps, const struct source_mapping *m) {
        if (m->data)
                return symbols_maps_add_data(maps, m->pid, m->start, m->len, m->pgoff, m->filename);
        return symbols_maps_add(maps, m->pid, m->start, m->len, m->pgoff, m->filename, m->build_id,
                                m->build_id_len);
}

void symbolizer_mapping(struct symbolizer *z, const struct source_mapping *m) {
        int k = symbolizer_add_mapping(z->maps, m);

        if (k < 0)
                log_debug_errno(k, "symbols: cannot add mapping of %s: %m", m->filename);
}

void symbolizer_publish(struct symbolizer *z) {
        struct symbols_snapshot *snap = symbols_maps_publish(z->maps), *old;

        pthread_mutex_lock(&z->published_lock);
        old = z->published;
        z->published = snap;
        pthread_mutex_unlock(&z->published_lock);
        /* The last reference to an old table may be ours: freed outside the lock. */
        symbols_snapshot_unref(old);
}

struct symbols_snapshot *symbolizer_snapshot(struct symbolizer *z) {
        struct symbols_snapshot *snap;

        pthread_mutex_lock(&z->published_lock);
        snap = symbols_snapshot_ref(z->published);
        pthread_mutex_unlock(&z->published_lock);
        return snap;
}

/* Look pc of pid up in the newest snapshot; name() copies what the caller wants of the result. */
static bool lookup(struct symbolizer *z, uint32_t pid, uint64_t pc,
                   bool (*name)(const struct symbols_result *res, char *buf, size_t len), char *buf, size_t len) {
        _cleanup_(symbols_snapshot_unrefp) struct symbols_snapshot *snap = symbolizer_snapshot(z);
        struct symbols_result res;
        bool found;

        pthread_mutex_lock(&z->cache_lock);
        found = symbols_cache_lookup(z->cache, snap, pid, pc, &res) == 0 && name(&res, buf, len);
        pthread_mutex_unlock(&z->cache_lock);
        return found;
}

static bool result_function(const struct symbols_result *res, char *buf, size_t len) {
        if (!res->function)
                return false;
        snprintf(buf, len, "%s", res->function);
        return true;
}

bool symbolizer_function(struct symbolizer *z, uint32_t pid, uint64_t pc, char *buf, size_t len) {
        return lookup(z, pid, pc, result_function, buf, len);
}

bool symbolizer_object(struct symbolizer *z, uint32_t pid, uint64_t pc, char *buf, size_t len) {
        return lookup(z, pid, pc, symbols_result_object, buf, len);
}

bool symbolizer_source(struct symbolizer *z, uint32_t pid, uint64_t pc, char *buf, size_t len) {
        _cleanup_(symbols_snapshot_unrefp) struct symbols_snapshot *snap = symbolizer_snapshot(z);
        struct symbols_frame frames[SYMBOLS_MAX_FRAMES];
        bool found;
        int n;

        pthread_mutex_lock(&z->cache_lock);
        n = symbols_cache_lines(z->cache, snap, pid, pc, frames, ELEMENTSOF(frames));
        found = n > 0 && frames[0].file && frames[0].line > 0 &&
                snprintf(buf, len, "%s:%" PRIu32, frames[0].file, frames[0].line) < (int) len;
        pthread_mutex_unlock(&z->cache_lock);
        return found;
}

bool symbolizer_data_symbol(struct symbolizer *z, uint32_t pid, uint64_t va, char *buf, size_t len, char *member,
                            size_t member_len) {
        _cleanup_(symbols_snapshot_unrefp) struct symbols_snapshot *snap = symbolizer_snapshot(z);
        struct symbols_data d;
        bool found;

        pthread_mutex_lock(&z->cache_lock);
        found = symbols_cache_data_symbol(z->cache, snap, pid, va, &d) == 0 &&
                snprintf(buf, len, "%s+0x%" PRIx64, d.symbol, d.offset) < (int) len;
        if (found && snprintf(member, member_len, "%s", d.member) >= (int) member_len)
                member[0] = '\0';
        pthread_mutex_unlock(&z->cache_lock);
        return found;
}

bool symbolizer_region(struct symbolizer *z, uint32_t pid, uint64_t va, char *name, size_t name_len,
                       uint64_t *ret_offset) {
        _cleanup_(symbols_snapshot_unrefp) struct symbols_snapshot *snap = symbolizer_snapshot(z);

        /* The snapshot is immutable and no ELF file is read: cache_lock is not needed. */
        return symbols_snapshot_region(snap, pid, va, name, name_len, ret_offset) == 0;
}

void symbolizer_stats(struct symbolizer *z, struct symbols_stats *ret) {
        _cleanup_(symbols_snapshot_unrefp) struct symbols_snapshot *snap = symbolizer_snapshot(z);

        *ret = (struct symbols_stats) {};
        symbols_snapshot_stats(snap, ret);
        /* Not under cache_lock: a profile holds it for its whole build, ELF files read included. */
        symbols_cache_stats(z->cache, ret);
}

bool symbolizer_service(void *userdata, uint32_t pid, char *buf, size_t len) {
        struct symbolizer_locate *l = userdata;

        return l->service && l->service(l->service_userdata, pid, buf, len);
}

bool symbolizer_locate(void *userdata, uint32_t pid, uint64_t pc, struct profile_location *ret) {
        struct symbolizer_locate *l = userdata;

        size_t n = 0;

        /* Lines too: a profile is built off the collector's path, with the cache held (symbolizer.h). */
        if (symbols_cache_lookup_lines(l->cache, l->snap, pid, pc, &l->last, l->frames, ELEMENTSOF(l->frames), &n) < 0)
                return false;
        for (size_t i = 0; i < n; i++)
                l->lines[i] = (struct pprof_line) {
                        /* The outermost frame is the function the symbol table names, as the rest of the profile. */
                        .function = i + 1 == n && l->last.function ? l->last.function : l->frames[i].function,
                        .filename = l->frames[i].file,
                        .line = l->frames[i].line,
                };
        *ret = (struct profile_location) {
                .function = l->last.function,
                .has_mapping = l->last.has_mapping,
                .map_start = l->last.map_start,
                .map_limit = l->last.map_limit,
                .map_pgoff = l->last.map_pgoff,
                .filename = l->last.filename,
                .build_id_hex = l->last.build_id_hex,
                .symbols_read = l->last.symbols_read,
                .lines = n > 0 ? l->lines : NULL,
                .n_lines = n,
        };
        return true;
}

int symbolizer_profile(struct symbolizer *z, const struct store_snapshot *snap, uint64_t window_ns,
                       uint64_t start_ns, uint64_t end_ns, uint64_t period, struct strbuf *ret_gz) {
        _cleanup_(symbols_snapshot_unrefp) struct symbols_snapshot *maps = symbolizer_snapshot(z);
        struct symbolizer_locate l = { .cache = z->cache, .snap = maps };
        const struct profile_symbolizer sym = { symbolizer_locate, &l, .privacy = &z->privacy };
        int k;

        /* Names point into the cache until its next lookup: hold it for the whole profile. */
        pthread_mutex_lock(&z->cache_lock);
        if (window_ns > 0)
                k = profile_build(snap, window_ns, &sym, period, ret_gz);
        else
                k = profile_build_span(snap, start_ns, end_ns, &sym, period, ret_gz);
        pthread_mutex_unlock(&z->cache_lock);
        return k;
}

int symbolizer_cpu_profile(struct symbolizer *z, const struct store_snapshot *snap, uint64_t start_ns,
                           uint64_t end_ns, const char *event, uint64_t period, struct strbuf *ret_gz) {
        struct pprof_builder *b = NULL;
        int k;

        k = symbolizer_cpu_builder(z, snap, start_ns, end_ns, event, period, NULL, &b);
        if (k >= 0)
                k = pprof_finish(b, ret_gz);
        pprof_builder_free(b);
        return k;
}

int symbolizer_cpu_builder(struct symbolizer *z, const struct store_snapshot *snap, uint64_t start_ns,
                           uint64_t end_ns, const char *event, uint64_t period, const struct profile_options *o,
                           struct pprof_builder **ret) {
        _cleanup_(symbols_snapshot_unrefp) struct symbols_snapshot *maps = symbolizer_snapshot(z);
        struct symbolizer_locate l = { .cache = z->cache, .snap = maps };
        const struct profile_symbolizer sym = { .locate = symbolizer_locate, .userdata = &l, .privacy = &z->privacy };
        struct store_stacks_result res;
        int k;

        *ret = NULL;
        k = store_query_stacks_span(snap, start_ns, end_ns, STORE_PID_ANY, NULL, &res);
        if (k < 0)
                return k;
        pthread_mutex_lock(&z->cache_lock);
        k = cpu_profile_builder(&res, &sym, event, period, o, ret);
        pthread_mutex_unlock(&z->cache_lock);
        store_stacks_result_done(&res);
        return k;
}

int symbolizer_spe_builder(struct symbolizer *z, const struct store_snapshot *snap, uint64_t start_ns,
                           uint64_t end_ns, uint64_t period, const struct profile_options *o,
                           bool (*service)(void *userdata, uint32_t pid, char *buf, size_t len),
                           void *service_userdata, struct pprof_builder **ret) {
        _cleanup_(symbols_snapshot_unrefp) struct symbols_snapshot *maps = symbolizer_snapshot(z);
        struct symbolizer_locate l = { .cache = z->cache, .snap = maps, .service = service,
                                       .service_userdata = service_userdata };
        const struct profile_symbolizer sym = {
                .locate = symbolizer_locate,
                .service = service ? symbolizer_service : NULL,
                .userdata = &l,
                .privacy = &z->privacy,
        };
        int k;

        *ret = NULL;
        pthread_mutex_lock(&z->cache_lock);
        k = profile_builder_span(snap, start_ns, end_ns, &sym, period, o, ret);
        pthread_mutex_unlock(&z->cache_lock);
        return k;
}

void symbolizer_bare_names(struct symbolizer *z, const uint64_t *addrs, size_t n, symbolz_found_fn found,
                           void *ctx) {
        _cleanup_(symbols_snapshot_unrefp) struct symbols_snapshot *snap = symbolizer_snapshot(z);
        _cleanup_free_ uint32_t *pids = xcalloc(n ? n : 1, sizeof(*pids));

        symbols_snapshot_owners(snap, addrs, n, pids);
        pthread_mutex_lock(&z->cache_lock);
        for (size_t i = 0; i < n; i++) {
                struct symbols_result res;

                if (privacy_kernel_addr(addrs[i])) {
                        /* Named from kallsyms only (its object set); never the bare SYMBOLS_KERNEL_NAME. */
                        if (z->privacy.kernel_addresses &&
                            symbols_cache_lookup(z->cache, snap, 0, addrs[i], &res) == 0 && res.filename &&
                            res.function)
                                found(ctx, i, res.function);
                        continue;
                }
                if (pids[i] != SYMBOLS_PID_NONE && symbols_cache_lookup(z->cache, snap, pids[i], addrs[i], &res) == 0 &&
                    res.function)
                        found(ctx, i, res.function);
        }
        pthread_mutex_unlock(&z->cache_lock);
}

int symbolizer_load_kallsyms(struct symbolizer *z, const char *path) {
        int k;

        pthread_mutex_lock(&z->cache_lock);
        k = symbols_cache_load_kallsyms(z->cache, path ?: "/proc/kallsyms");
        pthread_mutex_unlock(&z->cache_lock);
        return k;
}

size_t symbolizer_metric_rows(const struct symbols_stats *st, struct prom_counter_row rows[SYMBOLIZER_METRIC_ROWS]) {
        static const char evictions[] = "armprofd_symbols_evictions_total",
                          evictions_help[] = "Entries the bounded symbol cache evicted to stay within its capacity.";
        size_t n = 0;

        rows[n++] = (struct prom_counter_row) { evictions, evictions_help, "table", "processes", st->pid_evictions };
        rows[n++] = (struct prom_counter_row) { evictions, evictions_help, "table", "mappings",
                                                st->mapping_evictions };
        rows[n++] = (struct prom_counter_row) { evictions, evictions_help, "table", "files", st->file_evictions };
        rows[n++] = (struct prom_counter_row) {
                "armprofd_symbols_files_loaded_total", "ELF files read for symbols (again after an eviction).",
                .value = st->files_loaded,
        };
        rows[n++] = (struct prom_counter_row) {
                "armprofd_symbols_file_errors_total", "Files named by mappings that could not be read as ELF.",
                .value = st->file_errors,
        };
        rows[n++] = (struct prom_counter_row) {
                "armprofd_symbols_truncated_total", "Function symbols left out of a file beyond the per-file bound.",
                .value = st->symbols_truncated,
        };
        rows[n++] = (struct prom_counter_row) {
                "armprofd_symbols_build_id_mismatches_total",
                "Mappings whose file on disk is another build than the one sampled, with no copy of theirs: left "
                "unnamed.",
                .value = st->build_id_mismatches,
        };
        rows[n++] = (struct prom_counter_row) {
                "armprofd_symbols_debug_files_total",
                "Mappings of stripped files named through a detached debug file (/usr/lib/debug/.build-id).",
                .value = st->debug_files,
        };
        rows[n++] = (struct prom_counter_row) {
                "armprofd_symbols_build_id_cache_files_total",
                "Mappings whose file on disk is another build, named from perf's copy of their build "
                "(~/.debug/.build-id).",
                .value = st->build_id_cache_files,
        };
        rows[n++] = (struct prom_counter_row) {
                "armprofd_symbols_dwarf_files_loaded_total",
                "Files whose DWARF was read for source lines (again after an eviction from the file cache).",
                .value = st->dwarf_loaded,
        };
        rows[n++] = (struct prom_counter_row) {
                "armprofd_symbols_dwarf_errors_total",
                "Files whose DWARF could not be read (corrupt, truncated, over 512 MiB): no source lines from them.",
                .value = st->dwarf_errors,
        };
        return n;
}
