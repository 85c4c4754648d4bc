/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "pmu-group.h"

#define E(x) PMU_EVENT_##x

/* Expected plans written out as strings "cycles,instructions|l1d_cache|..."
 * so a failing case prints something readable. */
static void plan_to_string(const struct pmu_group_plan *p, char *buf, size_t len) {
        size_t off = 0;

        buf[0] = '\0';
        for (size_t g = 0; g < p->n_groups; g++) {
                off += (size_t) snprintf(buf + off, len - off, "%s%s", g ? "|" : "",
                                         p->groups[g].software ? "sw:" : "");
                for (size_t i = 0; i < p->groups[g].n; i++)
                        off += (size_t) snprintf(buf + off, len - off, "%s%s", i ? "," : "",
                                                 pmu_event_get(p->groups[g].ev[i])->name);
        }
}

struct plan_case {
        const char *what;
        enum pmu_event_id ids[_PMU_EVENT_MAX];
        size_t n;
        unsigned general;
        bool cycle_counter;
        const char *expect;
};

static const struct plan_case plans[] = {
        { "all 12 hw + 3 sw, PMUv3 default 6 + cycle counter",
          { E(CYCLES), E(INSTRUCTIONS), E(L1D_CACHE), E(L1D_CACHE_REFILL), E(LLC_READ), E(LLC_READ_MISS),
            E(L1D_TLB), E(L1D_TLB_REFILL), E(DTLB_WALK), E(BRANCH_MISPREDICTS), E(STALL_FRONTEND),
            E(STALL_BACKEND), E(CONTEXT_SWITCHES), E(CPU_MIGRATIONS), E(PAGE_FAULTS) },
          15, 6, true,
          "cycles,instructions,l1d_cache,l1d_cache_refill,llc_read,llc_read_miss,l1d_tlb"
          "|l1d_tlb_refill,dtlb_walk,branch_mispredicts,stall_frontend,stall_backend"
          "|sw:context_switches,cpu_migrations,page_faults" },
        { "same without a cycle counter (x86, 4)",
          { E(CYCLES), E(INSTRUCTIONS), E(L1D_CACHE), E(L1D_CACHE_REFILL), E(LLC_READ), E(LLC_READ_MISS),
            E(L1D_TLB), E(L1D_TLB_REFILL), E(DTLB_WALK), E(BRANCH_MISPREDICTS), E(STALL_FRONTEND),
            E(STALL_BACKEND), E(PAGE_FAULTS) },
          13, 4, false,
          "cycles,instructions,l1d_cache,l1d_cache_refill|llc_read,llc_read_miss,l1d_tlb,l1d_tlb_refill"
          "|dtlb_walk,branch_mispredicts,stall_frontend,stall_backend|sw:page_faults" },
        { "cycles configured last still leads the first group",
          { E(INSTRUCTIONS), E(L1D_CACHE), E(CYCLES) }, 3, 1, true,
          "cycles,instructions|l1d_cache" },
        { "one counter: one event per group",
          { E(PAGE_FAULTS), E(L1D_CACHE), E(L1D_CACHE_REFILL), E(CONTEXT_SWITCHES) }, 4, 1, false,
          "l1d_cache|l1d_cache_refill|sw:page_faults,context_switches" },
        { "software only", { E(PAGE_FAULTS), E(CPU_MIGRATIONS) }, 2, 0, false,
          "sw:page_faults,cpu_migrations" },
        { "exactly full", { E(CYCLES), E(INSTRUCTIONS), E(L1D_CACHE) }, 3, 2, true,
          "cycles,instructions,l1d_cache" },
        { "one over", { E(CYCLES), E(INSTRUCTIONS), E(L1D_CACHE), E(L1D_TLB) }, 4, 2, true,
          "cycles,instructions,l1d_cache|l1d_tlb" },
        { "nothing", {}, 0, 6, true, "" },
};

static void test_plan(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(plans); i++) {
                struct pmu_group_plan p;
                char buf[1024];

                assert_int_equal(pmu_group_plan(plans[i].ids, plans[i].n, plans[i].general,
                                                plans[i].cycle_counter, &p), 0);
                plan_to_string(&p, buf, sizeof(buf));
                if (!streq(buf, plans[i].expect))
                        fail_msg("%s:\n got    %s\n expect %s", plans[i].what, buf, plans[i].expect);
        }
}

/* Group sizes for every budget from 1 to 12: no hardware group exceeds the
 * budget (+1 for the cycles group), every event lands exactly once. */
static void test_plan_sizes(void **state) {
        enum pmu_event_id all[_PMU_EVENT_MAX];

        for (size_t i = 0; i < _PMU_EVENT_MAX; i++)
                all[i] = (enum pmu_event_id) i;
        for (unsigned general = 1; general <= 12; general++)
                for (int cc = 0; cc <= 1; cc++) {
                        struct pmu_group_plan p;
                        unsigned seen[_PMU_EVENT_MAX] = {};
                        size_t sw_groups = 0;

                        assert_int_equal(pmu_group_plan(all, _PMU_EVENT_MAX, general, cc, &p), 0);
                        for (size_t g = 0; g < p.n_groups; g++) {
                                size_t cap = general + (cc && g == 0 ? 1 : 0);

                                assert_true(p.groups[g].n > 0);
                                if (p.groups[g].software) {
                                        sw_groups++;
                                        assert_int_equal(p.groups[g].n, 3);
                                        assert_int_equal(g, p.n_groups - 1);
                                } else
                                        assert_true(p.groups[g].n <= cap);
                                for (size_t k = 0; k < p.groups[g].n; k++) {
                                        const struct pmu_event_def *d = pmu_event_get(p.groups[g].ev[k]);

                                        seen[p.groups[g].ev[k]]++;
                                        assert_int_equal(d->class == PMU_EVENT_CLASS_SOFTWARE,
                                                         p.groups[g].software);
                                }
                        }
                        assert_int_equal(sw_groups, 1);
                        for (size_t i = 0; i < _PMU_EVENT_MAX; i++)
                                assert_int_equal(seen[i], 1);
                        /* 12 hardware events: ceil((12 - cc) / general) groups */
                        assert_int_equal(p.n_groups - 1, (12 - (unsigned) cc + general - 1) / general);
                }
}

static void test_plan_invalid(void **state) {
        struct pmu_group_plan p;
        enum pmu_event_id dup[] = { E(CYCLES), E(CYCLES) };
        enum pmu_event_id bad[] = { (enum pmu_event_id) _PMU_EVENT_MAX };
        enum pmu_event_id hw[] = { E(INSTRUCTIONS) };

        assert_int_equal(pmu_group_plan(dup, 2, 6, true, &p), -EINVAL);
        assert_int_equal(pmu_group_plan(bad, 1, 6, true, &p), -EINVAL);
        assert_int_equal(pmu_group_plan(hw, 1, 0, true, &p), -EINVAL);
        assert_int_equal(pmu_group_plan(NULL, 1, 6, true, &p), -EINVAL);
}

static void test_parse_read(void **state) {
        uint64_t buf[3 + 2 * 3] = { 3, 1000, 400, 11, 101, 22, 102, 33, 103 };
        struct pmu_group_reading r;
        uint8_t unaligned[sizeof(buf) + 1];

        assert_int_equal(pmu_group_parse_read(buf, sizeof(buf), &r), 0);
        assert_int_equal(r.n, 3);
        assert_int_equal(r.enabled, 1000);
        assert_int_equal(r.running, 400);
        assert_int_equal(r.value[0], 11);
        assert_int_equal(r.id[0], 101);
        assert_int_equal(r.value[2], 33);
        assert_int_equal(r.id[2], 103);

        memcpy(unaligned + 1, buf, sizeof(buf));
        assert_int_equal(pmu_group_parse_read(unaligned + 1, sizeof(buf), &r), 0);
        assert_int_equal(r.id[1], 102);

        /* short, long, nr inconsistent with length, nr too large */
        assert_int_equal(pmu_group_parse_read(buf, 16, &r), -EBADMSG);
        assert_int_equal(pmu_group_parse_read(buf, sizeof(buf) - 8, &r), -EBADMSG);
        buf[0] = 2;
        assert_int_equal(pmu_group_parse_read(buf, sizeof(buf), &r), -EBADMSG);
        buf[0] = UINT64_MAX;
        assert_int_equal(pmu_group_parse_read(buf, sizeof(buf), &r), -E2BIG);
        buf[0] = 0;
        assert_int_equal(pmu_group_parse_read(buf, 24, &r), 0);
        assert_int_equal(r.n, 0);
        assert_int_equal(PMU_GROUP_READ_SIZE(3), sizeof(buf));
}

struct scale_case {
        uint64_t value, enabled, running;
        int r;
        uint64_t expect;
};

static const struct scale_case scales[] = {
        { 1000, 100, 100, 0, 1000 },                      /* not multiplexed */
        { 1000, 100, 50, 0, 2000 },                       /* ran half the time */
        { 1000, 300, 100, 0, 3000 },
        { 7, 3, 2, 0, 10 },                               /* 10.5 truncated */
        { 1000, 100, 0, -ENODATA, 0 },                    /* not counted: no value */
        { 0, 0, 0, -ENODATA, 0 },
        { 1000, 100, 200, 0, 1000 },                      /* running > enabled: never scale down */
        /* 64-bit product would overflow: 2^62 * 2^40 / 2^39 = 2^63 */
        { UINT64_C(1) << 62, UINT64_C(1) << 40, UINT64_C(1) << 39, 0, UINT64_C(1) << 63 },
        { UINT64_MAX, 3, 1, 0, UINT64_MAX },              /* saturates */
        { UINT64_C(123456789012345), UINT64_C(10000000000), UINT64_C(9999999999), 0,
          UINT64_C(123456789024690) },
};

static void test_scale(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(scales); i++) {
                uint64_t v = 0xdeadbeef;
                int r = pmu_group_scale(scales[i].value, scales[i].enabled, scales[i].running, &v);

                if (r != scales[i].r)
                        fail_msg("case %zu: r=%d expect %d", i, r, scales[i].r);
                if (r == 0 && v != scales[i].expect)
                        fail_msg("case %zu: %llu expect %llu", i, (unsigned long long) v,
                                 (unsigned long long) scales[i].expect);
                if (r < 0)
                        assert_int_equal(v, 0xdeadbeef); /* untouched */
        }
}

static void test_accumulate(void **state) {
        struct pmu_group_time t = {};
        struct pmu_group_counter c = {};
        uint64_t de, dr;

        /* interval 1: 1000 ns enabled, all running, 500 raw */
        pmu_group_time_advance(&t, 1000, 1000, &de, &dr);
        assert_int_equal(de, 1000);
        assert_int_equal(dr, 1000);
        pmu_group_counter_advance(&c, 500, de, dr);
        assert_true(c.counted);
        assert_int_equal(c.delta, 500);
        assert_int_equal(c.total, 500);

        /* interval 2: multiplexed, ran 250 of 1000 ns, raw +100 -> 400 */
        pmu_group_time_advance(&t, 2000, 1250, &de, &dr);
        assert_int_equal(de, 1000);
        assert_int_equal(dr, 250);
        pmu_group_counter_advance(&c, 600, de, dr);
        assert_true(c.counted);
        assert_int_equal(c.delta, 400);
        assert_int_equal(c.total, 900);

        /* interval 3: not scheduled at all: no value, total unchanged */
        pmu_group_time_advance(&t, 3000, 1250, &de, &dr);
        assert_int_equal(dr, 0);
        pmu_group_counter_advance(&c, 600, de, dr);
        assert_false(c.counted);
        assert_int_equal(c.delta, 0);
        assert_int_equal(c.total, 900);
        assert_int_equal(t.enabled_ns_total, 3000);
        assert_int_equal(t.running_ns_total, 1250);

        /* reopen (hotplug, re-split): the new fd starts at 0 again; the
         * total must go on from 900, not drop to the new raw value */
        pmu_group_time_reopen(&t);
        pmu_group_counter_reopen(&c);
        pmu_group_time_advance(&t, 500, 500, &de, &dr);
        assert_int_equal(de, 500);
        pmu_group_counter_advance(&c, 70, de, dr);
        assert_true(c.counted);
        assert_int_equal(c.delta, 70);
        assert_int_equal(c.total, 970);
        assert_int_equal(t.enabled_ns_total, 3500);
        assert_int_equal(t.running_ns_total, 1750);

        /* a raw value that goes backwards without a reopen is a new fd:
         * counted from zero, the total never decreases */
        pmu_group_time_advance(&t, 1000, 1000, &de, &dr);
        pmu_group_counter_advance(&c, 30, de, dr);
        assert_int_equal(c.delta, 30);
        assert_int_equal(c.total, 1000);

        /* saturation instead of wrap-around */
        c.total = UINT64_MAX - 5;
        pmu_group_time_advance(&t, 2000, 2000, &de, &dr);
        pmu_group_counter_advance(&c, 1030, de, dr);
        assert_int_equal(c.total, UINT64_MAX);
}

static void test_time_running_clamped(void **state) {
        struct pmu_group_time t = {};
        uint64_t de, dr;

        pmu_group_time_advance(&t, 100, 150, &de, &dr);
        assert_int_equal(de, 100);
        assert_int_equal(dr, 100);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_plan),
                cmocka_unit_test(test_plan_sizes),
                cmocka_unit_test(test_plan_invalid),
                cmocka_unit_test(test_parse_read),
                cmocka_unit_test(test_scale),
                cmocka_unit_test(test_accumulate),
                cmocka_unit_test(test_time_running_clamped),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
