/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The store's two internal structures against brute-force models: the
 * hash index (insert, lookup, backward-shift removal under churn) and the
 * Space-Saving stream summary (weighted increments, minimum, victim, and
 * which of several minimum entries is the victim).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "keytab.h"
#include "ssum.h"
#include "store-test-util.h"

#define CAP     64
#define KEYS    200             /* key universe, larger than CAP */

static void test_keytab(void **state) {
        struct keytab t;
        int32_t model[KEYS];    /* key -> idx, -1 when absent */
        size_t n = 0;
        uint64_t st = 17;

        keytab_init(&t, CAP);
        for (unsigned k = 0; k < KEYS; k++)
                model[k] = -1;
        for (unsigned step = 0; step < 200000; step++) {
                unsigned k = (unsigned) (tu_rand(&st) % KEYS);
                /* Few distinct a values with many b values: clustered hashes too. */
                uint64_t a = k % 7, b = k;
                struct keytab_slot *s = keytab_lookup(&t, a, b);

                if (model[k] >= 0) {
                        assert_int_equal(s->idx, (uint32_t) model[k]);
                        if (tu_rand(&st) % 2) {
                                keytab_remove(&t, a, b);
                                model[k] = -1;
                                n--;
                        }
                } else {
                        assert_int_equal(s->idx, KEYTAB_NONE);
                        if (n < CAP) {
                                keytab_set(s, a, b, step);
                                model[k] = (int32_t) step;
                                n++;
                        }
                }
                if (step % 1000 == 0)
                        for (unsigned q = 0; q < KEYS; q++) {
                                struct keytab_slot *x = keytab_lookup(&t, q % 7, q);
                                assert_int_equal(x->idx, model[q] >= 0 ? (uint32_t) model[q] : KEYTAB_NONE);
                        }
        }
        keytab_done(&t);
}

static void test_ssum(void **state) {
        struct ssum s;
        uint64_t model[CAP], st = 23;

        ssum_init(&s, CAP);
        for (int round = 0; round < 3; round++) {
                uint32_t n = 0;

                ssum_reset(&s);
                assert_int_equal(ssum_min_score(&s), 0);
                for (unsigned step = 0; step < 100000; step++) {
                        uint64_t w = tu_rand(&st) % 8 == 0 ? 16 : 1;

                        if (n < CAP && tu_rand(&st) % 4 == 0) {
                                ssum_push(&s, n, w);
                                model[n++] = w;
                        } else if (n == CAP && tu_rand(&st) % 3 == 0) {
                                /* Space-Saving takeover of a minimum entry. */
                                uint64_t min = UINT64_MAX;
                                uint32_t v = ssum_min_idx(&s);

                                for (uint32_t i = 0; i < n; i++)
                                        min = MIN(min, model[i]);
                                assert_int_equal(ssum_min_score(&s), min);
                                assert_int_equal(model[v], min);
                                ssum_add(&s, v, w);
                                model[v] += w;
                        } else if (n > 0) {
                                uint32_t e = (uint32_t) (tu_rand(&st) % n);

                                ssum_add(&s, e, w);
                                model[e] += w;
                        }
                        if (step % 97 == 0) {
                                uint64_t min = UINT64_MAX;

                                for (uint32_t i = 0; i < n; i++) {
                                        assert_int_equal(ssum_score(&s, i), model[i]);
                                        min = MIN(min, model[i]);
                                }
                                if (n > 0) {
                                        assert_int_equal(ssum_min_score(&s), min);
                                        assert_int_equal(model[ssum_min_idx(&s)], min);
                                }
                        }
                }
        }
        ssum_done(&s);
}

/*
 * Which minimum entry is the victim: inside a bucket the entry that reached
 * the bucket's count last comes first, so among the entries of least count
 * the one updated last is taken. Hot PCs' and hot lines' answers depend on
 * that order (which key an eviction removes), so it is held to a model of
 * it: counts and the step of each entry's last update. With `inc` unit
 * steps go through ssum_inc() half the time, which must leave the order
 * ssum_add() does.
 */
static void check_victim_order(bool inc) {
        struct ssum s;
        uint64_t model[CAP], last[CAP], st = 31;

        ssum_init(&s, CAP);
        for (int round = 0; round < 3; round++) {
                uint32_t n = 0;

                ssum_reset(&s);
                for (unsigned step = 1; step <= 200000; step++) {
                        uint64_t w = round == 0 || tu_rand(&st) % 8 != 0 ? 1 : 1 + tu_rand(&st) % 20;
                        uint32_t e;

                        if (n < CAP && tu_rand(&st) % 4 == 0) {
                                ssum_push(&s, n, w);
                                model[n] = w;
                                last[n++] = step;
                                continue;
                        }
                        if (n == 0)
                                continue;
                        if (n == CAP && tu_rand(&st) % 3 == 0) {
                                uint32_t v = 0;

                                for (uint32_t i = 1; i < n; i++)
                                        if (model[i] < model[v] || (model[i] == model[v] && last[i] > last[v]))
                                                v = i;
                                assert_int_equal(ssum_min_idx(&s), v);
                                assert_int_equal(ssum_min_score(&s), model[v]);
                                e = v;
                        } else
                                /* Few entries get most updates: long runs of equal counts and of unique ones. */
                                e = (uint32_t) (tu_rand(&st) % 2 ? tu_rand(&st) % n : tu_rand(&st) % MIN(n, 4U));
                        if (inc && w == 1 && tu_rand(&st) % 2)
                                ssum_inc(&s, e);
                        else
                                ssum_add(&s, e, w);
                        model[e] += w;
                        last[e] = step;
                }
                for (uint32_t i = 0; i < n; i++)
                        assert_int_equal(ssum_score(&s, i), model[i]);
        }
        ssum_done(&s);
}

static void test_ssum_victim_order(void **state) {
        check_victim_order(false);
}

static void test_ssum_inc(void **state) {
        check_victim_order(true);
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_keytab),
                cmocka_unit_test(test_ssum),
                cmocka_unit_test(test_ssum_victim_order),
                cmocka_unit_test(test_ssum_inc),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
