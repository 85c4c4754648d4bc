/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Fixed-size open-addressing hash index from a 128-bit key (two u64) to an
 * entry index, for the store's per-record path. Sized once at creation to
 * the next power of two >= KEYTAB_SLOTS_PER_ENTRY x capacity, so the load
 * factor stays <= 1/4
 * and linear probes stay short; nothing allocates after keytab_init().
 * Deletion uses backward-shift (Knuth, TAOCP vol. 3, 6.4 Algorithm R) so no
 * tombstones accumulate under the constant churn of Space-Saving evictions.
 *
 * Internal to store/: header-only so the compiler inlines the probe.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "strbuf.h"

#define KEYTAB_NONE UINT32_MAX
/* Load factor <= 1/4: short probes and short backward-shift runs on the
 * eviction-heavy path, for 32 bytes x 4 per entry. */
#define KEYTAB_SLOTS_PER_ENTRY 4

struct keytab_slot {
        uint64_t a;
        uint64_t b;
        uint32_t idx;           /* KEYTAB_NONE when the slot is empty */
        uint32_t hash;          /* low bits of keytab_hash(a, b): cheap compare, no rehash on removal */
};

struct keytab {
        struct keytab_slot *slot;
        uint32_t mask;
};

static inline uint32_t keytab_slots_for(uint32_t capacity) {
        uint32_t n = 4;

        while (n < KEYTAB_SLOTS_PER_ENTRY * (uint64_t) capacity)
                n <<= 1;
        return n;
}

static inline size_t keytab_bytes(uint32_t capacity) {
        return (size_t) keytab_slots_for(capacity) * sizeof(struct keytab_slot);
}

static inline void keytab_clear(struct keytab *t) {
        for (uint32_t i = 0; i <= t->mask; i++)
                t->slot[i].idx = KEYTAB_NONE;
}

static inline void keytab_init(struct keytab *t, uint32_t capacity) {
        uint32_t n = keytab_slots_for(capacity);

        t->slot = xmalloc((size_t) n * sizeof(struct keytab_slot));
        t->mask = n - 1;
        keytab_clear(t);
}

static inline void keytab_done(struct keytab *t) {
        free(t->slot);
        t->slot = NULL;
}

/* A 64-bit finaliser (MurmurHash3 fmix64) over a multiplicative combination. */
static inline uint64_t keytab_hash(uint64_t a, uint64_t b) {
        uint64_t h = a * UINT64_C(0x9E3779B97F4A7C15) ^ (b + UINT64_C(0x632BE59BD9B4E019));

        h ^= h >> 33;
        h *= UINT64_C(0xFF51AFD7ED558CCD);
        h ^= h >> 33;
        h *= UINT64_C(0xC4CEB9FE1A85EC53);
        h ^= h >> 33;
        return h;
}

/* The slot holding (a, b), or the empty slot where it would go. */
static inline struct keytab_slot *keytab_lookup_h(struct keytab *t, uint64_t a, uint64_t b, uint32_t h) {
        struct keytab_slot *slot = t->slot;
        uint32_t mask = t->mask, i = h & mask;

        for (;;) {
                struct keytab_slot *s = &slot[i];

                if (s->idx == KEYTAB_NONE || (s->hash == h && s->a == a && s->b == b))
                        return s;
                i = (i + 1) & mask;
        }
}

static inline struct keytab_slot *keytab_lookup(struct keytab *t, uint64_t a, uint64_t b) {
        return keytab_lookup_h(t, a, b, (uint32_t) keytab_hash(a, b));
}

/* Start loading the home slot of (a, b): the caller issues this early and
 * does other work while the line comes in (the tables are too big for L1). */
static inline void keytab_prefetch_h(const struct keytab *t, uint32_t h) {
        __builtin_prefetch(&t->slot[h & t->mask]);
}

static inline void keytab_prefetch(const struct keytab *t, uint64_t a, uint64_t b) {
        keytab_prefetch_h(t, (uint32_t) keytab_hash(a, b));
}

/* Fill an empty slot returned by keytab_lookup_h() for (a, b) of hash h. */
static inline void keytab_set_h(struct keytab_slot *s, uint64_t a, uint64_t b, uint32_t idx, uint32_t h) {
        s->a = a;
        s->b = b;
        s->idx = idx;
        s->hash = h;
}

/* Fill an empty slot returned by keytab_lookup(). */
static inline void keytab_set(struct keytab_slot *s, uint64_t a, uint64_t b, uint32_t idx) {
        keytab_set_h(s, a, b, idx, (uint32_t) keytab_hash(a, b));
}

/* Remove (a, b), which must be present, shifting the rest of its cluster back. */
static inline void keytab_remove(struct keytab *t, uint64_t a, uint64_t b) {
        struct keytab_slot *s = keytab_lookup(t, a, b);
        uint32_t hole = (uint32_t) (s - t->slot), i = hole;

        for (;;) {
                uint32_t home;

                i = (i + 1) & t->mask;
                if (t->slot[i].idx == KEYTAB_NONE)
                        break;
                home = t->slot[i].hash & t->mask;
                /* Move slot i into the hole unless its home lies cyclically in (hole, i]. */
                if (((i - home) & t->mask) >= ((i - hole) & t->mask)) {
                        t->slot[hole] = t->slot[i];
                        hole = i;
                }
        }
        t->slot[hole].idx = KEYTAB_NONE;
}
