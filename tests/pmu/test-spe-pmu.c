/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * collectors/pmu/spe-pmu.c on sysfs trees shaped like the kernel's
 * (fixtures/spe-*: the format/ and caps/ files of the arm_spe driver,
 * drivers/perf/arm_spe_pmu.c): discovery, format parsing, and the attr that opens the event,
 * with each option landing in the bits its format file names, checked against the
 * driver's own format strings (kernel_formats below), not our parser.
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

/*
 * The format strings of drivers/perf/arm_spe_pmu.c, copied from its
 * ATTR_CFG_FLD_<name>_{CFG,LO,HI} defines as GEN_PMU_FORMAT_ATTR() joins
 * them: Linux 6.1 has the first nine, 6.3 adds inv_event_filter (config3,
 * PMSNEVFR_EL1), later mainline discard.
 */
static const struct kernel_format {
        const char *name, *format;
} kernel_formats[] = {
        { "ts_enable", "config:0" },            /* PMSCR_EL1.TS */
        { "pa_enable", "config:1" },            /* PMSCR_EL1.PA */
        { "pct_enable", "config:2" },           /* PMSCR_EL1.PCT */
        { "jitter", "config:16" },              /* PMSIRR_EL1.RND */
        { "branch_filter", "config:32" },       /* PMSFCR_EL1.B */
        { "load_filter", "config:33" },         /* PMSFCR_EL1.LD */
        { "store_filter", "config:34" },        /* PMSFCR_EL1.ST */
        { "discard", "config:35" },             /* PMBLIMITR_EL1.FM = DISCARD */
        { "event_filter", "config1:0-63" },     /* PMSEVFR_EL1 */
        { "inv_event_filter", "config3:0-63" }, /* PMSNEVFR_EL1 */
        { "min_latency", "config2:0-11" },      /* PMSLATFR_EL1.MINLAT */
};

static const struct kernel_format *kernel_format(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(kernel_formats); i++)
                if (strcmp(kernel_formats[i].name, name) == 0)
                        return &kernel_formats[i];
        fail_msg("no kernel format %s", name);
        return NULL;
}

/* What the kernel reads from config..config3 (include/uapi/linux/perf_event.h: config3 at byte 128). */
static void attr_words(const struct spe_pmu_event_attr *a, uint64_t ret[4]) {
        ret[0] = a->attr.config;
        ret[1] = a->attr.config1;
        ret[2] = a->attr.config2;
        memcpy(&ret[3], (const uint8_t *) a + 128, sizeof(ret[3]));
}

/* Add value at the kernel's place for field name: a string parse of its own, not spe_pmu_parse_format(). */
static void expect_field(uint64_t words[4], const char *name, uint64_t value) {
        const char *fmt = kernel_format(name)->format;
        unsigned word = 0, lo, hi;

        if (strncmp(fmt, "config:", 7) != 0)
                assert_int_equal(sscanf(fmt, "config%u:", &word), 1);
        assert_true(word < 4);
        switch (sscanf(strchr(fmt, ':') + 1, "%u-%u", &lo, &hi)) {
        case 1:
                hi = lo;
                break;
        case 2:
                break;
        default:
                fail_msg("bad kernel format %s", fmt);
        }
        assert_true(hi - lo == 63 || value >> (hi - lo + 1) == 0);
        words[word] |= value << lo;
}

/* Each format file holds the kernel's string as sysfs shows it (fixtures/README.spe). */
static void check_format_files(const char *pmu_dir, const char *const *names, size_t n) {
        for (size_t i = 0; i < n; i++) {
                const char *fmt = kernel_format(names[i])->format;
                char path[4096], buf[64] = "", want[64];
                size_t got;
                FILE *f;

                snprintf(path, sizeof(path), "%s/format/%s", pmu_dir, names[i]);
                f = fopen(path, "re");
                assert_non_null(f);
                got = fread(buf, 1, sizeof(buf) - 1, f);
                fclose(f);
                buf[got] = '\0';
                snprintf(want, sizeof(want), "%s%s", fmt, strchr(fmt, '-') ? "\n" : "\n\n");
                assert_string_equal(buf, want);
        }
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
                { "config4:0-63", 0, 4, UINT64_MAX },
                { "config9:3", 0, 9, 0x8 },
                { "config10:0", -EINVAL, 0, 0 },
                { "config0:0", -EINVAL, 0, 0 },
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
        struct spe_pmu_event_attr a;
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
        assert_int_equal(a.attr.type, 8);
        assert_int_equal(a.attr.size, sizeof(struct perf_event_attr));
        assert_true(a.attr.disabled);
        assert_false(a.attr.freq);
        assert_true(a.attr.sample_id_all);
        assert_int_equal(a.attr.sample_type, PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU);
        /* ts_enable bit 0, pa_enable bit 1, jitter 16, load 33, store 34; not pct (2) nor branch (32). */
        assert_int_equal(a.attr.config, (UINT64_C(1) << 0) | (UINT64_C(1) << 1) | (UINT64_C(1) << 16) |
                                           (UINT64_C(1) << 33) | (UINT64_C(1) << 34));
        assert_int_equal(a.attr.config1, 0);
        assert_int_equal(a.attr.config2, 100);
        /* 4000 -> 3840: PMSIRR keeps bits [31:8]. */
        assert_int_equal(interval, 3840);
        assert_int_equal(a.attr.sample_period, 3840);

        /* Below min_interval: raised to it. 0: min_interval itself. */
        o = (struct spe_pmu_options) { .interval = 300 };
        assert_int_equal(spe_pmu_attr(&pmus[0], &o, &a, &interval, err, sizeof(err)), 0);
        assert_int_equal(interval, 1024);
        assert_int_equal(a.attr.config, 1); /* timestamps only */
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
        assert_int_equal(a.attr.config1, UINT64_MAX);
        assert_int_equal(spe_pmu_set(&pmus[0], &a, "no_such", 1), -ENOENT);
        free(pmus);
}

/* Two SPE PMUs: each CPU's own, its own min_interval and format; a split field; config3. */
static void test_big_little(void **state) {
        struct spe_pmu_options o = { .interval = 256, .physical_addresses = true };
        struct spe_pmu_event_attr a = {};
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
        assert_int_equal(a.attr.type, 9);
        assert_int_equal(a.attr.config, 0x3);
        /* The little cores' SPE has no pa_enable: asking for physical addresses is an error naming it. */
        assert_int_equal(spe_pmu_attr(&pmus[1], &o, &a, &interval, err, sizeof(err)), -ENOENT);
        assert_non_null(strstr(err, "arm_spe_1: format/pa_enable: missing"));
        o.physical_addresses = false;
        assert_int_equal(spe_pmu_attr(&pmus[1], &o, &a, &interval, err, sizeof(err)), 0);
        assert_int_equal(interval, SPE_PMU_DEFAULT_INTERVAL);

        /* A field in two ranges: value bits go low to high across them. */
        a.attr.config = 0;
        assert_int_equal(spe_pmu_set(&pmus[1], &a, "split_field", 0x5), 0);
        assert_int_equal(a.attr.config, (UINT64_C(1) << 4) | (UINT64_C(1) << 40));
        assert_int_equal(spe_pmu_set(&pmus[1], &a, "split_field", 0x8), -ERANGE);
        /* config3 (inv_event_filter): past the 6.1 attr, so the attr grows to PERF_ATTR_SIZE_VER8. */
        assert_int_equal(a.attr.size, sizeof(struct perf_event_attr));
        assert_int_equal(spe_pmu_set(&pmus[1], &a, "inv_event_filter", 0x9), 0);
        assert_int_equal(spe_pmu_attr_config3(&a), 0x9);
        /* config4 (data_src_filter in a proposed driver change) parsed, but no attr of ours has it. */
        assert_int_equal(spe_pmu_set(&pmus[1], &a, "data_src_filter", 1), -EOPNOTSUPP);
        assert_int_equal(a.attr.size, sizeof(struct perf_event_attr) > 136 ? sizeof(struct perf_event_attr) : 136);
        free(pmus);
}

/* Neoverse N1 under 6.1: its files are the driver's strings; typical options land where they say. */
static void test_n1_kernel_layout(void **state) {
        static const char *const names[] = { "ts_enable", "pa_enable", "pct_enable", "jitter", "branch_filter",
                                             "load_filter", "store_filter", "event_filter", "min_latency" };
        struct spe_pmu_options o = { .jitter = true, .loads = true, .stores = true, .branches = true,
                                     .min_latency = 0xabc, .event_filter = UINT64_C(0x8000000000000022) };
        uint64_t got[4], want[4] = {};
        struct spe_pmu_event_attr a;
        struct spe_pmu *pmus;
        char err[256] = "";
        size_t n;

        check_format_files(fixture("spe-n1/bus/event_source/devices/arm_spe_0"), names, ELEMENTSOF(names));
        assert_int_equal(spe_pmu_discover(fixture("spe-n1"), &pmus, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 1);
        assert_int_equal(pmus[0].n_format, ELEMENTSOF(names));
        assert_false(pmus[0].arch_inst);
        assert_false(pmus[0].ernd);

        assert_int_equal(spe_pmu_attr(&pmus[0], &o, &a, NULL, err, sizeof(err)), 0);
        expect_field(want, "ts_enable", 1);
        expect_field(want, "jitter", 1);
        expect_field(want, "load_filter", 1);
        expect_field(want, "store_filter", 1);
        expect_field(want, "branch_filter", 1);
        expect_field(want, "min_latency", 0xabc);
        expect_field(want, "event_filter", UINT64_C(0x8000000000000022));
        attr_words(&a, got);
        /* Not pa_enable nor pct_enable: not asked (the driver wants perfmon_capable() for them). */
        assert_memory_equal(got, want, sizeof(want));
        assert_int_equal(a.attr.size, sizeof(struct perf_event_attr));

        /* Asked: both, and only their bits more. */
        o.physical_addresses = o.physical_timestamps = true;
        assert_int_equal(spe_pmu_attr(&pmus[0], &o, &a, NULL, err, sizeof(err)), 0);
        expect_field(want, "pa_enable", 1);
        expect_field(want, "pct_enable", 1);
        attr_words(&a, got);
        assert_memory_equal(got, want, sizeof(want));

        /* 6.1 has no inv_event_filter: asking for it names the missing file. */
        o = (struct spe_pmu_options) { .inv_event_filter = 0x2 };
        assert_int_equal(spe_pmu_attr(&pmus[0], &o, &a, NULL, err, sizeof(err)), -ENOENT);
        assert_non_null(strstr(err, "arm_spe_0: format/inv_event_filter: missing"));
        free(pmus);
}

/* Neoverse V2 under mainline: config3 and discard files; config3 only when asked for. */
static void test_v2(void **state) {
        static const char *const names[] = { "ts_enable", "pa_enable", "pct_enable", "jitter",
                                             "branch_filter", "load_filter", "store_filter", "discard",
                                             "event_filter", "inv_event_filter", "min_latency" };
        struct spe_pmu_options o = { .interval = 1000, .jitter = true, .loads = true, .branches = true,
                                     .min_latency = 40, .event_filter = 0x2 };
        uint64_t got[4], want[4] = {}, interval;
        struct spe_pmu_event_attr a;
        struct spe_pmu *pmus;
        char err[256] = "";
        size_t n;

        check_format_files(fixture("spe-v2/bus/event_source/devices/arm_spe_0"), names, ELEMENTSOF(names));
        assert_int_equal(spe_pmu_discover(fixture("spe-v2"), &pmus, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 1);
        assert_string_equal(pmus[0].name, "arm_spe_0");
        assert_int_equal(pmus[0].type, 10);
        assert_int_equal(pmus[0].n_format, ELEMENTSOF(names));
        assert_int_equal(pmus[0].min_interval, 256);
        assert_int_equal(pmus[0].count_size, 16);
        assert_true(pmus[0].arch_inst);
        assert_true(pmus[0].ernd);
        assert_ptr_equal(spe_pmu_for_cpu(pmus, n, 71), &pmus[0]);
        assert_null(spe_pmu_for_cpu(pmus, n, 72));

        /* A config3 field in format/ but not asked for: the attr is the headers' own size, config3 zero. */
        assert_int_equal(spe_pmu_attr(&pmus[0], &o, &a, &interval, err, sizeof(err)), 0);
        assert_int_equal(interval, 768); /* 1000 with PMSIRR's low byte dropped */
        assert_int_equal(a.attr.type, 10);
        assert_int_equal(a.attr.size, sizeof(struct perf_event_attr));
        expect_field(want, "ts_enable", 1);
        expect_field(want, "jitter", 1);
        expect_field(want, "load_filter", 1);
        expect_field(want, "branch_filter", 1);
        expect_field(want, "min_latency", 40);
        expect_field(want, "event_filter", 0x2);
        attr_words(&a, got);
        assert_memory_equal(got, want, sizeof(want));

        /* Asked for: config3 at byte 128, attr.size PERF_ATTR_SIZE_VER8 (136) so the kernel reads it. */
        o.inv_event_filter = UINT64_C(0x4000000000000100);
        assert_int_equal(spe_pmu_attr(&pmus[0], &o, &a, &interval, err, sizeof(err)), 0);
        expect_field(want, "inv_event_filter", UINT64_C(0x4000000000000100));
        attr_words(&a, got);
        assert_memory_equal(got, want, sizeof(want));
        assert_int_equal(a.attr.size, sizeof(struct perf_event_attr) > 136 ? sizeof(struct perf_event_attr) : 136);
        assert_int_equal(spe_pmu_attr_config3(&a), UINT64_C(0x4000000000000100));

        /* discard exists but no option sets it: profiling that writes nothing is not ours to ask. */
        assert_int_equal(got[0] & (UINT64_C(1) << 35), 0);

        /* count_size 16 would hold 5000 cycles; the driver's min_latency field (12 bits) does not. */
        o = (struct spe_pmu_options) { .min_latency = 5000 };
        assert_int_equal(spe_pmu_attr(&pmus[0], &o, &a, &interval, err, sizeof(err)), -ERANGE);
        assert_non_null(strstr(err, "arm_spe_0: format/min_latency: value does not fit its bits"));
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
                cmocka_unit_test(test_n1_kernel_layout),
                cmocka_unit_test(test_v2),
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
