/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * collectors/pmu/spe-pmu.c on sysfs trees shaped like the kernel's
 * (fixtures/spe-*: the format/ and caps/ files of the arm_spe driver,
 * drivers/perf/arm_spe_pmu.c): discovery, format parsing, and the attr that opens the event,
 * with each option landing in the bits its format file names.
 *
 * Usage: test-spe-pmu FIXTURES-DIR
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "spe-pmu.h"

static const char *fixtures;

static char *fixture(const char *name) {
        static char path[4096];

        snprintf(path, sizeof(path), "%s/%s", fixtures, name);
        return path;
}

static void test_parse_format(void **state) {
        static const struct {
                const char *s;
                int r;
                unsigned word;
                uint64_t mask;
        } cases[] = {
                { "config:0", 0, 0, 0x1 },
                { "config:16", 0, 0, UINT64_C(1) << 16 },
                { "config1:0-63", 0, 1, UINT64_MAX },
                { "config2:0-11", 0, 2, 0xfff },
                { "config:0-3,8", 0, 0, 0x10f },
                { "config3:0-63", 0, 3, UINT64_MAX },
                { "config4:0", -EINVAL, 0, 0 },
                { "cfg:1", -EINVAL, 0, 0 },
                { "config:", -EINVAL, 0, 0 },
                { "config:64", -EINVAL, 0, 0 },
                { "config:5-2", -EINVAL, 0, 0 },
                { "config:1,", -EINVAL, 0, 0 },
                { "config:1-", -EINVAL, 0, 0 },
                { "config", -EINVAL, 0, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                unsigned word = 99;
                uint64_t mask = 0;

                assert_int_equal(spe_pmu_parse_format(cases[i].s, &word, &mask), cases[i].r);
                if (cases[i].r == 0) {
                        assert_int_equal(word, cases[i].word);
                        assert_int_equal(mask, cases[i].mask);
                }
        }
}

/* The Neoverse N1 driver's files: every option where its format file says. */
static void test_n1(void **state) {
        struct spe_pmu_options o = { .interval = 4000, .jitter = true, .loads = true, .stores = true,
                                     .physical_addresses = true, .min_latency = 100 };
        struct perf_event_attr a;
        struct spe_pmu *pmus;
        uint64_t interval;
        char err[256] = "";
        size_t n;

        assert_int_equal(spe_pmu_discover(fixture("spe-n1"), &pmus, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 1);
        assert_string_equal(pmus[0].name, "arm_spe_0");
        assert_int_equal(pmus[0].type, 8);
        assert_int_equal(pmus[0].min_interval, 1024);
        assert_int_equal(pmus[0].count_size, 12);
        assert_int_equal(pmus[0].n_format, 9);
        assert_ptr_equal(spe_pmu_for_cpu(pmus, n, 3), &pmus[0]);
        assert_null(spe_pmu_for_cpu(pmus, n, 4));

        assert_int_equal(spe_pmu_attr(&pmus[0], &o, &a, &interval, err, sizeof(err)), 0);
        assert_int_equal(a.type, 8);
        assert_int_equal(a.size, sizeof(a));
        assert_true(a.disabled);
        assert_false(a.freq);
        assert_true(a.sample_id_all);
        assert_int_equal(a.sample_type, PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU);
        /* ts_enable bit 0, pa_enable bit 1, jitter 16, load 33, store 34; not pct (2) nor branch (32). */
        assert_int_equal(a.config, (UINT64_C(1) << 0) | (UINT64_C(1) << 1) | (UINT64_C(1) << 16) |
                                           (UINT64_C(1) << 33) | (UINT64_C(1) << 34));
        assert_int_equal(a.config1, 0);
        assert_int_equal(a.config2, 100);
        /* 4000 -> 3840: PMSIRR keeps bits [31:8]. */
        assert_int_equal(interval, 3840);
        assert_int_equal(a.sample_period, 3840);

        /* Below min_interval: raised to it. 0: min_interval itself. */
        o = (struct spe_pmu_options) { .interval = 300 };
        assert_int_equal(spe_pmu_attr(&pmus[0], &o, &a, &interval, err, sizeof(err)), 0);
        assert_int_equal(interval, 1024);
        assert_int_equal(a.config, 1); /* timestamps only */
        o.interval = 0;
        assert_int_equal(spe_pmu_attr(&pmus[0], &o, &a, &interval, err, sizeof(err)), 0);
        assert_int_equal(interval, 1024);

        /* A minimum latency the 12-bit counters cannot reach. */
        o = (struct spe_pmu_options) { .min_latency = 4096 };
        assert_int_equal(spe_pmu_attr(&pmus[0], &o, &a, &interval, err, sizeof(err)), -ERANGE);
        assert_non_null(strstr(err, "min_latency 4096 does not fit its 12-bit counters"));

        /* spe_pmu_set: a value wider than the field. */
        assert_int_equal(spe_pmu_set(&pmus[0], &a, "min_latency", 0x1000), -ERANGE);
        assert_int_equal(spe_pmu_set(&pmus[0], &a, "event_filter", UINT64_MAX), 0);
        assert_int_equal(a.config1, UINT64_MAX);
        assert_int_equal(spe_pmu_set(&pmus[0], &a, "no_such", 1), -ENOENT);
        free(pmus);
}

/* Two SPE PMUs: each CPU's own, its own min_interval and format; a split field; config3. */
static void test_big_little(void **state) {
        struct spe_pmu_options o = { .interval = 256, .physical_addresses = true };
        struct perf_event_attr a = {};
        struct spe_pmu *pmus;
        uint64_t interval;
        char err[256] = "";
        size_t n;

        assert_int_equal(spe_pmu_discover(fixture("spe-big-little"), &pmus, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 2);
        assert_ptr_equal(spe_pmu_for_cpu(pmus, n, 0), &pmus[0]);
        assert_ptr_equal(spe_pmu_for_cpu(pmus, n, 5), &pmus[1]);
        assert_int_equal(pmus[0].min_interval, 256);
        assert_true(pmus[0].ernd);
        assert_int_equal(pmus[1].min_interval, SPE_PMU_DEFAULT_INTERVAL); /* no caps/ */

        assert_int_equal(spe_pmu_attr(&pmus[0], &o, &a, &interval, err, sizeof(err)), 0);
        assert_int_equal(interval, 256);
        assert_int_equal(a.type, 9);
        assert_int_equal(a.config, 0x3);
        /* The little cores' SPE has no pa_enable: asking for physical addresses is an error naming it. */
        assert_int_equal(spe_pmu_attr(&pmus[1], &o, &a, &interval, err, sizeof(err)), -ENOENT);
        assert_non_null(strstr(err, "arm_spe_1: format/pa_enable: missing"));
        o.physical_addresses = false;
        assert_int_equal(spe_pmu_attr(&pmus[1], &o, &a, &interval, err, sizeof(err)), 0);
        assert_int_equal(interval, SPE_PMU_DEFAULT_INTERVAL);

        /* A field in two ranges: value bits go low to high across them. */
        a.config = 0;
        assert_int_equal(spe_pmu_set(&pmus[1], &a, "split_field", 0x5), 0);
        assert_int_equal(a.config, (UINT64_C(1) << 4) | (UINT64_C(1) << 40));
        assert_int_equal(spe_pmu_set(&pmus[1], &a, "split_field", 0x8), -ERANGE);
        assert_int_equal(spe_pmu_set(&pmus[1], &a, "inv_event_filter", 1), -EOPNOTSUPP);
        free(pmus);
}

static void test_none_and_broken(void **state) {
        static struct spe_pmu untouched;
        struct spe_pmu *pmus = (void *) 1;
        char err[256] = "";
        size_t n = 99;

        /* No SPE on x86, and no sysfs at all. */
        assert_int_equal(spe_pmu_discover(fixture("x86"), &pmus, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 0);
        assert_null(pmus);
        assert_int_equal(spe_pmu_discover(fixture("does-not-exist"), &pmus, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 0);

        /* A failure leaves the outputs as they were (HACKING.md: ret_* only on success). */
        pmus = &untouched;
        n = 99;
        assert_int_equal(spe_pmu_discover(fixture("spe-broken"), &pmus, &n, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "arm_spe_0/format/jitter: \"cfg:16\" is not a perf format"));
        assert_ptr_equal(pmus, &untouched);
        assert_int_equal(n, 99);
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_format),
                cmocka_unit_test(test_n1),
                cmocka_unit_test(test_big_little),
                cmocka_unit_test(test_none_and_broken),
        };

        if (argc != 2) {
                fprintf(stderr, "usage: %s FIXTURES-DIR\n", argv[0]);
                return 2;
        }
        fixtures = argv[1];
        return cmocka_run_group_tests(tests, NULL, NULL);
}
