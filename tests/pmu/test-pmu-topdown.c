/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Top-down discovery and formulas on fixture sysfs trees (fixtures/topdown-*,
 * one per core: MIDR files, the PMU's events/, caps/slots, format/).
 *
 * Discovery: each fixture's core gets the method and the event numbers that
 * Linux's metric files name for it, written here from the Arm ARM / kernel
 * headers (include/linux/perf/arm_pmuv3.h, arch/x86/events/intel/core.c),
 * not read back from our tables.
 *
 * Formulas: golden counts whose fractions were worked out by hand from the
 * published formulas (the comment above each case shows the arithmetic);
 * the code must give those decimals within 1e-9, and level 1 must sum to 1.
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

#include "pmu-bandwidth.h"
#include "pmu-sysfs.h"
#include "pmu-topdown.h"

#define EPS 1e-9

static const char *fixtures;

struct fixture {
        struct pmu_sysfs *sysfs;
        char root[1024];
};

static void load(struct fixture *f, const char *name) {
        snprintf(f->root, sizeof(f->root), "%s/%s", fixtures, name);
        f->sysfs = NULL;
        assert_int_equal(pmu_sysfs_discover(f->root, &f->sysfs), 0);
}

static void plan(struct fixture *f, const char *name, unsigned cpu, unsigned general, struct pmu_topdown_plan *p) {
        char proc[sizeof(f->root) + 8];

        load(f, name);
        snprintf(proc, sizeof(proc), "%s/proc", f->root);
        assert_int_equal(pmu_topdown_plan_cpu(f->root, proc, cpu, pmu_sysfs_pmu_for_cpu(f->sysfs, cpu), general, true,
                                              p),
                         0);
        f->sysfs = pmu_sysfs_free(f->sysfs);
}

/* The plan's members, in order, as (input, config) pairs. */
static void assert_members(const struct pmu_topdown_plan *p, const enum pmu_topdown_input *in, const uint64_t *config,
                           size_t n) {
        assert_int_equal(p->n, n);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(p->in[i], in[i]);
                assert_int_equal(p->config[i], config[i]);
        }
}

static void assert_close(double got, double want) {
        if (got < want - EPS || got > want + EPS)
                fail_msg("got %.12f, want %.12f", got, want);
}

static void assert_level1(const struct pmu_topdown *t, double fe, double bad, double ret, double be) {
        assert_true(t->present[PMU_TOPDOWN_FRONTEND_BOUND]);
        assert_true(t->present[PMU_TOPDOWN_BAD_SPECULATION]);
        assert_true(t->present[PMU_TOPDOWN_RETIRING]);
        assert_true(t->present[PMU_TOPDOWN_BACKEND_BOUND]);
        assert_close(t->value[PMU_TOPDOWN_FRONTEND_BOUND], fe);
        assert_close(t->value[PMU_TOPDOWN_BAD_SPECULATION], bad);
        assert_close(t->value[PMU_TOPDOWN_RETIRING], ret);
        assert_close(t->value[PMU_TOPDOWN_BACKEND_BOUND], be);
        assert_close(t->value[PMU_TOPDOWN_FRONTEND_BOUND] + t->value[PMU_TOPDOWN_BAD_SPECULATION] +
                             t->value[PMU_TOPDOWN_RETIRING] + t->value[PMU_TOPDOWN_BACKEND_BOUND],
                     1.0);
        assert_false(t->present[PMU_TOPDOWN_FRONTEND_STALLED_CYCLES]);
}

/* PMUv3 common event numbers, include/linux/perf/arm_pmuv3.h */
#define CPU_CYCLES 0x11
#define BR_MIS_PRED 0x10
#define STALL_FRONTEND 0x23
#define STALL_BACKEND 0x24
#define OP_RETIRED 0x3a
#define OP_SPEC 0x3b
#define STALL_SLOT_BACKEND 0x3d
#define STALL_SLOT_FRONTEND 0x3e
#define STALL_SLOT 0x3f
#define STALL_FRONTEND_FLUSH 0x8162 /* common-and-microarch.json */

static const enum pmu_topdown_input slots_in[] = { PMU_TD_CPU_CYCLES,         PMU_TD_STALL_SLOT,
                                                   PMU_TD_STALL_SLOT_FRONTEND, PMU_TD_STALL_SLOT_BACKEND,
                                                   PMU_TD_OP_RETIRED,          PMU_TD_OP_SPEC };
static const uint64_t slots_cfg[] = { CPU_CYCLES, STALL_SLOT, STALL_SLOT_FRONTEND, STALL_SLOT_BACKEND, OP_RETIRED, OP_SPEC };

static void test_n1_partial(void **state) {
        static const enum pmu_topdown_input in[] = { PMU_TD_CPU_CYCLES, PMU_TD_STALL_FRONTEND, PMU_TD_STALL_BACKEND };
        static const uint64_t cfg[] = { CPU_CYCLES, STALL_FRONTEND, STALL_BACKEND };
        struct fixture f;
        struct pmu_topdown_plan p;
        struct pmu_topdown t;
        uint64_t d[_PMU_TD_INPUT_MAX] = {};

        plan(&f, "topdown-n1", 1, 6, &p);
        assert_int_equal(p.method, PMU_TOPDOWN_ARM_CYCLES);
        assert_string_equal(p.core, "neoverse-n1 r3p1");
        assert_false(pmu_topdown_method_complete(p.method));
        assert_non_null(strstr(p.note, "level 1 is partial"));
        assert_members(&p, in, cfg, 3);
        assert_true(pmu_topdown_plan_computes(&p, PMU_TOPDOWN_FRONTEND_STALLED_CYCLES));
        assert_false(pmu_topdown_plan_computes(&p, PMU_TOPDOWN_RETIRING));

        /* neoverse-n1/metrics.json: 250000 / 1000000 = 0.25, 400000 / 1000000 = 0.4 */
        d[PMU_TD_CPU_CYCLES] = 1000000;
        d[PMU_TD_STALL_FRONTEND] = 250000;
        d[PMU_TD_STALL_BACKEND] = 400000;
        pmu_topdown_compute(&p, d, &t);
        assert_close(t.value[PMU_TOPDOWN_FRONTEND_STALLED_CYCLES], 0.25);
        assert_close(t.value[PMU_TOPDOWN_BACKEND_STALLED_CYCLES], 0.4);
        for (int m = PMU_TOPDOWN_FRONTEND_BOUND; m <= PMU_TOPDOWN_BACKEND_BOUND; m++)
                assert_false(t.present[m]); /* not invented */
}

static void test_v1(void **state) {
        static const enum pmu_topdown_input in[] = { PMU_TD_CPU_CYCLES, PMU_TD_STALL_SLOT,     PMU_TD_STALL_SLOT_FRONTEND,
                                                     PMU_TD_STALL_SLOT_BACKEND, PMU_TD_OP_RETIRED, PMU_TD_OP_SPEC,
                                                     PMU_TD_BR_MIS_PRED };
        static const uint64_t cfg[] = { CPU_CYCLES, STALL_SLOT, STALL_SLOT_FRONTEND, STALL_SLOT_BACKEND,
                                        OP_RETIRED, OP_SPEC,    BR_MIS_PRED };
        struct fixture f;
        struct pmu_topdown_plan p;
        struct pmu_topdown t;
        uint64_t d[_PMU_TD_INPUT_MAX] = {};

        plan(&f, "topdown-v1", 0, 6, &p);
        assert_int_equal(p.method, PMU_TOPDOWN_ARM_V1);
        assert_string_equal(p.core, "neoverse-v1 r1p1");
        assert_int_equal(p.slots, 8);
        assert_members(&p, in, cfg, 7);

        /* C = 1e6, S = 3.2e6, S_FE = 1.2e6, S_BE = 2.0e6, OR = 3.6e6, OS = 4.0e6, BMP = 2e4
         * FE  = 1.2e6 / 8e6 - 4 * 2e4 / 1e6 = 0.15 - 0.08 = 0.07
         * BAD = (1 - 0.9) * (1 - 3.2e6 / 8e6) + 0.08 = 0.1 * 0.6 + 0.08 = 0.14
         * RET = 0.9 * 0.6 = 0.54
         * BE  = 2.0e6 / 8e6 = 0.25 */
        d[PMU_TD_CPU_CYCLES] = 1000000;
        d[PMU_TD_STALL_SLOT] = 3200000;
        d[PMU_TD_STALL_SLOT_FRONTEND] = 1200000;
        d[PMU_TD_STALL_SLOT_BACKEND] = 2000000;
        d[PMU_TD_OP_RETIRED] = 3600000;
        d[PMU_TD_OP_SPEC] = 4000000;
        d[PMU_TD_BR_MIS_PRED] = 20000;
        pmu_topdown_compute(&p, d, &t);
        assert_level1(&t, 0.07, 0.14, 0.54, 0.25);

        /* Six general counters plus the cycle counter: with four it does not fit, and is not split. */
        plan(&f, "topdown-v1", 0, 4, &p);
        assert_int_equal(p.method, PMU_TOPDOWN_NONE);
        assert_int_equal(p.n, 0);
        assert_non_null(strstr(p.note, "needs 6 general counters"));
}

/* The same raw counts on both N2 revisions: r0p0 subtracts one slot per
 * cycle from STALL_SLOT and STALL_SLOT_FRONTEND, r0p3 does not.
 * C = 1e6, S = 2.5e6, S_FE = 1.5e6, S_BE = 1.0e6, OR = 2.8e6, OS = 3.5e6 (OR/OS = 0.8), 5 slots */
static void n2_counts(uint64_t d[static _PMU_TD_INPUT_MAX]) {
        d[PMU_TD_CPU_CYCLES] = 1000000;
        d[PMU_TD_STALL_SLOT] = 2500000;
        d[PMU_TD_STALL_SLOT_FRONTEND] = 1500000;
        d[PMU_TD_STALL_SLOT_BACKEND] = 1000000;
        d[PMU_TD_OP_RETIRED] = 2800000;
        d[PMU_TD_OP_SPEC] = 3500000;
}

static void test_n2_r0p0(void **state) {
        struct fixture f;
        struct pmu_topdown_plan p;
        struct pmu_topdown t;
        uint64_t d[_PMU_TD_INPUT_MAX] = {};

        plan(&f, "topdown-n2-r0p0", 1, 6, &p);
        assert_int_equal(p.method, PMU_TOPDOWN_ARM_SLOTS);
        assert_string_equal(p.core, "neoverse-n2 r0p0");
        assert_int_equal(p.slots, 5);
        assert_true(p.n2_stall_slot_quirk);
        assert_members(&p, slots_in, slots_cfg, 6);

        /* FE  = (1.5e6 - 1e6) / 5e6 = 0.1
         * BAD = (1 - 0.8) * (1 - (2.5e6 - 1e6) / 5e6) = 0.2 * 0.7 = 0.14
         * RET = 0.8 * 0.7 = 0.56
         * BE  = 1.0e6 / 5e6 = 0.2 */
        n2_counts(d);
        pmu_topdown_compute(&p, d, &t);
        assert_level1(&t, 0.1, 0.14, 0.56, 0.2);
}

static void test_n2_r0p3(void **state) {
        struct fixture f;
        struct pmu_topdown_plan p;
        struct pmu_topdown t;
        uint64_t d[_PMU_TD_INPUT_MAX] = {};

        plan(&f, "topdown-n2-r0p3", 0, 6, &p);
        assert_int_equal(p.method, PMU_TOPDOWN_ARM_SLOTS);
        assert_string_equal(p.core, "neoverse-n2 r0p3");
        assert_false(p.n2_stall_slot_quirk);
        assert_members(&p, slots_in, slots_cfg, 6);

        /* FE  = 1.5e6 / 5e6 = 0.3
         * BAD = (1 - 0.8) * (1 - 2.5e6 / 5e6) = 0.2 * 0.5 = 0.1
         * RET = 0.8 * 0.5 = 0.4
         * BE  = 1.0e6 / 5e6 = 0.2 */
        n2_counts(d);
        pmu_topdown_compute(&p, d, &t);
        assert_level1(&t, 0.3, 0.1, 0.4, 0.2);
}

static void test_v2(void **state) {
        struct fixture f;
        struct pmu_topdown_plan p;
        struct pmu_topdown t;
        uint64_t d[_PMU_TD_INPUT_MAX] = {};

        plan(&f, "topdown-v2", 0, 6, &p);
        assert_int_equal(p.method, PMU_TOPDOWN_ARM_SLOTS);
        assert_string_equal(p.core, "neoverse-v2 r0p1");
        assert_int_equal(p.slots, 8);
        assert_false(p.n2_stall_slot_quirk);
        assert_members(&p, slots_in, slots_cfg, 6);

        /* C = 1e6, S = 4e6, S_FE = 1.6e6, S_BE = 2.4e6, OR = 3e6, OS = 4e6, 8 slots
         * FE = 1.6e6 / 8e6 = 0.2; BAD = 0.25 * (1 - 0.5) = 0.125; RET = 0.75 * 0.5 = 0.375; BE = 0.3 */
        d[PMU_TD_CPU_CYCLES] = 1000000;
        d[PMU_TD_STALL_SLOT] = 4000000;
        d[PMU_TD_STALL_SLOT_FRONTEND] = 1600000;
        d[PMU_TD_STALL_SLOT_BACKEND] = 2400000;
        d[PMU_TD_OP_RETIRED] = 3000000;
        d[PMU_TD_OP_SPEC] = 4000000;
        pmu_topdown_compute(&p, d, &t);
        assert_level1(&t, 0.2, 0.125, 0.375, 0.3);
}

static void test_v3(void **state) {
        static const enum pmu_topdown_input in[] = { PMU_TD_CPU_CYCLES,         PMU_TD_STALL_SLOT,
                                                     PMU_TD_STALL_SLOT_FRONTEND, PMU_TD_STALL_SLOT_BACKEND,
                                                     PMU_TD_OP_RETIRED,          PMU_TD_OP_SPEC,
                                                     PMU_TD_STALL_FRONTEND_FLUSH };
        static const uint64_t cfg[] = { CPU_CYCLES, STALL_SLOT, STALL_SLOT_FRONTEND, STALL_SLOT_BACKEND,
                                        OP_RETIRED, OP_SPEC,    STALL_FRONTEND_FLUSH };
        struct fixture f;
        struct pmu_topdown_plan p;
        struct pmu_topdown t;
        uint64_t d[_PMU_TD_INPUT_MAX] = {};

        plan(&f, "topdown-v3", 0, 6, &p);
        assert_int_equal(p.method, PMU_TOPDOWN_ARM_V3);
        assert_string_equal(p.core, "neoverse-v3 r0p0");
        assert_int_equal(p.slots, 10);
        assert_members(&p, in, cfg, 7);

        /* C = 1e6, S = 5e6, S_FE = 2e6, S_BE = 3e6, OR = 4.5e6, OS = 5e6, FLUSH = 5e4
         * FE  = 2e6 / 10e6 - 5e4 / 1e6 = 0.2 - 0.05 = 0.15
         * BAD = (1 - 0.5) * (1 - 0.9) + 0.05 = 0.1
         * RET = 0.9 * 0.5 = 0.45; BE = 3e6 / 10e6 = 0.3 */
        d[PMU_TD_CPU_CYCLES] = 1000000;
        d[PMU_TD_STALL_SLOT] = 5000000;
        d[PMU_TD_STALL_SLOT_FRONTEND] = 2000000;
        d[PMU_TD_STALL_SLOT_BACKEND] = 3000000;
        d[PMU_TD_OP_RETIRED] = 4500000;
        d[PMU_TD_OP_SPEC] = 5000000;
        d[PMU_TD_STALL_FRONTEND_FLUSH] = 50000;
        pmu_topdown_compute(&p, d, &t);
        assert_level1(&t, 0.15, 0.1, 0.45, 0.3);
}

/* Intel perf metrics: slots leads, topdown-* are umask 0x80.. of event 0
 * (arch/x86/events/intel/core.c), placed by format/umask "config:8-15". */
static const enum pmu_topdown_input intel_in[] = { PMU_TD_SLOTS,     PMU_TD_RETIRING,      PMU_TD_BAD_SPEC,
                                                   PMU_TD_FE_BOUND,  PMU_TD_BE_BOUND,      PMU_TD_HEAVY_OPS,
                                                   PMU_TD_BR_MISPREDICT, PMU_TD_FETCH_LAT, PMU_TD_MEM_BOUND };
static const uint64_t intel_cfg[] = { 0x0400, 0x8000, 0x8100, 0x8200, 0x8300, 0x8400, 0x8500, 0x8600, 0x8700 };

static void intel_counts(uint64_t d[static _PMU_TD_INPUT_MAX]) {
        /* The metric events sum to 1e7; slots reads 1.2e7 and is no denominator. */
        d[PMU_TD_SLOTS] = 12000000;
        d[PMU_TD_RETIRING] = 3000000;
        d[PMU_TD_BAD_SPEC] = 1000000;
        d[PMU_TD_FE_BOUND] = 2000000;
        d[PMU_TD_BE_BOUND] = 4000000;
        d[PMU_TD_HEAVY_OPS] = 500000;
        d[PMU_TD_BR_MISPREDICT] = 800000;
        d[PMU_TD_FETCH_LAT] = 1500000;
        d[PMU_TD_MEM_BOUND] = 2500000;
}

static void assert_intel_level2(const struct pmu_topdown *t) {
        /* spr-metrics.json, each over the sum 1e7 of the four level-1 events */
        assert_close(t->value[PMU_TOPDOWN_HEAVY_OPERATIONS], 0.05);
        assert_close(t->value[PMU_TOPDOWN_LIGHT_OPERATIONS], 0.25);   /* 0.3 - 0.05 */
        assert_close(t->value[PMU_TOPDOWN_BRANCH_MISPREDICTS], 0.08);
        assert_close(t->value[PMU_TOPDOWN_MACHINE_CLEARS], 0.02);     /* 0.1 - 0.08 */
        assert_close(t->value[PMU_TOPDOWN_FETCH_LATENCY], 0.15);
        assert_close(t->value[PMU_TOPDOWN_FETCH_BANDWIDTH], 0.05);    /* 0.2 - 0.15 */
        assert_close(t->value[PMU_TOPDOWN_MEMORY_BOUND], 0.25);
        assert_close(t->value[PMU_TOPDOWN_CORE_BOUND], 0.15);         /* 0.4 - 0.25 */
}

static void test_sapphire_rapids(void **state) {
        struct fixture f;
        struct pmu_topdown_plan p;
        struct pmu_topdown t;
        uint64_t d[_PMU_TD_INPUT_MAX] = {};

        /* Perf metrics take no general counter: it plans even with one. */
        plan(&f, "topdown-sapphire-rapids", 2, 1, &p);
        assert_int_equal(p.method, PMU_TOPDOWN_INTEL_PERF_METRICS);
        assert_string_equal(p.core, "sapphire_rapids");
        assert_int_equal(p.type, 4);
        assert_members(&p, intel_in, intel_cfg, 9);
        assert_true(pmu_topdown_plan_computes(&p, PMU_TOPDOWN_MEMORY_BOUND));

        /* 2e6 / 1e7, 1e6 / 1e7, 3e6 / 1e7, 4e6 / 1e7 */
        intel_counts(d);
        pmu_topdown_compute(&p, d, &t);
        assert_level1(&t, 0.2, 0.1, 0.3, 0.4);
        assert_intel_level2(&t);
}

/* Before perf metrics (Skylake, Hyper-Threading on): topdown-total-slots & co. with
 * their .scale (2 with HT), perf stat --topdown's formulas. */
static void test_skylake_legacy(void **state) {
        static const enum pmu_topdown_input in[] = { PMU_TD_TOTAL_SLOTS, PMU_TD_SLOTS_ISSUED, PMU_TD_SLOTS_RETIRED,
                                                     PMU_TD_FETCH_BUBBLES, PMU_TD_RECOVERY_BUBBLES };
        /* event | umask << 8 | any << 21 | cmask << 24 (format/) */
        static const uint64_t cfg[] = { 0x20003c, 0x010e, 0x02c2, 0x019c, 0x120030d };
        struct fixture f;
        struct pmu_topdown_plan p;
        struct pmu_topdown t;
        uint64_t d[_PMU_TD_INPUT_MAX] = {};

        /* Four general counters: topdown-total-slots goes to fixed counter 1. */
        plan(&f, "topdown-skylake", 2, 4, &p);
        assert_int_equal(p.method, PMU_TOPDOWN_INTEL_LEGACY);
        assert_string_equal(p.core, "skylake");
        assert_members(&p, in, cfg, 5);
        assert_close(p.scale[PMU_TD_TOTAL_SLOTS], 2);
        assert_close(p.scale[PMU_TD_RECOVERY_BUBBLES], 2);
        assert_close(p.scale[PMU_TD_SLOTS_ISSUED], 1);

        /* total slots 1e6 x 2 = 2e6; FE 0.4e6/2e6 = 0.2; BAD (1.2e6 - 1.0e6 + 0.05e6 x 2)/2e6 = 0.15;
         * RET 1.0e6/2e6 = 0.5; BE 1 - 0.85 = 0.15 */
        d[PMU_TD_TOTAL_SLOTS] = 1000000;
        d[PMU_TD_SLOTS_ISSUED] = 1200000;
        d[PMU_TD_SLOTS_RETIRED] = 1000000;
        d[PMU_TD_FETCH_BUBBLES] = 400000;
        d[PMU_TD_RECOVERY_BUBBLES] = 50000;
        pmu_topdown_compute(&p, d, &t);
        assert_level1(&t, 0.2, 0.15, 0.5, 0.15);

        plan(&f, "topdown-skylake", 0, 3, &p);
        assert_int_equal(p.method, PMU_TOPDOWN_NONE);
        assert_non_null(strstr(p.note, "needs 4 general counters and cpu has 3"));
}

static void test_alderlake_hybrid(void **state) {
        struct fixture f;
        struct pmu_topdown_plan p;
        struct pmu_topdown t;
        uint64_t d[_PMU_TD_INPUT_MAX] = {};

        /* P-core: cpu_core, type 4, perf metrics with level 2 */
        plan(&f, "topdown-alderlake-hybrid", 3, 4, &p);
        assert_int_equal(p.method, PMU_TOPDOWN_INTEL_PERF_METRICS);
        assert_int_equal(p.type, 4);
        assert_members(&p, intel_in, intel_cfg, 9);
        intel_counts(d);
        pmu_topdown_compute(&p, d, &t);
        assert_level1(&t, 0.2, 0.1, 0.3, 0.4);
        assert_intel_level2(&t);

        /* E-core: cpu_atom lists topdown-* as ordinary events (0xc2, 0x71..)
         * but no slots: those are not perf metrics and are not taken. */
        plan(&f, "topdown-alderlake-hybrid", 5, 4, &p);
        assert_int_equal(p.method, PMU_TOPDOWN_NONE);
        assert_int_equal(p.n, 0);
        assert_non_null(strstr(p.note, "cpu_atom has no `slots` event"));
}

/* AMD raw configs: event bits 0-7 and 32-35 (0x1a0: 0xa0 and 1 << 32), umask 8-15 (arch/x86/include/asm/perf_event.h);
 * codes from amdzen4/other.json and core.json. */
static const enum pmu_topdown_input amd_in[] = { PMU_TD_AMD_NOT_HALTED_CYC, PMU_TD_AMD_NO_OPS_FROM_FRONTEND,
                                                 PMU_TD_AMD_BACKEND_STALLS, PMU_TD_AMD_SMT_CONTENTION,
                                                 PMU_TD_AMD_OP_DISP_ALL,    PMU_TD_AMD_RET_OPS };
static const uint64_t amd_cfg[] = { 0x76, 0x1000000a0 | 0x0100, 0x1000000a0 | 0x1e00, 0x1000000a0 | 0x6000,
                                    0x07aa, 0xc1 };

static void assert_amd_level1(const struct pmu_topdown *t, double fe, double bad, double ret, double be, double smt) {
        assert_true(t->present[PMU_TOPDOWN_SMT_CONTENTION]);
        assert_close(t->value[PMU_TOPDOWN_FRONTEND_BOUND], fe);
        assert_close(t->value[PMU_TOPDOWN_BAD_SPECULATION], bad);
        assert_close(t->value[PMU_TOPDOWN_RETIRING], ret);
        assert_close(t->value[PMU_TOPDOWN_BACKEND_BOUND], be);
        assert_close(t->value[PMU_TOPDOWN_SMT_CONTENTION], smt);
        assert_close(t->value[PMU_TOPDOWN_FRONTEND_BOUND] + t->value[PMU_TOPDOWN_BAD_SPECULATION] +
                             t->value[PMU_TOPDOWN_RETIRING] + t->value[PMU_TOPDOWN_BACKEND_BOUND] +
                             t->value[PMU_TOPDOWN_SMT_CONTENTION],
                     1.0);
}

static void test_zen4(void **state) {
        struct fixture f;
        struct pmu_topdown_plan p;
        struct pmu_topdown t;
        uint64_t d[_PMU_TD_INPUT_MAX] = {};

        /* Family 25 model 0x11 (Genoa): amdzen4 by mapfile.csv; six general counters. */
        plan(&f, "topdown-zen4", 1, 6, &p);
        assert_int_equal(p.method, PMU_TOPDOWN_AMD_PIPELINE);
        assert_string_equal(p.core, "zen4 family 0x19 model 0x11");
        assert_int_equal(p.slots, 6);
        assert_members(&p, amd_in, amd_cfg, 6);
        assert_true(pmu_topdown_plan_computes(&p, PMU_TOPDOWN_SMT_CONTENTION));

        /* total_dispatch_slots = 6 * 1e6; FE 1.2e6/6e6 = 0.2, BE 1.8e6/6e6 = 0.3, SMT 0.6e6/6e6 = 0.1,
         * BAD (2.4e6 - 2.1e6)/6e6 = 0.05, RET 2.1e6/6e6 = 0.35 */
        d[PMU_TD_AMD_NOT_HALTED_CYC] = 1000000;
        d[PMU_TD_AMD_NO_OPS_FROM_FRONTEND] = 1200000;
        d[PMU_TD_AMD_BACKEND_STALLS] = 1800000;
        d[PMU_TD_AMD_SMT_CONTENTION] = 600000;
        d[PMU_TD_AMD_OP_DISP_ALL] = 2400000;
        d[PMU_TD_AMD_RET_OPS] = 2100000;
        pmu_topdown_compute(&p, d, &t);
        assert_amd_level1(&t, 0.2, 0.05, 0.35, 0.3, 0.1);

        /* The x86 default budget (4, one left to the NMI watchdog): not opened, said so. */
        plan(&f, "topdown-zen4", 0, 4, &p);
        assert_int_equal(p.method, PMU_TOPDOWN_NONE);
        assert_non_null(strstr(p.note, "needs 6 general counters and cpu has 4"));
        for (int m = 0; m < _PMU_TOPDOWN_METRIC_MAX; m++)
                assert_false(pmu_topdown_plan_computes(&p, m));
}

static void test_zen5_and_zen3(void **state) {
        struct fixture f;
        struct pmu_topdown_plan p;
        struct pmu_topdown t;
        uint64_t d[_PMU_TD_INPUT_MAX] = {};

        plan(&f, "topdown-zen5", 3, 6, &p);
        assert_int_equal(p.method, PMU_TOPDOWN_AMD_PIPELINE);
        assert_int_equal(p.slots, 8);
        assert_members(&p, amd_in, amd_cfg, 6);
        /* total 8e6: FE 0.25, BE 0.25, SMT 0.1, BAD (3.2e6 - 3.0e6)/8e6 = 0.025, RET 0.375 */
        d[PMU_TD_AMD_NOT_HALTED_CYC] = 1000000;
        d[PMU_TD_AMD_NO_OPS_FROM_FRONTEND] = 2000000;
        d[PMU_TD_AMD_BACKEND_STALLS] = 2000000;
        d[PMU_TD_AMD_SMT_CONTENTION] = 800000;
        d[PMU_TD_AMD_OP_DISP_ALL] = 3200000;
        d[PMU_TD_AMD_RET_OPS] = 3000000;
        pmu_topdown_compute(&p, d, &t);
        assert_amd_level1(&t, 0.25, 0.025, 0.375, 0.25, 0.1);

        /* Family 25 model 0x01 (Milan): amdzen3, no pipeline utilization published. */
        plan(&f, "topdown-zen3", 0, 6, &p);
        assert_int_equal(p.method, PMU_TOPDOWN_NONE);
        assert_string_equal(p.core, "zen3 family 0x19 model 0x1");
        assert_non_null(strstr(p.note, "Zen 4 and Zen 5 only"));
}

static void test_qemu_unknown_core(void **state) {
        struct fixture f;
        struct pmu_topdown_plan p;

        plan(&f, "topdown-qemu-max", 0, 6, &p);
        assert_int_equal(p.method, PMU_TOPDOWN_NONE);
        assert_int_equal(p.midr, 0x000f0510);
        assert_non_null(strstr(p.note, "MIDR 0x000f0510"));

        /* No core PMU at all (this VM). */
        load(&f, "no-pmu");
        assert_int_equal(pmu_topdown_plan_cpu(f.root, "/nonexistent", 0, NULL, 4, false, &p), 0);
        assert_int_equal(p.method, PMU_TOPDOWN_NONE);
        assert_string_equal(p.note, "no core PMU counts for this CPU");
        f.sysfs = pmu_sysfs_free(f.sysfs);
}

/* A missing event: N2 with op_spec hidden (PMCEID) gets nothing, not a guess. */
static void test_missing_event(void **state) {
        struct fixture f;
        struct pmu_topdown_plan p;
        struct pmu_desc *pmu;
        size_t k;

        load(&f, "topdown-n2-r0p3");
        pmu = &f.sysfs->pmus[0];
        for (k = 0; k < pmu->n_events; k++)
                if (strcmp(pmu->events[k].name, "op_spec") == 0)
                        break;
        assert_true(k < pmu->n_events);
        free(pmu->events[k].name);
        pmu->events[k].name = strdup("op_spec_hidden");
        assert_int_equal(pmu_topdown_plan_cpu(f.root, "/nonexistent", 0, pmu, 6, true, &p), 0);
        assert_int_equal(p.method, PMU_TOPDOWN_NONE);
        assert_non_null(strstr(p.note, "events/ lacks op_spec"));
        f.sysfs = pmu_sysfs_free(f.sysfs);
}

static struct pmu_group_reading reading(uint64_t enabled, uint64_t running, const uint64_t *ids, const uint64_t *v,
                                        size_t n) {
        struct pmu_group_reading rd = { .enabled = enabled, .running = running, .n = n };

        for (size_t i = 0; i < n; i++) {
                rd.id[i] = ids[i];
                rd.value[i] = v[i];
        }
        return rd;
}

/*
 * Windows: fractions come from the difference of two reads of the same
 * fds, never from a baseline of other fds, never from a read in which the
 * group did not run, never from a read with other members. The V2 plan;
 * members in plan order C, S, S_FE, S_BE, OR, OS.
 */
static void test_windows_never_mixed(void **state) {
        static const uint64_t ids[_PMU_TD_INPUT_MAX] = { 11, 12, 13, 14, 15, 16 };
        /* read 1: baseline */
        static const uint64_t v1[] = { 5000000, 9000000, 4000000, 5000000, 7000000, 9000000 };
        /* read 2: + C 1e6, S 4e6, S_FE 1.6e6, S_BE 2.4e6, OR 3e6, OS 4e6 -> test_v2's fractions */
        static const uint64_t v2[] = { 6000000, 13000000, 5600000, 7400000, 10000000, 13000000 };
        /* read 3 (after a reopen): small values again; alone they would give
         * FE = 0.8e6 / 8e6 = 0.1 ... and against read 2 nonsense */
        static const uint64_t v3[] = { 1000000, 2000000, 800000, 1200000, 1800000, 2400000 };
        /* read 4: + C 1e6, S 2e6, S_FE 1.2e6, S_BE 0.8e6, OR 3.6e6, OS 4e6:
         * FE = 1.2e6/8e6 = 0.15, BE = 0.1, 1 - S/8C = 0.75, RET = 0.9 * 0.75 = 0.675, BAD = 0.075 */
        static const uint64_t v4[] = { 2000000, 4000000, 2000000, 2000000, 5400000, 6400000 };
        static const uint64_t other_ids[] = { 11, 12, 13, 14, 15, 99 };
        struct fixture f;
        struct pmu_topdown_plan p;
        struct pmu_topdown_window w;
        struct pmu_topdown t;
        struct pmu_group_reading rd;

        plan(&f, "topdown-v2", 0, 6, &p);
        pmu_topdown_window_reset(&w);

        rd = reading(1000, 400, ids, v1, 6);
        assert_int_equal(pmu_topdown_window_advance(&w, &p, ids, &rd, &t), 0); /* baseline only */

        /* Multiplexed: ran 300 of 1000 ns. Raw deltas of one group: scaling cancels. */
        rd = reading(2000, 700, ids, v2, 6);
        assert_int_equal(pmu_topdown_window_advance(&w, &p, ids, &rd, &t), 1);
        assert_level1(&t, 0.2, 0.125, 0.375, 0.3);

        /* Not scheduled in this interval: nothing, not the last fractions again. */
        rd = reading(3000, 700, ids, v2, 6);
        assert_int_equal(pmu_topdown_window_advance(&w, &p, ids, &rd, &t), 0);

        /* A read with a member of another group: refused. */
        rd = reading(4000, 900, other_ids, v2, 6);
        assert_int_equal(pmu_topdown_window_advance(&w, &p, ids, &rd, &t), 0);

        /* Reopened fds (values restart): the first read is a baseline. */
        pmu_topdown_window_reset(&w);
        rd = reading(100, 100, ids, v3, 6);
        assert_int_equal(pmu_topdown_window_advance(&w, &p, ids, &rd, &t), 0);
        rd = reading(200, 200, ids, v4, 6);
        assert_int_equal(pmu_topdown_window_advance(&w, &p, ids, &rd, &t), 1);
        assert_level1(&t, 0.15, 0.075, 0.675, 0.1);

        /* Values going backwards without a reset (new fds the window was not
         * told about): a new baseline, no fractions from the difference. */
        rd = reading(300, 300, ids, v3, 6);
        assert_int_equal(pmu_topdown_window_advance(&w, &p, ids, &rd, &t), 0);
        /* ... and the next interval counts from that baseline: v3 -> v4 again. */
        rd = reading(400, 400, ids, v4, 6);
        assert_int_equal(pmu_topdown_window_advance(&w, &p, ids, &rd, &t), 1);
        assert_level1(&t, 0.15, 0.075, 0.675, 0.1);
}

/* Fractions stay in [0, 1]: V1's frontend term can go below 0 over a short interval. */
static void test_clamped(void **state) {
        struct fixture f;
        struct pmu_topdown_plan p;
        struct pmu_topdown t;
        uint64_t d[_PMU_TD_INPUT_MAX] = {};

        plan(&f, "topdown-v1", 0, 6, &p);
        d[PMU_TD_CPU_CYCLES] = 1000;
        d[PMU_TD_STALL_SLOT] = 100;
        d[PMU_TD_STALL_SLOT_FRONTEND] = 80;  /* 0.01 */
        d[PMU_TD_STALL_SLOT_BACKEND] = 20;
        d[PMU_TD_OP_RETIRED] = 100;
        d[PMU_TD_OP_SPEC] = 200;
        d[PMU_TD_BR_MIS_PRED] = 100;         /* - 0.4 */
        pmu_topdown_compute(&p, d, &t);
        for (int m = 0; m < _PMU_TOPDOWN_METRIC_MAX; m++)
                if (t.present[m])
                        assert_true(t.value[m] >= 0 && t.value[m] <= 1);
        assert_close(t.value[PMU_TOPDOWN_FRONTEND_BOUND], 0);

        /* Zero cycles: nothing, not NaN. */
        d[PMU_TD_CPU_CYCLES] = 0;
        pmu_topdown_compute(&p, d, &t);
        for (int m = 0; m < _PMU_TOPDOWN_METRIC_MAX; m++)
                assert_false(t.present[m]);
}

static void test_event_terms(void **state) {
        struct fixture f;
        const struct pmu_desc *atom;
        uint64_t cfg;

        load(&f, "topdown-alderlake-hybrid");
        atom = pmu_sysfs_pmu_by_name(f.sysfs, "cpu_atom");
        assert_non_null(atom);
        assert_int_equal(pmu_desc_event_config_terms(atom, "topdown-retiring", &cfg), 0);
        assert_int_equal(cfg, 0xc2);
        assert_int_equal(pmu_desc_event_config_terms(atom, "cache-misses", &cfg), 0);
        assert_int_equal(cfg, 0x412e);
        assert_int_equal(pmu_desc_event_config_terms(atom, "slots", &cfg), -ENOENT);
        f.sysfs = pmu_sysfs_free(f.sysfs);
}

/* Level 2 on Arm: misses per kilo-instruction, a group of its own led by
 * INST_RETIRED (0x08), with the refill events the core lists, as many as
 * the general counters hold. */
static void test_mpki(void **state) {
        static const enum pmu_topdown_input in[] = { PMU_TD_INST_RETIRED,     PMU_TD_L1I_CACHE_REFILL,
                                                     PMU_TD_L1D_CACHE_REFILL, PMU_TD_L2D_CACHE_REFILL,
                                                     PMU_TD_LL_CACHE_MISS_RD, PMU_TD_BR_MIS_PRED_RETIRED };
        /* include/linux/perf/arm_pmuv3.h: INST_RETIRED 0x08, L1I_CACHE_REFILL 0x01, L1D_CACHE_REFILL 0x03,
         * L2D_CACHE_REFILL 0x17, LL_CACHE_MISS_RD 0x37, BR_MIS_PRED_RETIRED 0x22 */
        static const uint64_t cfg[] = { 0x08, 0x01, 0x03, 0x17, 0x37, 0x22 };
        struct fixture f;
        struct pmu_topdown_plan p;
        struct pmu_topdown t;
        uint64_t d[_PMU_TD_INPUT_MAX] = {};

        load(&f, "topdown-v2");
        assert_int_equal(pmu_topdown_plan_mpki(&f.sysfs->pmus[0], 6, &p), 0);
        assert_int_equal(p.method, PMU_TOPDOWN_ARM_MPKI);
        assert_members(&p, in, cfg, 6);
        assert_string_equal(p.note, "");

        /* 2e6 instructions: 1e4 L1I refills = 5 MPKI, 6e4 L1D = 30, 2e4 L2D = 10, 5e3 LL reads = 2.5, 8e3 branches = 4 */
        d[PMU_TD_INST_RETIRED] = 2000000;
        d[PMU_TD_L1I_CACHE_REFILL] = 10000;
        d[PMU_TD_L1D_CACHE_REFILL] = 60000;
        d[PMU_TD_L2D_CACHE_REFILL] = 20000;
        d[PMU_TD_LL_CACHE_MISS_RD] = 5000;
        d[PMU_TD_BR_MIS_PRED_RETIRED] = 8000;
        pmu_topdown_compute(&p, d, &t);
        assert_close(t.value[PMU_TOPDOWN_L1I_MPKI], 5);
        assert_close(t.value[PMU_TOPDOWN_L1D_MPKI], 30); /* above 1: not clamped */
        assert_close(t.value[PMU_TOPDOWN_L2D_MPKI], 10);
        assert_close(t.value[PMU_TOPDOWN_LL_READ_MPKI], 2.5);
        assert_close(t.value[PMU_TOPDOWN_BRANCH_MPKI], 4);
        assert_false(t.present[PMU_TOPDOWN_FRONTEND_BOUND]);

        /* Four counters: INST_RETIRED and the first three; the rest said so. */
        assert_int_equal(pmu_topdown_plan_mpki(&f.sysfs->pmus[0], 4, &p), 0);
        assert_members(&p, in, cfg, 4);
        assert_true(pmu_topdown_plan_computes(&p, PMU_TOPDOWN_L2D_MPKI));
        assert_false(pmu_topdown_plan_computes(&p, PMU_TOPDOWN_BRANCH_MPKI));
        assert_non_null(strstr(p.note, "ll_cache_miss_rd: beyond the 4 general counters"));
        assert_non_null(strstr(p.note, "br_mis_pred_retired: beyond the 4 general counters"));
        f.sysfs = pmu_sysfs_free(f.sysfs);

        /* V1's fixture lists no l1i/l2d refills nor br_mis_pred_retired: the others only. */
        load(&f, "topdown-v1");
        assert_int_equal(pmu_topdown_plan_mpki(&f.sysfs->pmus[0], 6, &p), 0);
        assert_int_equal(p.n, 3);
        assert_non_null(strstr(p.note, "events/ lacks l1i_cache_refill"));
        f.sysfs = pmu_sysfs_free(f.sysfs);

        /* QEMU without -icount: no inst_retired, no group. x86: not planned. */
        load(&f, "topdown-qemu-max");
        for (size_t k = 0; k < f.sysfs->pmus[0].n_events; k++)
                if (strcmp(f.sysfs->pmus[0].events[k].name, "inst_retired") == 0)
                        f.sysfs->pmus[0].events[k].name[0] = 'X';
        assert_int_equal(pmu_topdown_plan_mpki(&f.sysfs->pmus[0], 6, &p), 0);
        assert_int_equal(p.method, PMU_TOPDOWN_NONE);
        assert_non_null(strstr(p.note, "lacks inst_retired"));
        f.sysfs = pmu_sysfs_free(f.sysfs);
        load(&f, "topdown-sapphire-rapids");
        assert_int_equal(pmu_topdown_plan_mpki(&f.sysfs->pmus[0], 6, &p), 0);
        assert_int_equal(p.method, PMU_TOPDOWN_NONE);
        f.sysfs = pmu_sysfs_free(f.sysfs);
}

/* Memory bandwidth: CMN-700's HN-F requests to the memory controllers. */
static void test_bandwidth_cmn700(void **state) {
        char root[1024];
        struct pmu_bandwidth_plan p;
        uint64_t bytes, d[2];

        snprintf(root, sizeof(root), "%s/bandwidth-cmn700", fixtures);
        assert_int_equal(pmu_bandwidth_plan(root, &p), 0);
        assert_int_equal(p.n, 1);
        assert_string_equal(p.sources[0].name, "arm_cmn_0");
        assert_int_equal(p.sources[0].method, PMU_BANDWIDTH_CMN_HNF_MC);
        assert_int_equal(p.sources[0].type, 42);
        assert_int_equal(p.sources[0].cpu, 0);
        /* type 0x5 (HN-F) in config 0-15, eventid in 16-26: 0x0d and 0x0c (drivers/perf/arm-cmn.c) */
        assert_int_equal(p.sources[0].config[0], 0xd0005);
        assert_int_equal(p.sources[0].config[1], 0xc0005);

        /* One second: 1,000,000 requests, 50,000 retried: (1e6 - 5e4) x 64 = 60,800,000 bytes/s */
        d[0] = 1000000;
        d[1] = 50000;
        assert_int_equal(pmu_bandwidth_bytes(&p.sources[0], d, 1000000000, 1000000000, &bytes), 0);
        assert_int_equal(bytes, 60800000);
        /* Counted half the time (multiplexed): scaled as perf does, x 2 */
        assert_int_equal(pmu_bandwidth_bytes(&p.sources[0], d, 1000000000, 500000000, &bytes), 0);
        assert_int_equal(bytes, 121600000);
        /* Not counted at all: no value, not 0 */
        assert_int_equal(pmu_bandwidth_bytes(&p.sources[0], d, 1000000000, 0, &bytes), -ENODATA);
        pmu_bandwidth_plan_done(&p);

        /* hnf_mc_retries not listed: not counted, and said so. */
        snprintf(root, sizeof(root), "%s/bandwidth-cmn-noretries", fixtures);
        assert_int_equal(pmu_bandwidth_plan(root, &p), 0);
        assert_int_equal(p.n, 0);
        assert_non_null(strstr(p.note, "arm_cmn_0: events/hnf_mc_retries: not listed"));
        pmu_bandwidth_plan_done(&p);
}

/* Intel IMC CAS counts, two sockets (cpumask 0,56), four channels. */
static void test_bandwidth_imc(void **state) {
        char root[1024];
        struct pmu_bandwidth_plan p;
        uint64_t bytes, d[2];

        snprintf(root, sizeof(root), "%s/bandwidth-spr-imc", fixtures);
        assert_int_equal(pmu_bandwidth_plan(root, &p), 0);
        assert_int_equal(p.n, 8);
        for (size_t i = 0; i < p.n; i++) {
                char want[32];

                snprintf(want, sizeof(want), "uncore_imc_%zu", i / 2);
                assert_string_equal(p.sources[i].name, want);
                assert_int_equal(p.sources[i].type, 20 + i / 2);
                assert_int_equal(p.sources[i].cpu, i % 2 ? 56 : 0);
                assert_int_equal(p.sources[i].method, PMU_BANDWIDTH_IMC_CAS);
                /* event 0x05, umask 0xcf / 0xf0 in config 8-15 */
                assert_int_equal(p.sources[i].config[0], 0xcf05);
                assert_int_equal(p.sources[i].config[1], 0xf005);
        }
        /* 3e6 reads + 1e6 writes: 4e6 x 64 = 256,000,000 bytes */
        d[0] = 3000000;
        d[1] = 1000000;
        assert_int_equal(pmu_bandwidth_bytes(&p.sources[3], d, 1000, 1000, &bytes), 0);
        assert_int_equal(bytes, 256000000);
        pmu_bandwidth_plan_done(&p);

        /* No memory-side PMU (this VM, the Neoverse fixtures): said so. */
        snprintf(root, sizeof(root), "%s/topdown-v2", fixtures);
        assert_int_equal(pmu_bandwidth_plan(root, &p), 0);
        assert_int_equal(p.n, 0);
        assert_non_null(strstr(p.note, "no memory-side PMU"));
        pmu_bandwidth_plan_done(&p);
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_n1_partial),
                cmocka_unit_test(test_v1),
                cmocka_unit_test(test_n2_r0p0),
                cmocka_unit_test(test_n2_r0p3),
                cmocka_unit_test(test_v2),
                cmocka_unit_test(test_v3),
                cmocka_unit_test(test_sapphire_rapids),
                cmocka_unit_test(test_skylake_legacy),
                cmocka_unit_test(test_alderlake_hybrid),
                cmocka_unit_test(test_zen4),
                cmocka_unit_test(test_zen5_and_zen3),
                cmocka_unit_test(test_qemu_unknown_core),
                cmocka_unit_test(test_missing_event),
                cmocka_unit_test(test_windows_never_mixed),
                cmocka_unit_test(test_clamped),
                cmocka_unit_test(test_event_terms),
                cmocka_unit_test(test_mpki),
                cmocka_unit_test(test_bandwidth_cmn700),
                cmocka_unit_test(test_bandwidth_imc),
        };

        if (argc != 2) {
                fprintf(stderr, "usage: %s FIXTURES_DIR\n", argv[0]);
                return 2;
        }
        fixtures = argv[1];
        return cmocka_run_group_tests(tests, NULL, NULL);
}
