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
 * `offsets` (offset, pc, el, pid) entries with the CPUs and TIDs seen, as
 * perf c2c groups a line's accesses by offset and code address (its
 * default coalescing, offset,iaddr, and pid): the threads of a process
 * share an entry whatever their names, and the entry keeps the command
 * (comm.h) of the first.
 *
 * Boundedness: both levels are Space-Saving tables (Metwally et al. 2005)
 * over a "hotness" score: 1 per sample, HOTLINES_PEER_WEIGHT per peer-snoop
 * load, so a line that keeps producing peer snoops is not pushed out by a
 * stream of one-off lines (which a plain evict-the-coldest table would do:
 * each newcomer would evict the previous newcomer, the hot line included).
 * A newcomer takes over the least-hot entry, inheriting its score as
 * `error`; its counters start at zero, so they are exact counts of what
 * happened while the line was tracked. Evictions are counted per table.
 * What went untracked is bounded by `error`: a line out of the table has a
 * hotness of at most the table's minimum (Space-Saving's invariant, with
 * weights too), the minimum never falls, and a sample weighs at least 1,
 * so a line's true loads + stores lie in [loads + stores, loads + stores +
 * error] (error 0: exact). A merge keeps it (hotpcs.h's U and L).
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

#include "comm.h"
#include "keytab.h"
#include "macro.h"
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
        uint32_t score;                 /* Space-Saving hotness inside the line (set at freeze; 0 in merged results) */
        uint16_t offset;
        uint8_t el;
        uint8_t ncpus;                  /* valid entries in cpus[] */
        uint8_t ntids;
        uint8_t cpus_more;              /* a CPU was seen that did not fit */
        uint8_t tids_more;
        uint16_t cpus[HOTLINES_CPUS];
        uint32_t tids[HOTLINES_TIDS];
        struct comm comm;               /* the command of its first access's thread, as it was then */
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
        const struct comm *comm;        /* the thread's command (comm.h); NULL unknown */
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
        /* Per (offset, pc) entry, beside the 136-byte entries so that the
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

/* ---- the per-record update, inline: the store runs it for every load and store ---- */

/* Tag key layout: b = offset | el << 16 | pid << 32. */
#define HOTLINES_TAG_EL_SHIFT   16
#define HOTLINES_TAG_PID_SHIFT  32

static inline void hotlines_line_init(struct hotlines_line *l, uint64_t addr, const struct hotlines_access *a) {
        /* Runs on every eviction: plain stores, no rep-stos memset of the whole entry. */
        l->addr = addr;
        l->va = a->va;
        l->pid = a->pid;
        l->by_pa = a->by_pa;
        l->flags = 0;
        l->noffs = 0;
        l->first_off = 0;
        l->lat_max = 0;
        l->score = l->error = 0;
        l->loads = l->stores = 0;
        for (unsigned i = 0; i < _SPE_DATA_SRC_MAX; i++)
                l->src[i] = 0;
        l->peer_local = l->peer_remote = 0;
        l->lat_sum = 0;
}

static inline void hotlines_off_init(struct hotlines_off *o, uint16_t offset, const struct hotlines_access *a) {
        /* Field by field: the cpus[]/tids[] arrays are valid only up to
         * ncpus/ntids and need no clearing (this runs on every eviction). */
        o->pc = a->pc;
        o->lat_sum = o->lat_n = 0;
        o->loads = o->stores = 0;
        o->peer_local = o->peer_remote = 0;
        o->pid = a->pid;
        o->score = 0;
        o->offset = offset;
        o->el = a->el;
        o->ncpus = o->ntids = 0;
        o->cpus_more = o->tids_more = 0;
        if (a->comm)
                o->comm = *a->comm;
        else
                comm_set(&o->comm, NULL);
}

/* Hotness inside a line is u32 (beside 136-byte entries); saturate, never wrap. */
static inline uint32_t hotlines_sat_add32(uint32_t x, uint32_t w) {
        return x > UINT32_MAX - w ? UINT32_MAX : x + w;
}

static inline void hotlines_off_note_cpu(struct hotlines_off *o, uint32_t cpu) {
        uint16_t c = (uint16_t) MIN(cpu, (uint32_t) UINT16_MAX);

        /* Full and already marked "more": nothing left to learn (the common
         * case for busy entries, which would otherwise scan every time). */
        if (o->cpus_more)
                return;
        for (unsigned i = 0; i < o->ncpus; i++)
                if (o->cpus[i] == c)
                        return;
        if (o->ncpus < HOTLINES_CPUS)
                o->cpus[o->ncpus++] = c;
        else
                o->cpus_more = 1;
}

static inline void hotlines_off_note_tid(struct hotlines_off *o, uint32_t tid) {
        if (o->tids_more)
                return;
        for (unsigned i = 0; i < o->ntids; i++)
                if (o->tids[i] == tid)
                        return;
        if (o->ntids < HOTLINES_TIDS)
                o->tids[o->ntids++] = tid;
        else
                o->tids_more = 1;
}

/*
 * The tag of an (offset, pc) entry: a filter before the full compare, so
 * any function of the key will do; a multiply and a xor, not keytab_hash()'s
 * fmix64, since it runs on every record.
 */
static inline uint64_t hotlines_off_tag(uint64_t pc, uint16_t offset, uint8_t el, uint32_t pid) {
        uint64_t ctx = offset | (uint64_t) el << HOTLINES_TAG_EL_SHIFT | (uint64_t) pid << HOTLINES_TAG_PID_SHIFT;

        return pc ^ ctx * UINT64_C(0x9E3779B97F4A7C15);
}

static inline __attribute__((always_inline)) void hotlines_add_hashed(struct hotlines *h, const struct hotlines_access *a,
                                                                      uint32_t hash) {
        uint32_t line_size = h->line_size;
        uint64_t addr = a->addr & ~(uint64_t) (line_size - 1);
        uint64_t b = (a->by_pa ? HOTLINES_PA_KEY : a->pid);
        uint64_t pc = a->pc;
        uint32_t pid = a->pid, lat = a->lat;
        uint8_t el = a->el, peer = a->peer;
        bool store = a->store;
        uint32_t w = peer != SPE_PEER_NONE ? HOTLINES_PEER_WEIGHT : 1;
        uint16_t offset = (uint16_t) (a->addr & (line_size - 1));
        struct keytab_slot *s = keytab_lookup_h(&h->tab, addr, b, hash);
        struct hotlines_line *l;
        struct hotlines_off *o, *offs;
        uint64_t *tags, tag;
        uint32_t *scores, idx, noffs;
        size_t base;

        h->records++;
        if (__builtin_expect(s->idx != KEYTAB_NONE, 1)) {
                idx = s->idx;
                if (w == 1)
                        ssum_inc(&h->ss, idx);
                else
                        ssum_add(&h->ss, idx, w);
        } else if (h->n < h->capacity) {
                idx = h->n++;
                keytab_set_h(s, addr, b, idx, hash);
                hotlines_line_init(&h->line[idx], addr, a);
                ssum_push(&h->ss, idx, w);
        } else {
                uint64_t min = ssum_min_score(&h->ss);

                idx = ssum_min_idx(&h->ss);
                l = &h->line[idx];
                keytab_remove(&h->tab, l->addr,
                              l->by_pa ? HOTLINES_PA_KEY : l->pid);
                keytab_set_h(keytab_lookup_h(&h->tab, addr, b, hash), addr, b, idx, hash);
                hotlines_line_init(l, addr, a);
                l->error = min;
                if (w == 1)
                        ssum_inc(&h->ss, idx);
                else
                        ssum_add(&h->ss, idx, w);
                h->evictions++;
        }

        l = &h->line[idx];
        if (store)
                l->stores++;
        else {
                l->loads++;
                l->src[a->src]++;
        }
        l->peer_local += peer == SPE_PEER_LOCAL;
        l->peer_remote += peer == SPE_PEER_REMOTE;
        l->lat_sum += lat;
        l->lat_max = MAX(l->lat_max, lat);

        /* (offset, pc) entry: a short linear scan over the tags, the list is
         * small and bounded; the full key is compared only on a tag match. */
        base = (size_t) idx * h->offsets;
        offs = &h->off[base];
        tags = &h->offtag[base];
        scores = &h->offscore[base];
        tag = hotlines_off_tag(pc, offset, el, pid);
        noffs = l->noffs;
        o = NULL;
        for (unsigned i = 0; i < noffs; i++)
                if (tags[i] == tag && offs[i].offset == offset && offs[i].pc == pc &&
                    offs[i].pid == pid && offs[i].el == el) {
                        o = &offs[i];
                        scores[i] = hotlines_sat_add32(scores[i], w);
                        break;
                }
        if (!o) {
                unsigned k;

                if (noffs < h->offsets) {
                        k = noffs;
                        l->noffs = (uint16_t) (noffs + 1);
                        scores[k] = w;
                } else {
                        /* Space-Saving inside the line: take over the least hot entry. */
                        uint32_t min = scores[0];

                        k = 0;
                        for (unsigned i = 1; i < noffs; i++) {
                                /* Select without a branch: the order is random. */
                                bool lt = scores[i] < min;

                                k = lt ? i : k;
                                min = lt ? scores[i] : min;
                        }
                        scores[k] = hotlines_sat_add32(scores[k], w);
                        h->off_evictions++;
                }
                o = &offs[k];
                tags[k] = tag;
                hotlines_off_init(o, offset, a);
        }
        if (store)
                o->stores++;
        else
                o->loads++;
        o->peer_local += peer == SPE_PEER_LOCAL;
        o->peer_remote += peer == SPE_PEER_REMOTE;
        o->lat_sum += lat;
        o->lat_n += a->has_lat;
        hotlines_off_note_cpu(o, a->cpu);
        hotlines_off_note_tid(o, a->tid);
}

struct hotlines_summary *hotlines_freeze(const struct hotlines *h);

#define HOTLINES_PID_ANY UINT32_MAX

struct hotlines_result {
        struct hotlines_line l;
        enum hotlines_class cls;
        size_t noffs;
        struct hotlines_off *off;       /* sorted by offset, then pc */
        /*
         * Per off[] entry, the most loads and stores it can have had beyond
         * its own: its true count lies in [loads + stores, loads + stores +
         * off_error[i]] (0: exact). In the same allocation as off (freeing
         * off frees it). See hotlines_merge().
         */
        uint64_t *off_error;
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
 * An (offset, pc) entry's error, as a line's: inside a line the entries are
 * a Space-Saving table too, so an entry that took over the least hot one
 * counts from then and inherits its hotness, and an entry out of a full
 * line's table has had at most the line's least entry hotness while the
 * line was tracked (none when the line's entries never filled: nothing was
 * taken over). Before the line was tracked, the line's own error bounds it.
 * Over a merge: the line's merged error, plus for each epoch the entry was
 * in, its hotness beyond its own weight (what it inherited), and for each
 * epoch its line was in without it, that line's least entry hotness. A
 * sample weighs at least 1, so hotness bounds counts.
 *
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
