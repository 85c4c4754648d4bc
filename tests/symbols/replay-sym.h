/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Test helper: replay a perf.data through the SPE replay engine, feed its
 * MMAP/MMAP2 records to a symbols object and symbolize every record's PC,
 * counting records per function name; optionally add each record to a pprof
 * builder (one "samples/count" value, labels pid and op).
 */

#include <stddef.h>
#include <stdint.h>

#include "pprof.h"
#include "symbols.h"

/* Function names seen in a test input; the generator has 15. */
#define REPLAY_SYM_MAX_FUNCS    64
/* How unresolved PCs are counted. */
#define REPLAY_SYM_UNKNOWN      "?"

struct replay_sym_stats {
        uint64_t records, with_pc, mappings;
        struct {
                char *name;
                uint64_t count;
        } funcs[REPLAY_SYM_MAX_FUNCS];
        size_t n_funcs;
};

/* 0 or a negative errno (the replay's). b may be NULL. */
int replay_sym_run(const char *perf_data, struct symbols *s, struct pprof_builder *b,
                   struct replay_sym_stats *ret);
uint64_t replay_sym_count(const struct replay_sym_stats *st, const char *name);
void replay_sym_done(struct replay_sym_stats *st);
