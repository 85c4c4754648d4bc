/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Hot PCs: a Space-Saving top-K summary per epoch (Metwally, Agrawal,
 * El Abbadi, ICDT 2005), keyed by (pid, pc, el, command): the threads of a
 * process that perf names apart (their comm) are counted apart, as perf
 * report's Command column does, and each entry keeps its command (comm.h).
 *
 * Per epoch with N samples and K counters, every entry's count c satisfies
 * true <= c <= true + error, with error <= min counter <= N/K, and every key
 * whose true count exceeds the minimum counter is present.
 *
 * Breakdowns (op kinds, events, latency sum) count the samples seen while
 * the key was monitored (an entry taken over from an evicted key starts
 * them at zero): they are exact lower bounds, the count is the upper bound.
 *
 * Merging epochs (hotpcs_merge) follows Agarwal, Cormode, Huang, Phillips,
 * Wei, Yi, "Mergeable summaries" (PODS 2012, sec. 2-3): Space-Saving with K
 * counters is Misra-Gries with K-1 counters after subtracting each
 * summary's minimum m_i. For each key x:
 *     U(x) = sum_i (c_i(x) if present in i else m_i)   (upper bound)
 *     L(x) = sum_i (c_i(x) - e_i(x) if present else 0) (lower bound)
 *     g(x) = sum_i (c_i(x) - m_i if present else 0)    (MG counter)
 * and the K keys with the largest g are kept (the MG merge keeps exactly
 * the keys whose g exceeds the (K+1)-th largest, a subset of these). The
 * reported count is U, its error U - L <= sum_i m_i <= N/K; every key with
 * true count > (N - sum_x g(x)) / K has g > 0 and is kept, in particular
 * every key with share > 1/K.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "comm.h"
#include "keytab.h"
#include "spe-pkt.h"
#include "ssum.h"

/* Indexes of the breakdown arrays. */
enum hotpcs_op {
        HOTPCS_OP_LOAD,
        HOTPCS_OP_STORE,        /* stores and atomics with a store */
        HOTPCS_OP_BRANCH,
        HOTPCS_OP_OTHER,        /* other and unknown classes */
        _HOTPCS_OP_MAX,
};

enum hotpcs_ev {
        HOTPCS_EV_L1D_REFILL,
        HOTPCS_EV_LLC_MISS,
        HOTPCS_EV_TLB_WALK,
        HOTPCS_EV_MISPRED,
        _HOTPCS_EV_MAX,
};

struct hotpcs_item {
        uint64_t pc;
        uint32_t pid;
        uint8_t el;
        uint64_t count;                 /* upper bound of the true sample count */
        uint64_t error;                 /* count - error <= true */
        uint64_t ops[_HOTPCS_OP_MAX];
        uint64_t events[_HOTPCS_EV_MAX];
        uint64_t lat_sum;               /* total latency, cycles */
        uint64_t key;                   /* the table's second key word (see below) */
        struct comm comm;               /* the command that ran it (comm.h), as it was then */
};

/*
 * Key layout in the hash: a = pc, b = `key`. The hot-PC table uses
 * b = pid | el << 32 | comm_hash() << 34, of which the command's 30 bits:
 * two commands of one process meet in one entry (the first one's) only
 * when they ran the same PC and their hashes agree, 1 in 2^30 for two.
 * Other tables may key PCs by a richer context word with hotpcs_add_key()
 * (the store's pprof sample table packs pid, tid, cpu, el, op and data
 * source into it); their entries keep the command of the first sample.
 */
#define HOTPCS_EL_SHIFT 32
#define HOTPCS_COMM_SHIFT 34

/* Writer-side table for the current epoch. */
struct hotpcs {
        uint32_t capacity;
        uint32_t n;
        uint64_t total;                 /* samples added this epoch */
        uint64_t evictions;
        struct keytab tab;
        /*
         * Space-Saving counts, built at the first eviction (hotpcs_build()).
         * Until then nothing is evicted and the order the structure keeps
         * (which of the least counts goes first) is not asked for: each
         * entry holds its count in item[i].count and the step of its last
         * update (h->total then) in last[i], from which the build makes the
         * structure that the updates would have made.
         */
        bool built;
        struct ssum ss;
        uint64_t *last;
        uint32_t *order;                /* the build's sort: allocated with the table, not per epoch */
        struct hotpcs_item *item;       /* item[i].count is kept in ss once built */
};

/* Immutable per-epoch result. */
struct hotpcs_summary {
        uint32_t capacity;
        uint32_t n;
        uint64_t total;                 /* N */
        uint64_t min;                   /* min counter if full, else 0 */
        uint64_t evictions;
        struct hotpcs_item item[];      /* table order, not sorted */
};

struct hotpcs *hotpcs_new(uint32_t capacity);
struct hotpcs *hotpcs_free(struct hotpcs *h);
void hotpcs_reset(struct hotpcs *h);
size_t hotpcs_bytes(uint32_t capacity);                 /* writer table */
size_t hotpcs_summary_bytes(uint32_t capacity);         /* largest summary */

/* The hash of a table key (pc, key), computed once per record: the
 * prefetch and the update take it. */
static inline uint32_t hotpcs_hash(uint64_t pc, uint64_t key) {
        return (uint32_t) keytab_hash(pc, key);
}

static inline uint64_t hotpcs_pc_key(uint32_t pid, uint8_t el, uint32_t comm_hash) {
        return pid | (uint64_t) (el & 3) << HOTPCS_EL_SHIFT | (uint64_t) comm_hash << HOTPCS_COMM_SHIFT;
}

static inline void hotpcs_prefetch(const struct hotpcs *h, uint32_t hash) {
        keytab_prefetch_h(&h->tab, hash);
}

/* The breakdown's events of an SPE events word (SPE_EV_BIT()): bit i for HOTPCS_EV i. */
static inline unsigned hotpcs_events(uint64_t ev_bits) {
        return (unsigned) ((ev_bits >> SPE_EV_L1D_REFILL) & 1) << HOTPCS_EV_L1D_REFILL |
                (unsigned) ((ev_bits >> SPE_EV_LLC_MISS) & 1) << HOTPCS_EV_LLC_MISS |
                (unsigned) ((ev_bits >> SPE_EV_TLB_WALK) & 1) << HOTPCS_EV_TLB_WALK |
                (unsigned) ((ev_bits >> SPE_EV_MISPRED) & 1) << HOTPCS_EV_MISPRED;
}

/* The first eviction of the epoch: the Space-Saving structure from the counts and last updates. */
void hotpcs_build(struct hotpcs *h);

/*
 * Count one sample of (pc, b), whose hotpcs_hash() is `hash`, and return
 * its entry: Space-Saving's update (see above); a new entry takes pid, el
 * and comm (NULL: unknown). Inline: the store's per-record path runs it
 * twice.
 */
static inline __attribute__((always_inline)) struct hotpcs_item *hotpcs_count(struct hotpcs *h, uint32_t hash,
                                                                              uint64_t pc, uint64_t b,
                                                                              uint32_t pid, uint8_t el,
                                                                              const struct comm *comm) {
        struct keytab_slot *s = keytab_lookup_h(&h->tab, pc, b, hash);
        struct hotpcs_item *it, *item = h->item;
        uint32_t idx;

        h->total++;
        if (__builtin_expect(s->idx != KEYTAB_NONE, 1)) {
                idx = s->idx;
                if (__builtin_expect(h->built, 1))
                        ssum_inc(&h->ss, idx);
                else {
                        item[idx].count++;
                        h->last[idx] = h->total;
                }
                return &item[idx];
        }
        if (h->n < h->capacity) {
                idx = h->n++;
                keytab_set_h(s, pc, b, idx, hash);
                it = &item[idx];
                memset(it, 0, sizeof(*it));
                /* Not built: a table fills only before its first eviction. */
                it->count = 1;
                h->last[idx] = h->total;
        } else {
                /* Space-Saving: the new key takes over the minimum counter. */
                uint64_t min;

                if (!h->built)
                        hotpcs_build(h);
                min = ssum_min_score(&h->ss);
                idx = ssum_min_idx(&h->ss);
                it = &item[idx];
                keytab_remove(&h->tab, it->pc, it->key);
                keytab_set_h(keytab_lookup_h(&h->tab, pc, b, hash), pc, b, idx, hash);
                memset(it, 0, sizeof(*it));
                it->error = min;
                ssum_inc(&h->ss, idx);
                h->evictions++;
        }
        it->pc = pc;
        it->key = b;
        it->pid = pid;
        it->el = el;
        if (comm)
                it->comm = *comm;
        return it;
}

/* hotpcs_add_key() with the key's hash and the events as hotpcs_events() gives them. */
static inline __attribute__((always_inline)) void hotpcs_add_hashed(struct hotpcs *h, uint32_t hash, uint64_t pc,
                                                                    uint64_t key, uint32_t pid, uint8_t el,
                                                                    const struct comm *comm, enum hotpcs_op op,
                                                                    unsigned events, uint32_t lat) {
        struct hotpcs_item *it = hotpcs_count(h, hash, pc, key, pid, el, comm);

        it->ops[op]++;
        /* Straight-line: most records carry one of the four. */
        it->events[HOTPCS_EV_L1D_REFILL] += (events >> HOTPCS_EV_L1D_REFILL) & 1;
        it->events[HOTPCS_EV_LLC_MISS] += (events >> HOTPCS_EV_LLC_MISS) & 1;
        it->events[HOTPCS_EV_TLB_WALK] += (events >> HOTPCS_EV_TLB_WALK) & 1;
        it->events[HOTPCS_EV_MISPRED] += (events >> HOTPCS_EV_MISPRED) & 1;
        it->lat_sum += lat;
}

void hotpcs_add_key(struct hotpcs *h, uint64_t pc, uint64_t key, uint32_t pid, uint8_t el,
                    const struct comm *comm, enum hotpcs_op op, uint64_t ev_bits, uint32_t lat);

/* One sample of (pid, pc, el) by an unknown command. */
static inline void hotpcs_add(struct hotpcs *h, uint32_t pid, uint64_t pc, uint8_t el,
                              enum hotpcs_op op, uint64_t ev_bits, uint32_t lat) {
        hotpcs_add_key(h, pc, hotpcs_pc_key(pid, el, 0), pid, el, NULL, op, ev_bits, lat);
}

/*
 * One sample of (pid, pc, el, comm) with no breakdown: a sampled pc (the
 * cpu-clock sampler's leaf frame) is no operation, so its op, event and
 * latency counts stay zero and only the count says how hot it is. comm
 * NULL: unknown.
 */
void hotpcs_add_pc(struct hotpcs *h, uint32_t pid, uint64_t pc, uint8_t el, const struct comm *comm);

/* Copy of the epoch's table (allocates; epoch boundary only). */
struct hotpcs_summary *hotpcs_freeze(const struct hotpcs *h);

#define HOTPCS_PID_ANY UINT32_MAX

struct hotpcs_merged {
        uint64_t total;                 /* N over the merged summaries */
        uint32_t capacity;              /* K */
        uint64_t error_bound;           /* sum of the summaries' minimums (<= N/K) */
        uint64_t evictions;
        size_t n;
        struct hotpcs_item *item;       /* sorted by count, descending */
};

/*
 * Merge summaries (any order) and return at most min(limit, K) items of
 * the given pid (HOTPCS_PID_ANY: all). ret->item is allocated; free it with
 * hotpcs_merged_done().
 */
void hotpcs_merge(const struct hotpcs_summary *const *s, size_t n, uint32_t pid,
                  size_t limit, struct hotpcs_merged *ret);
void hotpcs_merged_done(struct hotpcs_merged *m);
