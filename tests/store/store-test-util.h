/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Helpers for the store tests: record builders, a deterministic PRNG, a Zipf
 * sampler, an exact counter (sort + count) used as the independent oracle,
 * and the "--quick" scale switch meson passes under sanitizers.
 */

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spe-pkt.h"
#include "spe-rec.h"
#include "strbuf.h"

/* splitmix64: small, fast, good enough for test streams. */
static inline uint64_t tu_rand(uint64_t *state) {
        uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));

        z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
        return z ^ (z >> 31);
}

static inline double tu_rand01(uint64_t *state) {
        return (double) (tu_rand(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* True when meson asked for a scaled-down run (sanitizer builds). */
static inline bool tu_quick(int argc, char **argv) {
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], "--quick") == 0)
                        return true;
        return false;
}

/* Zipf(s) over ranks 0..m-1 by inverse CDF. */
struct tu_zipf {
        size_t m;
        double *cdf;
};

static inline void tu_zipf_init(struct tu_zipf *z, size_t m, double s) {
        double sum = 0;

        z->m = m;
        z->cdf = xmalloc(m * sizeof(double));
        for (size_t i = 0; i < m; i++) {
                sum += 1.0 / pow((double) (i + 1), s);
                z->cdf[i] = sum;
        }
        for (size_t i = 0; i < m; i++)
                z->cdf[i] /= sum;
}

static inline size_t tu_zipf_next(const struct tu_zipf *z, uint64_t *state) {
        double u = tu_rand01(state);
        size_t lo = 0, hi = z->m - 1;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;

                if (z->cdf[mid] < u)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static inline void tu_zipf_done(struct tu_zipf *z) {
        free(z->cdf);
        z->cdf = NULL;
}

/* Exact counts of u64 keys: sort a copy, then binary-search runs. */
struct tu_exact {
        size_t n;
        uint64_t *key;          /* sorted, with repetitions */
};

static inline int tu_cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static inline void tu_exact_init(struct tu_exact *e, const uint64_t *keys, size_t n) {
        e->n = n;
        e->key = xmalloc((n ? n : 1) * sizeof(uint64_t));
        memcpy(e->key, keys, n * sizeof(uint64_t));
        qsort(e->key, n, sizeof(uint64_t), tu_cmp_u64);
}

static inline uint64_t tu_exact_count(const struct tu_exact *e, uint64_t k) {
        size_t lo = 0, hi = e->n;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (e->key[mid] < k)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        size_t first = lo;
        hi = e->n;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (e->key[mid] <= k)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo - first;
}

static inline void tu_exact_done(struct tu_exact *e) {
        free(e->key);
        e->key = NULL;
}

/* ---- record builders ---- */

static inline struct spe_record tu_rec_base(uint64_t pc, uint32_t cpu) {
        struct spe_record r = {};

        r.present = SPE_REC_PC | SPE_REC_OP;
        r.pc.addr = pc;
        r.pc.el = 0;
        r.cpu = cpu;
        return r;
}

static inline struct spe_record tu_rec_load(uint64_t pc, uint64_t va, uint32_t cpu,
                                            enum spe_data_src src, uint16_t lat) {
        struct spe_record r = tu_rec_base(pc, cpu);

        r.present |= SPE_REC_VA | SPE_REC_SOURCE | SPE_REC_LAT_TOTAL | SPE_REC_LAT_ISSUE | SPE_REC_LAT_XLAT;
        r.va = va;
        r.op_class = SPE_OP_CLASS_LDST;
        r.op_flags = SPE_OPF_LOAD;
        r.source = (uint8_t) src;
        r.lat_total = lat;
        r.lat_issue = (uint16_t) (lat / 2);
        r.lat_xlat = (uint16_t) (lat / 4);
        return r;
}

static inline struct spe_record tu_rec_store(uint64_t pc, uint64_t va, uint32_t cpu, uint16_t lat) {
        struct spe_record r = tu_rec_base(pc, cpu);

        r.present |= SPE_REC_VA | SPE_REC_LAT_TOTAL | SPE_REC_LAT_ISSUE | SPE_REC_LAT_XLAT;
        r.va = va;
        r.op_class = SPE_OP_CLASS_LDST;
        r.op_flags = SPE_OPF_STORE;
        r.lat_total = lat;
        r.lat_issue = (uint16_t) (lat / 2);
        r.lat_xlat = (uint16_t) (lat / 4);
        return r;
}

static inline struct spe_record tu_rec_branch(uint64_t pc, uint32_t cpu, bool mispred, uint16_t lat) {
        struct spe_record r = tu_rec_base(pc, cpu);

        r.present |= SPE_REC_EVENTS | SPE_REC_LAT_TOTAL | SPE_REC_LAT_ISSUE;
        r.op_class = SPE_OP_CLASS_BRANCH;
        r.op_flags = SPE_OPF_BRANCH;
        r.events = SPE_EV_BIT(SPE_EV_RETIRED) | (mispred ? SPE_EV_BIT(SPE_EV_MISPRED) : 0);
        r.lat_total = lat;
        r.lat_issue = (uint16_t) (lat / 2);
        return r;
}

/* Resident set size in bytes (/proc/self/statm field 2). */
static inline size_t tu_rss_bytes(void) {
        FILE *f = fopen("/proc/self/statm", "re");
        unsigned long size = 0, res = 0;

        if (!f)
                return 0;
        if (fscanf(f, "%lu %lu", &size, &res) != 2)
                res = 0;
        fclose(f);
        return (size_t) res * (size_t) sysconf(_SC_PAGESIZE);
}
