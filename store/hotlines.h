/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Hot cache lines, the continuous form of `perf c2c report --display peer`
 * (perf-c2c(1), tools/perf/builtin-c2c.c; peer snoops as tools/perf/util/mem-events.c
 * c2c_decode_stats() counts them).
 *
 * Lines are keyed by (line address, pid) with the data VA, or by physical
 * line address alone when PAs are enabled so that sharing across processes
 * shows as one line. The table holds `capacity` lines; each line holds up to
 * `offsets` (offset, pc, el, pid) entries with the CPUs and TIDs seen.
 *
 * Boundedness: both levels are Space-Saving tables (Metwally et al. 2005)
 * over a "hotness" score: 1 per sample, HOTLINES_PEER_WEIGHT per peer-snoop
 * load, so a line that keeps producing peer snoops is not pushed out by a
 * stream of one-off lines (which a plain evict-the-coldest table would do:
 * each newcomer would evict the previous newcomer, the hot line included).
 * A newcomer takes over the least-hot entry, inheriting its score as
 * `error`; its counters start at zero, so they are exact counts of what
 * happened while the line was tracked. Evictions are counted per table.
 *
 * CPUs and TIDs per (offset, pc): a bounded list of the first
 * HOTLINES_CPUS CPU numbers and HOTLINES_TIDS TIDs, plus a flag that more
 * were seen. Two entries are "touched by different CPUs" unless both lists
 * are the same single CPU, which the bounded lists decide exactly.
 *
 * Classes (ARCHITECTURE.md §5), decided on the merged entries of a line:
 *   false_sharing  a store on one CPU and an access by another CPU at another
 *                  offset, and peer snoops on the line (it moved between caches);
 *   true_sharing   the same at the same offset;
 *   written        stores, but no such pair with peer snoops: nothing shows
 *                  the line bouncing (one writer, or no transfer sampled);
 *   read_only      no store at all.
 * False wins over true (a layout change fixes it). So a sharing class always
 * has a store and a peer snoop, and read_only never has a store.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keytab.h"
#include "spe-rec.h"
#include "ssum.h"

#define HOTLINES_CPUS           8
#define HOTLINES_TIDS           8
#define HOTLINES_PEER_WEIGHT    16U
#define HOTLINES_LINE_SIZE_MAX  4096U

/* Classification flags (hotlines_classify). */
#define HOTLINES_F_SHARED       (1U << 0)       /* touched by two or more CPUs */
#define HOTLINES_F_FALSE        (1U << 1)       /* false sharing */
#define HOTLINES_F_TRUE         (1U << 2)       /* true sharing */
#define HOTLINES_F_WRITTEN      (1U << 3)       /* the line has stores */

enum hotlines_class {
        HOTLINES_READ_ONLY = 0,                 /* no store */
        HOTLINES_WRITTEN,                       /* stores, no sharing with peer snoops */
        HOTLINES_TRUE_SHARING,
        HOTLINES_FALSE_SHARING,
        _HOTLINES_CLASS_MAX,
};
/* "read_only", "written", "true_sharing", "false_sharing" */
const char *hotlines_class_name(enum hotlines_class c);

/* One (offset, pc) inside a line. */
struct hotlines_off {
        uint64_t pc;
        uint64_t lat_sum;               /* total latency of the accesses that carry one */
        uint64_t lat_n;                 /* how many do: mean = lat_sum / lat_n */
        uint64_t loads, stores;
        uint64_t peer_local, peer_remote;
        uint32_t pid;
        uint32_t score;                 /* Space-Saving hotness inside the line (set at freeze) */
        uint16_t offset;
        uint8_t el;
        uint8_t ncpus;                  /* valid entries in cpus[] */
        uint8_t ntids;
        uint8_t cpus_more;              /* a CPU was seen that did not fit */
        uint8_t tids_more;
        uint16_t cpus[HOTLINES_CPUS];
        uint32_t tids[HOTLINES_TIDS];
};

struct hotlines_line {
        uint64_t addr;                  /* line address (VA, or PA with by_pa) */
        uint64_t va;                    /* a data VA seen on the line (first) */
        uint32_t pid;                   /* owner (VA keying); with PA keying a pid seen on it */
        uint8_t by_pa;
        uint8_t flags;                  /* HOTLINES_F_* (merged results only) */
        uint16_t noffs;
        uint32_t first_off;             /* summaries: index of its first offset entry */
        uint32_t lat_max;
        uint64_t score;                 /* hotness (Space-Saving count) */
        uint64_t error;                 /* score overestimate bound */
        uint64_t loads, stores;
        uint64_t src[_SPE_DATA_SRC_MAX]; /* loads by data source */
        uint64_t peer_local, peer_remote;
        uint64_t lat_sum;               /* total latency of its loads and stores */
};

/* One access, as store.c hands it over. */
struct hotlines_access {
        uint64_t addr;                  /* VA or PA of the data */
        uint64_t va;
        uint64_t pc;
        uint32_t pid, tid, cpu;
        uint32_t lat;                   /* total latency, 0 without has_lat */
        uint8_t el;
        bool has_lat;
        bool by_pa;
        bool store;
        uint8_t src;                    /* enum spe_data_src (loads) */
        uint8_t peer;                   /* enum spe_peer */
};

struct hotlines {
        uint32_t capacity, offsets, line_size;
        uint32_t n;
        uint64_t records;
        uint64_t evictions, off_evictions;
        struct keytab tab;
        struct ssum ss;                 /* Space-Saving hotness */
        struct hotlines_line *line;
        struct hotlines_off *off;       /* capacity x offsets */
        /* Per (offset, pc) entry, beside the 120-byte entries so that the
         * per-record scan of a line's entries reads one or two cache lines:
         * a 64-bit hash tag of the entry's key and its hotness. */
        uint64_t *offtag;               /* capacity x offsets */
        uint32_t *offscore;             /* capacity x offsets */
};

struct hotlines_summary {
        uint32_t capacity, offsets, line_size;
        uint32_t n, noffs;
        uint64_t records;
        uint64_t min;                   /* least hotness if full, else 0 */
        uint64_t evictions, off_evictions;
        struct hotlines_line *line;     /* point into the same allocation */
        struct hotlines_off *off;
};

/* line_size: power of two in 4..HOTLINES_LINE_SIZE_MAX. NULL on bad sizes. */
struct hotlines *hotlines_new(uint32_t capacity, uint32_t offsets, uint32_t line_size);
struct hotlines *hotlines_free(struct hotlines *h);
void hotlines_reset(struct hotlines *h);
size_t hotlines_bytes(uint32_t capacity, uint32_t offsets);
size_t hotlines_summary_bytes(uint32_t capacity, uint32_t offsets);

/* Key layout in the hash: a = line address, b = pid, or 1 << 32 with PA keying. */
#define HOTLINES_PA_KEY ((uint64_t) 1 << 32)

/* The hash of an access's line key, computed once per record: the prefetch and the update take it. */
static inline uint32_t hotlines_hash(const struct hotlines *h, const struct hotlines_access *a) {
        return (uint32_t) keytab_hash(a->addr & ~(uint64_t) (h->line_size - 1), a->by_pa ? HOTLINES_PA_KEY : a->pid);
}

static inline void hotlines_prefetch(const struct hotlines *h, uint32_t hash) {
        keytab_prefetch_h(&h->tab, hash);
}

void hotlines_add(struct hotlines *h, const struct hotlines_access *a);
/* hotlines_add() with the hotlines_hash() of the access. */
void hotlines_add_hashed(struct hotlines *h, const struct hotlines_access *a, uint32_t hash);

struct hotlines_summary *hotlines_freeze(const struct hotlines *h);

#define HOTLINES_PID_ANY UINT32_MAX

struct hotlines_result {
        struct hotlines_line l;
        enum hotlines_class cls;
        size_t noffs;
        struct hotlines_off *off;       /* sorted by offset, then pc */
};

struct hotlines_merged {
        uint64_t records;               /* loads and stores seen by the tables */
        uint64_t peer_local, peer_remote;       /* over all lines, for percentages */
        uint64_t evictions, off_evictions;
        uint32_t line_size;
        size_t nlines;                  /* distinct lines in the window (of pid; before filter and limit) */
        size_t npeer;                   /* of those, lines with peer snoops */
        size_t n;
        struct hotlines_result *line;   /* ranked: peer snoops, then latency sum */
};

/* Which lines a query lists. */
enum hotlines_which {
        HOTLINES_PEER_LINES,            /* lines with peer snoops: perf c2c's shared lines */
        HOTLINES_ALL_LINES,
};

/*
 * Merge summaries, keep lines of pid (HOTLINES_PID_ANY: all; with PA keying
 * a line matches when any of its entries is that pid) and, unless `which`
 * is HOTLINES_ALL_LINES, with peer snoops (as the Shared Data Cache Line
 * Table of `perf c2c report` does, tools/perf/builtin-c2c.c); classify, rank and return
 * at most limit lines. Free with hotlines_merged_done().
 */
void hotlines_merge(const struct hotlines_summary *const *s, size_t n, uint32_t pid,
                    enum hotlines_which which, size_t limit, struct hotlines_merged *ret);
void hotlines_merged_done(struct hotlines_merged *m);

/* Classify the merged (offset, pc) entries of one line with its store and peer-snoop
 * counts (which count evicted entries too); returns HOTLINES_F_*. */
unsigned hotlines_classify(const struct hotlines_off *off, size_t n, uint64_t stores, uint64_t peer_snoops);
enum hotlines_class hotlines_class_of(unsigned flags);
