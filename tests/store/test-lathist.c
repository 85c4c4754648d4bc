/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Latency histograms: the bucket table is the Prometheus schema-7 layout,
 * and quantiles stay within 1% of exact nearest-rank quantiles computed
 * from the sorted samples, for several distributions.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "lathist.h"
#include "store-test-util.h"

static size_t nsamples = 1000000;

static void test_buckets(void **state) {
        const struct lathist_bucket *b = lathist_buckets();
        uint32_t next = 1;

        assert_int_equal(b[0].lo, 0);
        assert_int_equal(b[0].hi, 0);
        assert_int_equal(lathist_index(0), 0);
        /* Buckets tile 1..65535 in order, and each value maps to its bucket. */
        for (unsigned i = 1; i < LATHIST_NBUCKETS; i++) {
                double lower = exp2((double) (b[i].native_index - 1) / 128.0);

                assert_int_equal(b[i].lo, next);
                assert_true(b[i].hi >= b[i].lo);
                assert_true(b[i].native_index > b[i - 1].native_index || i == 1);
                /* Independent check of the schema-7 bounds: lower < v <= upper. */
                assert_true((double) b[i].lo > lower);
                assert_true((double) b[i].hi <= b[i].upper * (1 + 1e-12));
                assert_true(fabs(b[i].upper - exp2((double) b[i].native_index / 128.0)) < 1e-9 * b[i].upper);
                /* Relative width within 1% (0.54% for schema 7). */
                assert_true(((double) b[i].hi - (double) b[i].lo) / (double) b[i].lo <= 0.0055);
                for (uint32_t v = b[i].lo; v <= b[i].hi; v++)
                        assert_int_equal(lathist_index(v), i);
                next = b[i].hi + 1;
        }
        assert_int_equal(next, LATHIST_MAX_VALUE + 1);
        assert_int_equal(b[LATHIST_NBUCKETS - 1].native_index, 2048);
}

static int cmp_u16(const void *a, const void *b) {
        return (int) *(const uint16_t *) a - (int) *(const uint16_t *) b;
}

enum dist { D_UNIFORM, D_EXP, D_LOGNORMAL, D_BIMODAL, D_SMALL, D_CONST, D_HEAVY, _D_MAX };
static const char *const dist_names[_D_MAX] = {
        "uniform", "exponential", "lognormal", "bimodal", "small", "constant", "heavy-tail",
};

static uint16_t draw(enum dist d, uint64_t *st) {
        double u = tu_rand01(st), x;

        switch (d) {
        case D_UNIFORM:
                x = 1 + u * 65534;
                break;
        case D_EXP:
                x = -log(1 - u) * 300;
                break;
        case D_LOGNORMAL: {
                double u2 = tu_rand01(st);
                double n = sqrt(-2 * log(1 - u)) * cos(2 * M_PI * u2);
                x = exp(5 + 1.2 * n);
                break;
        }
        case D_BIMODAL:
                x = u < 0.9 ? 4 + tu_rand01(st) * 10 : 300 + tu_rand01(st) * 900;
                break;
        case D_SMALL:
                x = u * 40;
                break;
        case D_CONST:
                x = 1234;
                break;
        default:
                x = 10 / pow(1 - u, 1.5);       /* Pareto-like */
                break;
        }
        if (x > 65535)
                x = 65535;
        return (uint16_t) x;
}

static void test_quantiles(void **state) {
        static const double qs[] = { 0.5, 0.9, 0.99, 0.999, 0.0001, 1.0 };
        uint16_t *v = xmalloc(nsamples * sizeof(uint16_t));
        struct lathist *h = xcalloc(1, sizeof(*h));
        struct lathist_merged *m = xcalloc(1, sizeof(*m));
        uint64_t st = 42;

        (void) lathist_buckets();
        for (int d = 0; d < _D_MAX; d++) {
                double worst = 0;
                uint64_t sum = 0;

                memset(h, 0, sizeof(*h));
                memset(m, 0, sizeof(*m));
                for (size_t i = 0; i < nsamples; i++) {
                        v[i] = draw((enum dist) d, &st);
                        sum += v[i];
                        lathist_add(h, v[i]);
                }
                lathist_merge(m, h);
                assert_int_equal(m->n, nsamples);
                assert_int_equal(m->sum, sum);
                qsort(v, nsamples, sizeof(uint16_t), cmp_u16);
                for (size_t k = 0; k < ELEMENTSOF(qs); k++) {
                        size_t rank = (size_t) ceil(qs[k] * (double) nsamples);
                        double exact, est, rel;

                        if (rank < 1)
                                rank = 1;
                        exact = v[rank - 1];
                        est = lathist_quantile(m, qs[k]);
                        rel = exact == 0 ? fabs(est) : fabs(est - exact) / exact;
                        if (rel > worst)
                                worst = rel;
                        if (rel > 0.01)
                                fail_msg("%s q=%g: exact %g, histogram %g (rel %.4f)",
                                         dist_names[d], qs[k], exact, est, rel);
                }
                printf("lathist %-12s n=%zu worst quantile relative error %.5f%%\n",
                       dist_names[d], nsamples, worst * 100);
        }
        free(v);
        free(h);
        free(m);
}

static void test_empty(void **state) {
        struct lathist_merged *m = xcalloc(1, sizeof(*m));

        assert_true(lathist_quantile(m, 0.5) == 0);
        assert_int_equal(lathist_max(m), 0);
        free(m);
}

/*
 * lathist_max() and the power-of-two buckets against the values themselves:
 * the max is the largest value below 185 and within 0.54% above; each value
 * lands in the coarse bucket whose bound is the smallest power of two not
 * below it (0 and 1 alone), counted by summing the fine buckets as the JSON does.
 */
static void test_max_and_log2(void **state) {
        struct lathist *h = xcalloc(1, sizeof(*h));
        struct lathist_merged *m = xcalloc(1, sizeof(*m));
        uint64_t want[LATHIST_LOG2_BUCKETS] = {}, got[LATHIST_LOG2_BUCKETS] = {};
        const struct lathist_bucket *b = lathist_buckets();
        static const uint16_t values[] = { 0, 1, 2, 3, 4, 5, 7, 8, 9, 184, 185, 1000, 4096, 4097, 65535 };

        for (size_t n = 0; n < ELEMENTSOF(values); n++) {
                uint32_t v = values[n], le = 1;

                memset(h, 0, sizeof(*h));
                memset(m, 0, sizeof(*m));
                lathist_add(h, (uint16_t) v);
                lathist_merge(m, h);
                if (v < 185)
                        assert_int_equal(lathist_max(m), v);
                else
                        assert_true(lathist_max(m) >= v && lathist_max(m) <= v * 1.0054 + 1);
                while (le < v)
                        le *= 2;
                if (v == 0)
                        le = 0;
                assert_int_equal(lathist_log2_le(lathist_log2_bucket(v)), le);
                want[lathist_log2_bucket(v)]++;
        }
        memset(h, 0, sizeof(*h));
        memset(m, 0, sizeof(*m));
        for (size_t n = 0; n < ELEMENTSOF(values); n++)
                lathist_add(h, values[n]);
        lathist_merge(m, h);
        assert_int_equal(lathist_max(m), 65535);
        for (unsigned i = 0; i < LATHIST_NBUCKETS; i++)
                got[lathist_log2_bucket(b[i].hi)] += m->count[i];
        for (unsigned k = 0; k < LATHIST_LOG2_BUCKETS; k++)
                assert_int_equal(got[k], want[k]);
        /* No fine bucket straddles a power of two: its lowest value is in the same coarse bucket. */
        for (unsigned i = 1; i < LATHIST_NBUCKETS; i++)
                assert_int_equal(lathist_log2_bucket(b[i].lo), lathist_log2_bucket(b[i].hi));
        free(h);
        free(m);
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_buckets),
                cmocka_unit_test(test_quantiles),
                cmocka_unit_test(test_empty),
                cmocka_unit_test(test_max_and_log2),
        };

        if (tu_quick(argc, argv))
                nsamples /= 10;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
