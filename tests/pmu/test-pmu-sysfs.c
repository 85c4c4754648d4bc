/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <linux/perf_event.h>

#include "macro.h"
#include "pmu-event.h"
#include "pmu-sysfs.h"

static const char *fixtures;

static struct pmu_sysfs *discover(const char *name) {
        char root[4096];
        struct pmu_sysfs *s = NULL;

        snprintf(root, sizeof(root), "%s/%s", fixtures, name);
        assert_int_equal(pmu_sysfs_discover(root, &s), 0);
        assert_non_null(s);
        return s;
}

static void assert_cpus(const struct cpulist *l, const char *expect) {
        char buf[256];

        assert_int_equal(cpulist_format(l, buf, sizeof(buf)), 0);
        assert_string_equal(buf, expect);
}

static void test_neoverse_n1(void **state) {
        struct pmu_sysfs *s = discover("neoverse-n1");
        const struct pmu_desc *p;
        uint64_t cfg;

        assert_cpus(&s->online, "0-3");
        /* arm_spe_0 has a cpumask, not a cpus file: not a core PMU. */
        assert_int_equal(s->n_pmus, 1);
        p = &s->pmus[0];
        assert_string_equal(p->name, "armv8_pmuv3_0");
        assert_int_equal(p->type, 8);
        assert_int_equal(p->kind, PMU_KIND_ARM_PMUV3);
        assert_false(p->all_cpus);
        assert_cpus(&p->cpus, "0-3");
        assert_int_equal(p->general_counters, PMU_ARM_DEFAULT_GENERAL_COUNTERS);
        assert_true(p->cycle_counter);
        assert_int_equal(p->n_events, 41);
        assert_string_equal(pmu_desc_event(p, "cpu_cycles"), "event=0x0011");
        assert_int_equal(pmu_desc_event_config(p, "cpu_cycles", &cfg), 0);
        assert_int_equal(cfg, 0x11);
        assert_int_equal(pmu_desc_event_config(p, "ll_cache_miss_rd", &cfg), 0);
        assert_int_equal(cfg, 0x37);
        assert_int_equal(pmu_desc_event_config(p, "no_such_event", &cfg), -ENOENT);
        assert_string_equal(pmu_desc_attr(p->format, p->n_format, "event"), "config:0-15");
        assert_int_equal(p->n_format, 3);
        assert_string_equal(pmu_desc_attr(p->caps, p->n_caps, "bus_width"), "0x00000040");
        assert_int_equal(p->n_caps, 3);
        /* sorted by name */
        for (size_t i = 1; i < p->n_events; i++)
                assert_true(strcmp(p->events[i - 1].name, p->events[i].name) < 0);

        for (unsigned cpu = 0; cpu < 4; cpu++)
                assert_ptr_equal(pmu_sysfs_pmu_for_cpu(s, cpu), p);
        assert_null(pmu_sysfs_pmu_for_cpu(s, 4));
        assert_ptr_equal(pmu_sysfs_pmu_by_name(s, "armv8_pmuv3_0"), p);
        assert_null(pmu_sysfs_pmu_by_name(s, "armv8_pmuv3"));

        /* The others, sorted: arm_spe_0 breakpoint kprobe software tracepoint uprobe */
        assert_int_equal(s->n_others, 6);
        assert_string_equal(s->others[0], "arm_spe_0");
        assert_string_equal(s->others[3], "software");
        pmu_sysfs_free(s);
}

static void test_big_little(void **state) {
        struct pmu_sysfs *s = discover("big-little");
        const struct pmu_desc *little, *big;

        assert_cpus(&s->online, "0-7");
        assert_int_equal(s->n_pmus, 2);
        little = pmu_sysfs_pmu_by_name(s, "armv8_cortex_a55");
        big = pmu_sysfs_pmu_by_name(s, "armv8_cortex_a76");
        assert_non_null(little);
        assert_non_null(big);
        assert_int_equal(little->type, 10);
        assert_int_equal(big->type, 11);
        assert_int_equal(little->kind, PMU_KIND_ARM_PMUV3);
        assert_int_equal(big->kind, PMU_KIND_ARM_PMUV3);
        assert_cpus(&little->cpus, "0-3");
        assert_cpus(&big->cpus, "4-7");
        for (unsigned cpu = 0; cpu < 8; cpu++)
                assert_ptr_equal(pmu_sysfs_pmu_for_cpu(s, cpu), cpu < 4 ? little : big);
        /* Per-core event lists differ. */
        assert_null(pmu_desc_event(little, "br_mis_pred_retired"));
        assert_non_null(pmu_desc_event(little, "br_mis_pred"));
        assert_non_null(pmu_desc_event(big, "br_mis_pred_retired"));
        assert_null(pmu_desc_event(little, "ll_cache_rd"));
        assert_non_null(pmu_desc_event(big, "ll_cache_rd"));
        pmu_sysfs_free(s);
}

static void test_x86(void **state) {
        struct pmu_sysfs *s = discover("x86");
        const struct pmu_desc *p;
        uint64_t cfg;

        assert_cpus(&s->online, "0-3");
        assert_int_equal(s->n_pmus, 1);
        p = &s->pmus[0];
        assert_string_equal(p->name, "cpu");
        assert_int_equal(p->type, 4);
        assert_int_equal(p->kind, PMU_KIND_X86);
        assert_true(p->all_cpus);
        assert_int_equal(p->general_counters, PMU_X86_DEFAULT_GENERAL_COUNTERS);
        assert_false(p->cycle_counter);
        assert_int_equal(p->n_events, 9);
        assert_int_equal(p->n_format, 6);
        assert_string_equal(pmu_desc_attr(p->caps, p->n_caps, "pmu_name"), "skylake");
        assert_int_equal(pmu_desc_event_config(p, "instructions", &cfg), 0);
        assert_int_equal(cfg, 0xc0);
        /* several terms: not the simple form */
        assert_int_equal(pmu_desc_event_config(p, "cache-misses", &cfg), -EOPNOTSUPP);
        for (unsigned cpu = 0; cpu < 64; cpu++)
                assert_ptr_equal(pmu_sysfs_pmu_for_cpu(s, cpu), p);
        /* msr has events/ and format/ but neither cpus nor the name cpu */
        assert_null(pmu_sysfs_pmu_by_name(s, "msr"));
        pmu_sysfs_free(s);
}

static void test_no_pmu(void **state) {
        struct pmu_sysfs *s = discover("no-pmu");

        assert_cpus(&s->online, "0,2-3");
        assert_int_equal(s->n_pmus, 0);
        assert_null(pmu_sysfs_pmu_for_cpu(s, 0));
        assert_int_equal(s->n_others, 6);
        pmu_sysfs_free(s);
}

static void test_missing_root(void **state) {
        char root[4096];
        struct pmu_sysfs *s = NULL;
        struct cpulist l;

        snprintf(root, sizeof(root), "%s/does-not-exist", fixtures);
        assert_int_equal(pmu_sysfs_discover(root, &s), -ENOENT);
        assert_null(s);
        assert_int_equal(pmu_sysfs_read_online(root, &l), -ENOENT);
        snprintf(root, sizeof(root), "%s/no-pmu/devices/system/cpu/possible", fixtures);
        assert_int_equal(pmu_sysfs_read_cpulist(root, &l), 0);
        assert_cpus(&l, "0-3");
        assert_null(pmu_sysfs_free(NULL));
}

static void test_broken(void **state) {
        char root[4096];
        struct pmu_sysfs *s = NULL;

        /* A malformed PMU is skipped and reported, not fatal. */
        snprintf(root, sizeof(root), "%s/broken-type", fixtures);
        assert_int_equal(pmu_sysfs_discover(root, &s), 0);
        assert_int_equal(s->n_pmus, 0);
        assert_string_equal(s->broken_pmu, "armv8_pmuv3");
        assert_int_equal(s->broken_error, -EINVAL);
        s = pmu_sysfs_free(s);
        snprintf(root, sizeof(root), "%s/broken-cpus", fixtures);
        assert_int_equal(pmu_sysfs_discover(root, &s), 0);
        assert_int_equal(s->n_pmus, 0);
        assert_int_equal(s->broken_error, -ERANGE);
        s = pmu_sysfs_free(s);
        assert_null(s);
}

struct encode_case {
        const char *fixture;
        unsigned cpu;
        enum pmu_event_id ev;
        bool open_unlisted;
        int r;
        uint32_t type;
        uint64_t config;
};

static const struct encode_case encodes[] = {
        /* N1: raw PMUv3 numbers through the PMU's own type 8 */
        { "neoverse-n1", 0, PMU_EVENT_CYCLES, false, 0, 8, 0x11 },
        { "neoverse-n1", 3, PMU_EVENT_INSTRUCTIONS, false, 0, 8, 0x08 },
        { "neoverse-n1", 1, PMU_EVENT_LLC_READ_MISS, false, 0, 8, 0x37 },
        { "neoverse-n1", 1, PMU_EVENT_DTLB_WALK, false, 0, 8, 0x34 },
        { "neoverse-n1", 2, PMU_EVENT_BRANCH_MISPREDICTS, false, 0, 8, 0x22 },
        { "neoverse-n1", 2, PMU_EVENT_STALL_BACKEND, false, 0, 8, 0x24 },
        /* software events keep their generic type on any PMU */
        { "neoverse-n1", 0, PMU_EVENT_PAGE_FAULTS, false, 0, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
        /* big.LITTLE: each cluster through its own type; the A55 has no
         * BR_MIS_PRED_RETIRED (fallback BR_MIS_PRED) and no LL_CACHE_RD */
        { "big-little", 0, PMU_EVENT_CYCLES, false, 0, 10, 0x11 },
        { "big-little", 4, PMU_EVENT_CYCLES, false, 0, 11, 0x11 },
        { "big-little", 3, PMU_EVENT_BRANCH_MISPREDICTS, false, 0, 10, 0x10 },
        { "big-little", 7, PMU_EVENT_BRANCH_MISPREDICTS, false, 0, 11, 0x22 },
        { "big-little", 1, PMU_EVENT_LLC_READ, false, -ENOENT, 0, 0 },
        { "big-little", 1, PMU_EVENT_LLC_READ, true, 0, 10, 0x36 },
        { "big-little", 5, PMU_EVENT_LLC_READ, false, 0, 11, 0x36 },
        /* x86: generic hardware and cache events */
        { "x86", 2, PMU_EVENT_CYCLES, false, 0, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
        { "x86", 2, PMU_EVENT_INSTRUCTIONS, false, 0, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
        { "x86", 0, PMU_EVENT_L1D_CACHE_REFILL, false, 0, PERF_TYPE_HW_CACHE,
          PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_READ << 8) | (PERF_COUNT_HW_CACHE_RESULT_MISS << 16) },
        { "x86", 0, PMU_EVENT_L1D_TLB_REFILL, false, -EOPNOTSUPP, 0, 0 },
        /* no core PMU: generic encodings, the kernel will say no */
        { "no-pmu", 0, PMU_EVENT_CYCLES, false, 0, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
        { "no-pmu", 0, PMU_EVENT_CONTEXT_SWITCHES, false, 0, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
};

static void test_encode(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(encodes); i++) {
                const struct encode_case *e = &encodes[i];
                struct pmu_sysfs *s = discover(e->fixture);
                uint32_t type = 0xdead;
                uint64_t config = 0xbeef;
                int r;

                r = pmu_event_encode(e->ev, pmu_sysfs_pmu_for_cpu(s, e->cpu), e->open_unlisted, &type, &config);
                if (r != e->r || (r == 0 && (type != e->type || config != e->config)))
                        fail_msg("case %zu (%s cpu%u %s): r=%d type=%u config=%#llx", i, e->fixture, e->cpu,
                                 pmu_event_get(e->ev)->name, r, type, (unsigned long long) config);
                if (r < 0) {
                        assert_int_equal(type, 0xdead);
                        assert_int_equal(config, 0xbeef);
                }
                pmu_sysfs_free(s);
        }
}

/* The hint names the level and what allows it: Debian's and Ubuntu's 3 and 4
 * need CAP_SYS_ADMIN (their perf_event_open() patch), mainline's levels
 * CAP_PERFMON. A procfs root of our own, written here. */
static void test_permission_hint(void **state) {
        static const struct {
                const char *value, *expect;
        } cases[] = {
                { "3\n", "kernel.perf_event_paranoid is 3 (Debian, Ubuntu): CAP_SYS_ADMIN only" },
                { "4\n", "is 4 (Debian, Ubuntu)" },
                { "2\n", "kernel.perf_event_paranoid is 2: CPU-wide events need CAP_PERFMON" },
                { "-1\n", "kernel.perf_event_paranoid is -1:" },
                { "bogus\n", "CPU-wide events need CAP_PERFMON (Linux >= 5.8; CAP_SYS_ADMIN before)" },
        };
        char root[] = "/tmp/armprofd-hint.XXXXXX", dir[128], path[160], buf[256];
        FILE *f;

        assert_non_null(mkdtemp(root));
        /* No such file: the capability alone. */
        assert_string_equal(pmu_perf_permission_hint(root, buf, sizeof(buf)),
                            "CPU-wide events need CAP_PERFMON (Linux >= 5.8; CAP_SYS_ADMIN before)");
        snprintf(dir, sizeof(dir), "%s/sys", root);
        assert_int_equal(mkdir(dir, 0755), 0);
        snprintf(dir, sizeof(dir), "%s/sys/kernel", root);
        assert_int_equal(mkdir(dir, 0755), 0);
        snprintf(path, sizeof(path), "%s/perf_event_paranoid", dir);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                assert_non_null(f = fopen(path, "w"));
                fputs(cases[i].value, f);
                fclose(f);
                pmu_perf_permission_hint(root, buf, sizeof(buf));
                if (!strstr(buf, cases[i].expect))
                        fail_msg("paranoid %s: got \"%s\"", cases[i].value, buf);
                /* Only the Debian levels send the operator to the sysctl file. */
                assert_true(!!strstr(buf, "CAP_PERFMON is not enough; set it to 2") ==
                            (cases[i].value[0] == '3' || cases[i].value[0] == '4'));
        }
        /* It fits a per-CPU note (SPE_STREAM_NOTE_MAX, 160) after "cannot open cpu-clock: Permission denied (". */
        pmu_perf_permission_hint(root, buf, sizeof(buf));
        assert_true(strlen("cannot open cpu-clock: Permission denied ()") + strlen(buf) < 160);
        /* A short buffer is cut, never overrun. */
        assert_int_equal(strlen(pmu_perf_permission_hint(root, buf, 16)), 15);
        unlink(path);
        rmdir(dir);
        snprintf(dir, sizeof(dir), "%s/sys", root);
        rmdir(dir);
        rmdir(root);
}

static void test_kind_names(void **state) {
        assert_string_equal(pmu_kind_to_string(PMU_KIND_ARM_PMUV3), "arm-pmuv3");
        assert_string_equal(pmu_kind_to_string(PMU_KIND_X86), "x86");
        assert_null(pmu_kind_to_string(_PMU_KIND_MAX));
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_neoverse_n1),
                cmocka_unit_test(test_big_little),
                cmocka_unit_test(test_x86),
                cmocka_unit_test(test_no_pmu),
                cmocka_unit_test(test_missing_root),
                cmocka_unit_test(test_broken),
                cmocka_unit_test(test_encode),
                cmocka_unit_test(test_permission_hint),
                cmocka_unit_test(test_kind_names),
        };

        if (argc < 2) {
                fprintf(stderr, "usage: %s FIXTURES_DIR\n", argv[0]);
                return EXIT_FAILURE;
        }
        fixtures = argv[1];
        return cmocka_run_group_tests(tests, NULL, NULL);
}
