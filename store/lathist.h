/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Latency histograms for 16-bit SPE counters (cycles, 0..65535).
 *
 * Buckets ARE the buckets of a Prometheus native histogram of schema 7
 * (OpenMetrics/Prometheus "sparse exponential" histograms): bucket with
 * native index i holds values v with 2^((i-1)/128) < v <= 2^(i/128), plus
 * the zero bucket for v == 0. Adjacent bounds differ by 2^(1/128) ~ 1.0054,
 * so any value is within 0.54% of its bucket's bounds (<= 1% required).
 * Only the 1268 native buckets that contain at least one integer in
 * 1..65535 are stored ("compact" indexes 1..1268; compact 0 is the zero
 * bucket), so an export to protobuf native histograms is exact: each
 * compact bucket maps to one native index (lathist_buckets()).
 *
 * Counts are u32 in the per-epoch histogram (an epoch sees < 2^32 samples)
 * and u64 in merged results.
 *
 * Export: a Prometheus native histogram is schema 7, zero_threshold 0,
 * zero_count = count[0], and positive buckets at lathist_buckets()[i]
 * .native_index for i >= 1 (indexes between two stored ones are empty:
 * below 185 cycles some schema-7 buckets hold no integer). Classic
 * buckets are exact when each `le` is one of the buckets' `hi` values
 * (values are integers, so le = hi counts everything <= hi).
 */

#include <stdint.h>
#include <stddef.h>

#define LATHIST_SCHEMA          7
#define LATHIST_MAX_VALUE       65535U
#define LATHIST_NBUCKETS        1269U   /* zero bucket + 1268 populated schema-7 buckets */

struct lathist_bucket {
        int32_t native_index;   /* schema-7 index; INT32_MIN for the zero bucket (value 0 only) */
        uint32_t lo, hi;        /* integer values covered: lo..hi inclusive */
        double upper;           /* native upper bound 2^(native_index/128); 0 for the zero bucket */
};

/* Bucket table (LATHIST_NBUCKETS entries), built once, thread-safe. */
const struct lathist_bucket *lathist_buckets(void);

/* Compact bucket index of a value (values above LATHIST_MAX_VALUE clamp). */
unsigned lathist_index(uint32_t v);

/* Per-epoch histogram. */
struct lathist {
        uint64_t sum;
        uint32_t count[LATHIST_NBUCKETS];
};

/* Merged histogram (query results). */
struct lathist_merged {
        uint64_t n;
        uint64_t sum;
        uint64_t count[LATHIST_NBUCKETS];
};

/* Hot path: index lookup through a table built by lathist_buckets(). */
extern const uint16_t *lathist_index_table;

static inline void lathist_add(struct lathist *h, uint16_t v) {
        h->count[lathist_index_table[v]]++;
        h->sum += v;
}

void lathist_merge(struct lathist_merged *m, const struct lathist *h);
/* d += h, both per-epoch histograms (their counts together still below 2^32). */
void lathist_add_hist(struct lathist *d, const struct lathist *h);
uint64_t lathist_total(const struct lathist *h);

/*
 * Nearest-rank quantile (the value of rank ceil(q*n)), estimated as the
 * middle of the integers its bucket covers, so exact below 185 and within
 * 0.27% above. q in [0,1]. Returns 0 for an empty histogram.
 */
double lathist_quantile(const struct lathist_merged *m, double q);

/*
 * The upper bound of the highest non-empty bucket: the largest value seen,
 * exact below 185 cycles and at most 0.54% above it beyond; 0 when empty.
 */
uint32_t lathist_max(const struct lathist_merged *m);

/*
 * Coarse buckets at powers of two, for charts: 0 holds the zero value, k >= 1
 * the values in (2^(k-2), 2^(k-1)] (1 the ones, 17 up to 65536). Each
 * schema-7 bucket lies in one of them, so they are exact sums of the fine ones.
 */
#define LATHIST_LOG2_BUCKETS 18U
unsigned lathist_log2_bucket(uint32_t v);
/* The largest value of coarse bucket k (its "le"): 0, 1, 2, 4, ... 65536. */
uint32_t lathist_log2_le(unsigned k);
