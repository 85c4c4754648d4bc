/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lathist.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>

#include "macro.h"

#define LATHIST_BUCKETS_PER_OCTAVE (1U << LATHIST_SCHEMA)

static struct lathist_bucket buckets[LATHIST_NBUCKETS];
static uint16_t index_table[LATHIST_MAX_VALUE + 1];
const uint16_t *lathist_index_table = index_table;
static pthread_once_t buckets_once = PTHREAD_ONCE_INIT;

/*
 * The values in increasing order, with the native index i moved up while
 * its bound 2^(i/128) is below v: each v gets the smallest i with
 * v <= 2^(i/128), the same exp2() comparisons deciding as ever, with one
 * exp2() per index rather than log2() and two exp2() per value (this ran
 * at every start, before the first record).
 */
static void build(void) {
        unsigned n = 0;
        int32_t i = 0, prev = -1;
        double bound = 1;               /* exp2(i / 128) */

        buckets[0] = (struct lathist_bucket) { .native_index = INT32_MIN, .lo = 0, .hi = 0, .upper = 0 };
        index_table[0] = 0;
        for (uint32_t v = 1; v <= LATHIST_MAX_VALUE; v++) {
                while (bound < (double) v)
                        bound = exp2((double) ++i / LATHIST_BUCKETS_PER_OCTAVE);
                if (i != prev) {
                        n++;
                        if (n >= LATHIST_NBUCKETS)
                                abort();        /* LATHIST_NBUCKETS disagrees with the scheme */
                        buckets[n] = (struct lathist_bucket) {
                                .native_index = i,
                                .lo = v,
                                .upper = bound,
                        };
                        prev = i;
                }
                buckets[n].hi = v;
                index_table[v] = (uint16_t) n;
        }
        if (n + 1 != LATHIST_NBUCKETS)
                abort();
}

const struct lathist_bucket *lathist_buckets(void) {
        pthread_once(&buckets_once, build);
        return buckets;
}

unsigned lathist_index(uint32_t v) {
        (void) lathist_buckets();
        return index_table[MIN(v, LATHIST_MAX_VALUE)];
}

void lathist_merge(struct lathist_merged *m, const struct lathist *h) {
        for (unsigned i = 0; i < LATHIST_NBUCKETS; i++) {
                m->count[i] += h->count[i];
                m->n += h->count[i];
        }
        m->sum += h->sum;
}

void lathist_add_hist(struct lathist *d, const struct lathist *h) {
        for (unsigned i = 0; i < LATHIST_NBUCKETS; i++)
                d->count[i] += h->count[i];
        d->sum += h->sum;
}

uint64_t lathist_total(const struct lathist *h) {
        uint64_t n = 0;

        for (unsigned i = 0; i < LATHIST_NBUCKETS; i++)
                n += h->count[i];
        return n;
}

double lathist_quantile(const struct lathist_merged *m, double q) {
        const struct lathist_bucket *b = lathist_buckets();
        uint64_t rank, cum = 0;

        if (m->n == 0)
                return 0;
        if (!(q > 0))
                q = 0;
        if (q > 1)
                q = 1;
        rank = (uint64_t) ceil(q * (double) m->n);
        if (rank < 1)
                rank = 1;
        for (unsigned i = 0; i < LATHIST_NBUCKETS; i++) {
                cum += m->count[i];
                if (cum >= rank)
                        return ((double) b[i].lo + (double) b[i].hi) / 2;
        }
        return b[LATHIST_NBUCKETS - 1].hi;
}

uint32_t lathist_max(const struct lathist_merged *m) {
        const struct lathist_bucket *b = lathist_buckets();

        for (unsigned i = LATHIST_NBUCKETS; i-- > 0;)
                if (m->count[i])
                        return b[i].hi;
        return 0;
}

unsigned lathist_log2_bucket(uint32_t v) {
        /* 1 + ceil(log2(v)) for v >= 1: the bit length of v - 1, plus one. */
        return v == 0 ? 0 : v == 1 ? 1 : 2 + (unsigned) (31 - __builtin_clz(v - 1));
}

uint32_t lathist_log2_le(unsigned k) {
        return k == 0 ? 0 : UINT32_C(1) << (k - 1);
}
