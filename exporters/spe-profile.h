/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * pprof profiles of sampled operations: the store's PC-by-context table
 * over a window, symbolized, as a gzip-compressed profile.proto (go tool
 * pprof reads it). Sample types: samples/count (the SPE samples), latency
 * /cycles (their total latency), l1d_refills, llc_misses, tlb_walks and
 * mispredicts/count; each sample carries pid, tid, cpu, el, op and (for
 * loads) data source labels.
 *
 * Symbols come through a callback, so this file knows no symbol table:
 * the daemon's symbolizer answers it from its mapping snapshot and ELF
 * cache, on the requesting thread.
 */

#include <stdbool.h>
#include <stdint.h>

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
};

struct profile_symbolizer {
        /* Fill ret and return true, or return false (and leave ret alone) when pid has no mapping at pc. */
        bool (*locate)(void *userdata, uint32_t pid, uint64_t pc, struct profile_location *ret);
        void *userdata;
};

/*
 * `sym` may be NULL (no symbols). `period`: the SPE sampling interval (one
 * sample every N operations), 0 when unknown. Returns 0 or a negative errno.
 */
int profile_build(const struct store_snapshot *snap, uint64_t window_ns, const struct profile_symbolizer *sym,
                  uint64_t period, struct strbuf *ret_gz);
/* The same of the epochs overlapping [start_ns, end_ns) of the store's clock; time_nanos and
 * duration_nanos say the span those epochs cover. */
int profile_build_span(const struct store_snapshot *snap, uint64_t start_ns, uint64_t end_ns,
                       const struct profile_symbolizer *sym, uint64_t period, struct strbuf *ret_gz);
