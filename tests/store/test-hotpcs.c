/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Hot PCs (Space-Saving and its merge) against exact counts of the same
 * streams: recall of every key with share >= 1/K, counts within
 * true <= count <= true + error, error <= N/K, for one epoch and merged
 * epochs, on Zipf and adversarial streams.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "hotpcs.h"
#include "store-test-util.h"

#define PC_BASE         UINT64_C(0x400000)
#define PC_STRIDE       4
#define NPIDS           3

static size_t scale = 1;        /* divides stream lengths under sanitizers */

static uint64_t pc_of(uint64_t key) {
        return PC_BASE + key * PC_STRIDE;
}

static uint32_t pid_of(uint64_t pc) {
        return (uint32_t) ((pc / PC_STRIDE) % NPIDS) + 100;
}

/* Check one merged/frozen result against the exact counts. */
static void check(const char *name, const struct hotpcs_item *item, size_t n, bool sorted,
                  const uint64_t *pcs, size_t N, uint32_t K, uint64_t error_bound, uint32_t pid) {
        struct tu_exact ex;
        uint64_t *distinct;
        size_t nd = 0, heavy = 0, found = 0;
        double n_over_k = (double) N / K;

        tu_exact_init(&ex, pcs, N);
        assert_true(error_bound <= N / K + 1);
        for (size_t i = 0; i < n; i++) {
                uint64_t t = tu_exact_count(&ex, item[i].pc);

                if (pid != HOTPCS_PID_ANY)
                        assert_int_equal(item[i].pid, pid);
                assert_int_equal(item[i].pid, pid_of(item[i].pc));
                if (!(t <= item[i].count && item[i].count <= t + item[i].error))
                        fail_msg("%s: pc %#lx true %lu count %lu error %lu", name,
                                 (unsigned long) item[i].pc, (unsigned long) t,
                                 (unsigned long) item[i].count, (unsigned long) item[i].error);
                assert_true((double) item[i].error <= n_over_k);
                assert_true(item[i].error <= error_bound);
                if (sorted && i > 0)
                        assert_true(item[i - 1].count >= item[i].count);
        }

        /* Recall: every key with true share >= 1/K is reported. */
        distinct = xmalloc(N * sizeof(uint64_t));
        for (size_t i = 0; i < ex.n; i++)
                if (i == 0 || ex.key[i] != ex.key[i - 1])
                        distinct[nd++] = ex.key[i];
        for (size_t d = 0; d < nd; d++) {
                uint64_t t = tu_exact_count(&ex, distinct[d]);
                bool present = false;

                if ((double) t < n_over_k)
                        continue;
                if (pid != HOTPCS_PID_ANY && pid_of(distinct[d]) != pid)
                        continue;
                heavy++;
                for (size_t i = 0; i < n; i++)
                        if (item[i].pc == distinct[d]) {
                                present = true;
                                break;
                        }
                if (!present)
                        fail_msg("%s: heavy pc %#lx (true %lu >= N/K %.1f) missing", name,
                                 (unsigned long) distinct[d], (unsigned long) t, n_over_k);
                found++;
        }
        printf("hotpcs %-28s N=%zu K=%u items=%zu heavy(>=N/K)=%zu recall=%.1f%% error_bound=%lu (N/K=%.1f)\n",
               name, N, K, n, heavy, heavy ? 100.0 * found / heavy : 100.0,
               (unsigned long) error_bound, n_over_k);
        free(distinct);
        tu_exact_done(&ex);
}

static void feed(struct hotpcs *h, const uint64_t *pcs, size_t n) {
        for (size_t i = 0; i < n; i++)
                hotpcs_add(h, pid_of(pcs[i]), pcs[i], 0, HOTPCS_OP_LOAD, 0, 1);
}

static void run_single(const char *name, const uint64_t *pcs, size_t N, uint32_t K) {
        struct hotpcs *h = hotpcs_new(K);
        struct hotpcs_summary *s;
        const struct hotpcs_summary *v[1];
        struct hotpcs_merged m;

        feed(h, pcs, N);
        s = hotpcs_freeze(h);
        assert_int_equal(s->total, N);
        check(name, s->item, s->n, false, pcs, N, K, s->min, HOTPCS_PID_ANY);

        /* The one-summary "merge" reports the same counts. */
        v[0] = s;
        hotpcs_merge(v, 1, HOTPCS_PID_ANY, SIZE_MAX, &m);
        assert_int_equal(m.n, s->n);
        check(name, m.item, m.n, true, pcs, N, K, m.error_bound, HOTPCS_PID_ANY);
        hotpcs_merged_done(&m);
        free(s);
        hotpcs_free(h);
}

static uint64_t *zipf_stream(size_t N, size_t keys, double sk, uint64_t seed, uint64_t perm) {
        struct tu_zipf z;
        uint64_t *pcs = xmalloc(N * sizeof(uint64_t)), st = seed;

        tu_zipf_init(&z, keys, sk);
        for (size_t i = 0; i < N; i++) {
                uint64_t r = tu_zipf_next(&z, &st);
                /* perm rotates which key is heavy, so epochs differ. */
                pcs[i] = pc_of((r * 7919 + perm) % keys);
        }
        tu_zipf_done(&z);
        return pcs;
}

/* Heavy keys just above 1/K each, interleaved with one-off keys. */
static uint64_t *adversarial_stream(size_t N, uint32_t K, size_t nheavy, uint64_t seed, uint64_t oneoff_base) {
        uint64_t *pcs = xmalloc(N * sizeof(uint64_t)), st = seed, next = oneoff_base;
        size_t per = (size_t) ((double) N / K * 1.05) + 1;
        size_t heavy_total = per * nheavy, h = 0;

        assert_true(heavy_total < N);
        for (size_t i = 0; i < N; i++) {
                /* Spread the heavy samples evenly: hardest for an evict-the-coldest table. */
                if (h < heavy_total && (uint64_t) i * heavy_total / N >= h) {
                        pcs[i] = pc_of(h % nheavy);
                        h++;
                } else
                        pcs[i] = pc_of(next++);
        }
        /* Shuffle a little so heavy keys are not in lock-step. */
        for (size_t i = N - 1; i > 0; i--) {
                size_t j = i - (tu_rand(&st) % MIN(i + 1, (size_t) 64));
                uint64_t t = pcs[i];
                pcs[i] = pcs[j];
                pcs[j] = t;
        }
        return pcs;
}

static void test_single_zipf(void **state) {
        size_t N = 2000000 / scale;
        uint64_t *pcs = zipf_stream(N, 200000, 1.1, 1, 0);

        run_single("single zipf s=1.1", pcs, N, 256);
        free(pcs);
        pcs = zipf_stream(N, 50000, 0.8, 2, 0);
        run_single("single zipf s=0.8", pcs, N, 1024);
        free(pcs);
}

static void test_single_adversarial(void **state) {
        size_t N = 1000000 / scale;
        uint32_t K = 128;
        uint64_t *pcs = adversarial_stream(N, K, 60, 3, 1000);

        run_single("single adversarial", pcs, N, K);
        free(pcs);
}

static void run_merge(bool all_adversarial) {
        const size_t epochs = 8;
        size_t per = 400000 / scale, N = per * epochs;
        uint32_t K = 256;
        uint64_t *all = xmalloc(N * sizeof(uint64_t));
        struct hotpcs_summary *s[8];
        struct hotpcs *h = hotpcs_new(K);
        struct hotpcs_merged m;

        for (size_t e = 0; e < epochs; e++) {
                uint64_t *pcs;

                /* Alternate Zipf epochs (rotated heavy keys) and adversarial ones. */
                if (all_adversarial)
                        pcs = adversarial_stream(per, K, 60, 30 + e, 1000000 + e * per);
                else if (e % 2 == 0)
                        pcs = zipf_stream(per, 100000, 1.05, 10 + e, e * 13);
                else
                        pcs = adversarial_stream(per, K, 40, 20 + e, 1000000 + e * per);
                memcpy(&all[e * per], pcs, per * sizeof(uint64_t));
                hotpcs_reset(h);
                feed(h, pcs, per);
                s[e] = hotpcs_freeze(h);
                free(pcs);
        }

        hotpcs_merge((const struct hotpcs_summary *const *) s, epochs, HOTPCS_PID_ANY, SIZE_MAX, &m);
        assert_int_equal(m.total, N);
        assert_true(m.n <= K);
        check(all_adversarial ? "merged 8 adversarial epochs" : "merged 8 mixed epochs", m.item, m.n, true, all, N, K, m.error_bound, HOTPCS_PID_ANY);
        hotpcs_merged_done(&m);

        /* pid filter: only that pid's keys, its heavy keys all there. */
        for (uint32_t p = 100; p < 100 + NPIDS; p++) {
                uint64_t *sub = xmalloc(N * sizeof(uint64_t));
                size_t ns = 0;
                char name[64];

                for (size_t i = 0; i < N; i++)
                        if (pid_of(all[i]) == p)
                                sub[ns++] = all[i];
                hotpcs_merge((const struct hotpcs_summary *const *) s, epochs, p, SIZE_MAX, &m);
                /* Recall against N/K of the whole stream (the bound is global). */
                for (size_t i = 0; i < m.n; i++)
                        assert_int_equal(m.item[i].pid, p);
                snprintf(name, sizeof(name), "merged pid %u", p);
                check(name, m.item, m.n, true, all, N, K, m.error_bound, p);
                hotpcs_merged_done(&m);
                free(sub);
        }

        for (size_t e = 0; e < epochs; e++)
                free(s[e]);
        hotpcs_free(h);
        free(all);
}

static void test_merge(void **state) {
        run_merge(false);
        run_merge(true);
}

static void test_breakdown_exact(void **state) {
        /* Fewer keys than counters: everything is exact. */
        struct hotpcs *h = hotpcs_new(64);
        struct hotpcs_summary *s;
        uint64_t st = 5, exp_ops[32][_HOTPCS_OP_MAX] = {}, exp_ev[32][_HOTPCS_EV_MAX] = {}, exp_lat[32] = {}, exp_n[32] = {};
        const unsigned evbits[_HOTPCS_EV_MAX] = { SPE_EV_L1D_REFILL, SPE_EV_LLC_MISS, SPE_EV_TLB_WALK, SPE_EV_MISPRED };

        for (int i = 0; i < 100000; i++) {
                unsigned k = (unsigned) (tu_rand(&st) % 32);
                enum hotpcs_op op = (enum hotpcs_op) (tu_rand(&st) % _HOTPCS_OP_MAX);
                uint64_t ev = tu_rand(&st) & (SPE_EV_BIT(SPE_EV_L1D_REFILL) | SPE_EV_BIT(SPE_EV_LLC_MISS) |
                                              SPE_EV_BIT(SPE_EV_TLB_WALK) | SPE_EV_BIT(SPE_EV_MISPRED) |
                                              SPE_EV_BIT(SPE_EV_RETIRED));
                uint32_t lat = (uint32_t) (tu_rand(&st) % 1000);

                hotpcs_add(h, 7, pc_of(k), 0, op, ev, lat);
                exp_n[k]++;
                exp_ops[k][op]++;
                for (unsigned e = 0; e < _HOTPCS_EV_MAX; e++)
                        exp_ev[k][e] += (ev >> evbits[e]) & 1;
                exp_lat[k] += lat;
        }
        s = hotpcs_freeze(h);
        assert_int_equal(s->n, 32);
        assert_int_equal(s->min, 0);
        for (uint32_t i = 0; i < s->n; i++) {
                unsigned k = (unsigned) ((s->item[i].pc - PC_BASE) / PC_STRIDE);

                assert_int_equal(s->item[i].count, exp_n[k]);
                assert_int_equal(s->item[i].error, 0);
                assert_memory_equal(s->item[i].ops, exp_ops[k], sizeof(exp_ops[k]));
                assert_memory_equal(s->item[i].events, exp_ev[k], sizeof(exp_ev[k]));
                assert_int_equal(s->item[i].lat_sum, exp_lat[k]);
        }
        free(s);
        hotpcs_free(h);
}

static void test_distinct_evictions(void **state) {
        /* All-distinct keys: every sample after the K-th evicts exactly one. */
        struct hotpcs *h = hotpcs_new(100);

        for (uint64_t i = 0; i < 10000; i++)
                hotpcs_add(h, 1, pc_of(i), 0, HOTPCS_OP_OTHER, 0, 0);
        assert_int_equal(h->evictions, 10000 - 100);
        hotpcs_free(h);
}

/*
 * The exact table against a model of Space-Saving's counts and last
 * updates, whose victim is the least count updated last (the order
 * test-internals holds the stream summary to): the structure is built only
 * at an epoch's first eviction, from the counts and last updates, and must
 * choose the victims the per-sample structure would have. Several epochs
 * (a reset in between), filled by few or by many keys before the first
 * eviction.
 */
#define MODEL_K 48

static void check_model(const struct hotpcs *h, int round, size_t step, const uint64_t *pc, const uint64_t *count,
                        const uint64_t *error, uint32_t n) {
        struct hotpcs_summary *s = hotpcs_freeze(h);

        assert_int_equal(s->n, n);
        for (uint32_t i = 0; i < s->n; i++) {
                uint32_t j;

                for (j = 0; j < n && pc[j] != s->item[i].pc; j++)
                        ;
                if (j == n)
                        fail_msg("round %d step %zu: pc %#lx kept, the model evicted it", round, step,
                                 (unsigned long) s->item[i].pc);
                assert_int_equal(s->item[i].count, count[j]);
                assert_int_equal(s->item[i].error, error[j]);
        }
        free(s);
}

static void test_build_victims(void **state) {
        struct hotpcs *h = hotpcs_new(MODEL_K);
        uint64_t st = 11;

        for (int round = 0; round < 6; round++) {
                uint64_t pc[MODEL_K], count[MODEL_K], error[MODEL_K], last[MODEL_K];
                uint32_t n = 0, keys = round % 2 ? 60 : 400;
                size_t steps = 100000 / scale;

                hotpcs_reset(h);
                for (size_t step = 1; step <= steps; step++) {
                        /* Skewed: a few keys get most samples, so counts tie and differ. */
                        uint64_t k = tu_rand(&st) % 2 ? tu_rand(&st) % 8 : tu_rand(&st) % keys;
                        uint64_t p = pc_of(k);
                        uint32_t i;

                        hotpcs_add(h, pid_of(p), p, 0, HOTPCS_OP_LOAD, 0, 0);
                        for (i = 0; i < n && pc[i] != p; i++)
                                ;
                        if (i == n && n < MODEL_K) {
                                pc[n] = p;
                                count[n] = error[n] = 0;
                                n++;
                        } else if (i == n) {
                                i = 0;
                                for (uint32_t j = 1; j < n; j++)
                                        if (count[j] < count[i] || (count[j] == count[i] && last[j] > last[i]))
                                                i = j;
                                pc[i] = p;
                                error[i] = count[i];
                        }
                        count[i]++;
                        last[i] = step;
                        /* Every step up to the first evictions, where the built order decides;
                         * later the table forgets them. */
                        if (h->evictions <= 100)
                                check_model(h, round, step, pc, count, error, n);
                }
                assert_true(h->evictions > 100);
                check_model(h, round, steps, pc, count, error, n);
        }
        hotpcs_free(h);
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_single_zipf),
                cmocka_unit_test(test_single_adversarial),
                cmocka_unit_test(test_merge),
                cmocka_unit_test(test_breakdown_exact),
                cmocka_unit_test(test_distinct_evictions),
                cmocka_unit_test(test_build_victims),
        };

        if (tu_quick(argc, argv))
                scale = 4;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
