/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The stream-summary structure of Space-Saving (Metwally, Agrawal,
 * El Abbadi, "Efficient computation of frequent and top-k elements in data
 * streams", ICDT 2005, sec. 3.1): entries with equal counts share a
 * bucket; buckets form a list in increasing count order, so the minimum is
 * the head and a unit increment moves one entry to the neighbouring bucket
 * in O(1), with no comparisons chains (a binary heap spends log K
 * unpredictable compares on every Space-Saving takeover, because the new
 * entry, at min + 1, sinks below all the other minimum-count entries).
 *
 * Weighted increments (hot lines weigh peer snoops more) walk forward at
 * most w buckets, since counts in the list are distinct integers.
 *
 * Index-based (u32 entry and bucket numbers, SSUM_NIL for none), sized at
 * init, no allocation afterwards. Internal to store/, header-only so
 * the per-record path inlines it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "strbuf.h"

#define SSUM_NIL UINT32_MAX

struct ssum_bucket {
        uint64_t count;
        uint32_t first;                 /* an entry of this bucket */
        uint32_t next, prev;            /* neighbouring buckets: higher, lower count */
        uint32_t _pad;
};

struct ssum {
        struct ssum_bucket *b;          /* capacity + 1: a new bucket is taken before the old one frees */
        uint32_t *eb;                   /* entry -> its bucket */
        uint32_t *en, *ep;              /* entry list inside a bucket */
        uint32_t head;                  /* lowest count */
        uint32_t free;                  /* free buckets, chained by next */
        uint32_t capacity;
        uint32_t n;
};

static inline size_t ssum_bytes(uint32_t capacity) {
        return ((size_t) capacity + 1) * sizeof(struct ssum_bucket) + 3 * (size_t) capacity * sizeof(uint32_t);
}

static inline void ssum_reset(struct ssum *s) {
        for (uint32_t i = 0; i <= s->capacity; i++)
                s->b[i].next = i < s->capacity ? i + 1 : SSUM_NIL;
        s->free = 0;
        s->head = SSUM_NIL;
        s->n = 0;
}

static inline void ssum_init(struct ssum *s, uint32_t capacity) {
        s->capacity = capacity;
        s->b = xmalloc(((size_t) capacity + 1) * sizeof(struct ssum_bucket));
        s->eb = xmalloc((size_t) capacity * sizeof(uint32_t));
        s->en = xmalloc((size_t) capacity * sizeof(uint32_t));
        s->ep = xmalloc((size_t) capacity * sizeof(uint32_t));
        ssum_reset(s);
}

static inline void ssum_done(struct ssum *s) {
        free(s->b);
        free(s->eb);
        free(s->en);
        free(s->ep);
        s->b = NULL;
        s->eb = s->en = s->ep = NULL;
}

/* A new bucket of the given count right after bucket `after` (SSUM_NIL: at the head). */
static inline uint32_t ssum_bucket_new(struct ssum *s, uint32_t after, uint64_t count) {
        struct ssum_bucket *b = s->b;
        uint32_t k = s->free;
        struct ssum_bucket *nb = &b[k];

        s->free = nb->next;
        nb->count = count;
        nb->first = SSUM_NIL;
        nb->prev = after;
        if (after == SSUM_NIL) {
                nb->next = s->head;
                s->head = k;
        } else {
                nb->next = b[after].next;
                b[after].next = k;
        }
        if (nb->next != SSUM_NIL)
                b[nb->next].prev = k;
        return k;
}

static inline void ssum_bucket_free(struct ssum *s, uint32_t k) {
        struct ssum_bucket *b = s->b, *ob = &b[k];

        if (ob->prev == SSUM_NIL)
                s->head = ob->next;
        else
                b[ob->prev].next = ob->next;
        if (ob->next != SSUM_NIL)
                b[ob->next].prev = ob->prev;
        ob->next = s->free;
        s->free = k;
}

static inline void ssum_attach(struct ssum *s, uint32_t e, uint32_t k) {
        /* Locals: with -fno-strict-aliasing every store through a u32
         * would make the compiler load s->b, s->en... again. */
        struct ssum_bucket *b = s->b;
        uint32_t *en = s->en, *ep = s->ep, f = b[k].first;

        en[e] = f;
        ep[e] = SSUM_NIL;
        if (f != SSUM_NIL)
                ep[f] = e;
        b[k].first = e;
        s->eb[e] = k;
}

static inline void ssum_detach(struct ssum *s, uint32_t e) {
        uint32_t *en = s->en, *ep = s->ep, next = en[e], prev = ep[e];

        if (prev != SSUM_NIL)
                en[prev] = next;
        else
                s->b[s->eb[e]].first = next;
        if (next != SSUM_NIL)
                ep[next] = prev;
}

/* Place entry e (new, n < capacity) with count w. */
static inline void ssum_push(struct ssum *s, uint32_t e, uint64_t w) {
        uint32_t t = SSUM_NIL, cur = s->head;

        while (cur != SSUM_NIL && s->b[cur].count <= w) {
                t = cur;
                cur = s->b[cur].next;
        }
        if (t == SSUM_NIL || s->b[t].count != w)
                t = ssum_bucket_new(s, t, w);
        ssum_attach(s, e, t);
        s->n++;
}

/* count(e) += w */
static inline void ssum_add(struct ssum *s, uint32_t e, uint64_t w) {
        uint32_t k = s->eb[e], t;
        uint64_t c = s->b[k].count + w;

        /* Alone in its bucket and no bucket in the way: bump in place (the
         * common case for heavy entries, whose counts are unique). */
        if (s->b[k].first == e && s->en[e] == SSUM_NIL &&
            (s->b[k].next == SSUM_NIL || s->b[s->b[k].next].count > c)) {
                s->b[k].count = c;
                return;
        }
        t = k;
        while (s->b[t].next != SSUM_NIL && s->b[s->b[t].next].count <= c)
                t = s->b[t].next;
        if (s->b[t].count != c)
                t = ssum_bucket_new(s, t, c);
        ssum_detach(s, e);
        if (s->b[k].first == SSUM_NIL)
                ssum_bucket_free(s, k);
        ssum_attach(s, e, t);
}

/*
 * count(e) += 1, ssum_add()'s unit step without its walk: the next bucket
 * is the only one that can hold count + 1. The same moves in the same
 * order, so the same entry order inside every bucket (ssum_min_idx()).
 */
static inline __attribute__((always_inline)) void ssum_inc(struct ssum *s, uint32_t e) {
        struct ssum_bucket *b = s->b;
        uint32_t k = s->eb[e], nk = b[k].next, t;
        uint64_t c = b[k].count + 1;
        bool alone = b[k].first == e && s->en[e] == SSUM_NIL;

        if (nk != SSUM_NIL && b[nk].count == c)
                t = nk;
        else if (alone) {
                b[k].count = c;
                return;
        } else
                t = ssum_bucket_new(s, k, c);
        ssum_detach(s, e);
        if (alone)
                ssum_bucket_free(s, k);
        ssum_attach(s, e, t);
}

static inline uint64_t ssum_score(const struct ssum *s, uint32_t e) {
        return s->b[s->eb[e]].count;
}

static inline uint64_t ssum_min_score(const struct ssum *s) {
        return s->n ? s->b[s->head].count : 0;
}

/* An entry with the minimum count: the Space-Saving victim. */
static inline uint32_t ssum_min_idx(const struct ssum *s) {
        return s->b[s->head].first;
}
