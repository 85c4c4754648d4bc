/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <linux/perf_event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "pmu-event.h"
#include "pmu-ratio.h"

/* The contract's metric names (ARCHITECTURE.md §7), in catalogue order; and
 * the Arm PMUv3 common event numbers (Arm ARM D17.11 "PMU events and event
 * numbers", include/linux/perf/arm_pmuv3.h). */
static const struct {
        const char *name, *metric;
        uint16_t arm;
        const char *arm_sysfs;
} expect[_PMU_EVENT_MAX] = {
        { "cycles", "armprofd_cpu_cycles_total", 0x11, "cpu_cycles" },
        { "instructions", "armprofd_instructions_total", 0x08, "inst_retired" },
        { "l1d_cache", "armprofd_l1d_cache_accesses_total", 0x04, "l1d_cache" },
        { "l1d_cache_refill", "armprofd_l1d_cache_refills_total", 0x03, "l1d_cache_refill" },
        { "llc_read", "armprofd_llc_read_accesses_total", 0x36, "ll_cache_rd" },
        { "llc_read_miss", "armprofd_llc_read_misses_total", 0x37, "ll_cache_miss_rd" },
        { "l1d_tlb", "armprofd_l1d_tlb_accesses_total", 0x25, "l1d_tlb" },
        { "l1d_tlb_refill", "armprofd_l1d_tlb_refills_total", 0x05, "l1d_tlb_refill" },
        { "dtlb_walk", "armprofd_dtlb_walks_total", 0x34, "dtlb_walk" },
        { "branch_mispredicts", "armprofd_branch_mispredicts_total", 0x22, "br_mis_pred_retired" },
        { "stall_frontend", "armprofd_stall_frontend_cycles_total", 0x23, "stall_frontend" },
        { "stall_backend", "armprofd_stall_backend_cycles_total", 0x24, "stall_backend" },
        { "context_switches", "armprofd_context_switches_total", 0, NULL },
        { "cpu_migrations", "armprofd_cpu_migrations_total", 0, NULL },
        { "page_faults", "armprofd_page_faults_total", 0, NULL },
};

static void test_catalogue(void **state) {
        for (size_t i = 0; i < _PMU_EVENT_MAX; i++) {
                const struct pmu_event_def *d = pmu_event_get((enum pmu_event_id) i);

                assert_non_null(d);
                assert_int_equal(d->id, i);
                assert_string_equal(d->name, expect[i].name);
                assert_string_equal(d->metric, expect[i].metric);
                assert_true(strlen(d->help) > 10);
                assert_ptr_equal(pmu_event_by_name(expect[i].name), d);
                if (expect[i].arm_sysfs) {
                        assert_int_equal(d->class, PMU_EVENT_CLASS_HARDWARE);
                        assert_int_equal(d->arm[0].number, expect[i].arm);
                        assert_string_equal(d->arm[0].sysfs_name, expect[i].arm_sysfs);
                } else {
                        assert_int_equal(d->class, PMU_EVENT_CLASS_SOFTWARE);
                        assert_true(d->has_generic);
                        assert_int_equal(d->generic_type, PERF_TYPE_SOFTWARE);
                }
        }
        assert_null(pmu_event_get(_PMU_EVENT_MAX));
        assert_null(pmu_event_get(_PMU_EVENT_INVALID));
        assert_null(pmu_event_by_name("Cycles"));
        assert_null(pmu_event_by_name(NULL));
}

static void test_encodings(void **state) {
        const struct pmu_event_def *d;

        /* BR_MIS_PRED_RETIRED falls back to BR_MIS_PRED */
        d = pmu_event_get(PMU_EVENT_BRANCH_MISPREDICTS);
        assert_int_equal(d->arm[1].number, 0x10);
        assert_string_equal(d->arm[1].sysfs_name, "br_mis_pred");
        assert_int_equal(d->generic_config, PERF_COUNT_HW_BRANCH_MISSES);

        d = pmu_event_get(PMU_EVENT_PAGE_FAULTS);
        assert_int_equal(d->generic_config, PERF_COUNT_SW_PAGE_FAULTS);
        d = pmu_event_get(PMU_EVENT_CONTEXT_SWITCHES);
        assert_int_equal(d->generic_config, PERF_COUNT_SW_CONTEXT_SWITCHES);
        d = pmu_event_get(PMU_EVENT_CPU_MIGRATIONS);
        assert_int_equal(d->generic_config, PERF_COUNT_SW_CPU_MIGRATIONS);

        d = pmu_event_get(PMU_EVENT_INSTRUCTIONS);
        assert_int_equal(d->generic_type, PERF_TYPE_HARDWARE);
        assert_int_equal(d->generic_config, PERF_COUNT_HW_INSTRUCTIONS);
        /* LL read miss: cache id 2 (LL), op 0 (read), result 1 (miss) */
        d = pmu_event_get(PMU_EVENT_LLC_READ_MISS);
        assert_int_equal(d->generic_type, PERF_TYPE_HW_CACHE);
        assert_int_equal(d->generic_config, 0x10002);
        d = pmu_event_get(PMU_EVENT_L1D_TLB_REFILL);
        assert_false(d->has_generic);
}

static void test_list_parse(void **state) {
        enum pmu_event_id ids[_PMU_EVENT_MAX];
        const char *bad = NULL;
        size_t n = 99;
        const char *ok[] = { "instructions", "cycles", "page_faults", "cycles" };
        const char *unknown[] = { "cycles", "l2_cache", "page_faults" };
        const char *empty[] = { "" };

        assert_int_equal(pmu_event_list_parse(ok, ELEMENTSOF(ok), &bad, ids, &n), 0);
        assert_int_equal(n, 3); /* duplicate dropped */
        assert_int_equal(ids[0], PMU_EVENT_INSTRUCTIONS);
        assert_int_equal(ids[1], PMU_EVENT_CYCLES);
        assert_int_equal(ids[2], PMU_EVENT_PAGE_FAULTS);
        assert_null(bad);

        n = 99;
        assert_int_equal(pmu_event_list_parse(unknown, ELEMENTSOF(unknown), &bad, ids, &n), -EINVAL);
        assert_string_equal(bad, "l2_cache");
        assert_int_equal(n, 99);
        assert_int_equal(pmu_event_list_parse(empty, 1, &bad, ids, &n), -EINVAL);
        assert_string_equal(bad, "");
        assert_int_equal(pmu_event_list_parse(unknown, 2, NULL, ids, &n), -EINVAL);

        /* no list: every event, in catalogue order */
        assert_int_equal(pmu_event_list_parse(NULL, 0, &bad, ids, &n), 0);
        assert_int_equal(n, _PMU_EVENT_MAX);
        assert_int_equal(ids[_PMU_EVENT_MAX - 1], PMU_EVENT_PAGE_FAULTS);
}

struct ratio_case {
        const char *what;
        enum pmu_event_id num, den;
        bool num_counted, den_counted;
        uint64_t num_delta, den_delta;
        bool present;
        double value;
};

static void test_ratios(void **state) {
        static const struct ratio_case cases[] = {
                { "ipc 2.5", PMU_EVENT_INSTRUCTIONS, PMU_EVENT_CYCLES, true, true, 2500, 1000, true, 2.5 },
                { "zero cycles", PMU_EVENT_INSTRUCTIONS, PMU_EVENT_CYCLES, true, true, 2500, 0, false, 0 },
                { "cycles not counted", PMU_EVENT_INSTRUCTIONS, PMU_EVENT_CYCLES, true, false, 2500, 1000, false, 0 },
                { "instructions not counted", PMU_EVENT_INSTRUCTIONS, PMU_EVENT_CYCLES, false, true, 0, 1000, false, 0 },
                { "l1d 0.05", PMU_EVENT_L1D_CACHE_REFILL, PMU_EVENT_L1D_CACHE, true, true, 50, 1000, true, 0.05 },
                { "l1d no refills", PMU_EVENT_L1D_CACHE_REFILL, PMU_EVENT_L1D_CACHE, true, true, 0, 1000, true, 0.0 },
                { "llc 0.25", PMU_EVENT_LLC_READ_MISS, PMU_EVENT_LLC_READ, true, true, 1, 4, true, 0.25 },
                { "dtlb 0.5", PMU_EVENT_DTLB_WALK, PMU_EVENT_L1D_TLB, true, true, 3, 6, true, 0.5 },
                { "dtlb zero/zero", PMU_EVENT_DTLB_WALK, PMU_EVENT_L1D_TLB, true, true, 0, 0, false, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                bool counted[_PMU_EVENT_MAX] = {};
                uint64_t delta[_PMU_EVENT_MAX] = {};
                struct pmu_ratio r[_PMU_RATIO_MAX];
                bool found = false;

                counted[cases[i].num] = cases[i].num_counted;
                counted[cases[i].den] = cases[i].den_counted;
                delta[cases[i].num] = cases[i].num_delta;
                delta[cases[i].den] = cases[i].den_delta;
                pmu_ratio_compute(counted, delta, r);
                for (size_t k = 0; k < _PMU_RATIO_MAX; k++) {
                        const struct pmu_ratio_def *d = pmu_ratio_get((enum pmu_ratio_id) k);

                        if (d->numerator == cases[i].num && d->denominator == cases[i].den) {
                                found = true;
                                if (r[k].present != cases[i].present)
                                        fail_msg("%s: present=%d", cases[i].what, r[k].present);
                                if (r[k].present && r[k].value != cases[i].value)
                                        fail_msg("%s: %g", cases[i].what, r[k].value);
                        } else
                                assert_false(r[k].present); /* the others had nothing */
                }
                assert_true(found);
        }
        assert_string_equal(pmu_ratio_get(PMU_RATIO_IPC)->metric, "armprofd_instructions_per_cycle");
        assert_string_equal(pmu_ratio_get(PMU_RATIO_L1D_MISS)->metric, "armprofd_l1d_miss_ratio");
        assert_string_equal(pmu_ratio_get(PMU_RATIO_LLC_MISS)->metric, "armprofd_llc_miss_ratio");
        assert_string_equal(pmu_ratio_get(PMU_RATIO_DTLB_WALK)->metric, "armprofd_dtlb_walk_ratio");
        assert_null(pmu_ratio_get(_PMU_RATIO_MAX));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_catalogue),
                cmocka_unit_test(test_encodings),
                cmocka_unit_test(test_list_parse),
                cmocka_unit_test(test_ratios),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
