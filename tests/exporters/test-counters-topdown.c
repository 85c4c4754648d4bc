/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Top-down on the counting exporters, from a snapshot written here: /metrics
 * serves each present fraction with its cpu, level and category and nothing
 * for a CPU without; /status says per set of alike CPUs what they compute and
 * why not; the /counters text draws each CPU's level-1 bar, its letters
 * counted here from the fractions.
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
#include <jansson.h>

#include "counters.h"
#include "macro.h"
#include "prom.h"
#include "strbuf.h"
#include "views.h"

#define NOTE_N1 "level 1 is partial: test"
#define NOTE_NONE "MIDR 0x000f0510 (implementer 0x00, part 0x051): no published top-down formulas for this core"

static void set_level1(struct pmu_cpu_topdown *t, double fe, double bad, double ret, double be) {
        const double v[] = { fe, bad, ret, be };
        const enum pmu_topdown_metric m[] = { PMU_TOPDOWN_FRONTEND_BOUND, PMU_TOPDOWN_BAD_SPECULATION,
                                              PMU_TOPDOWN_RETIRING, PMU_TOPDOWN_BACKEND_BOUND };

        for (size_t k = 0; k < ELEMENTSOF(m); k++) {
                t->computes[m[k]] = true;
                t->last.present[m[k]] = true;
                t->last.value[m[k]] = v[k];
        }
}

/* CPUs 0 and 2: Neoverse V2, complete; CPU 1: unknown core; CPU 3: V2 whose group did not run;
 * CPU 4: AMD Zen 4, five categories. */
static struct pmu_snapshot *make(void) {
        struct pmu_snapshot *s = xcalloc(1, sizeof(*s));

        s->state = PMU_STATE_DEGRADED;
        s->reads = 3;
        s->n_cpus = 5;
        s->cpus = xcalloc(s->n_cpus, sizeof(*s->cpus));
        for (unsigned i = 0; i < 4; i++) {
                struct pmu_cpu_topdown *t = &s->cpus[i].topdown;

                s->cpus[i].cpu = i;
                snprintf(s->cpus[i].pmu, sizeof(s->cpus[i].pmu), "armv8_pmuv3_0");
                if (i == 1) {
                        t->method = PMU_TOPDOWN_NONE;
                        snprintf(t->core, sizeof(t->core), "midr 0x000f0510");
                        snprintf(t->note, sizeof(t->note), NOTE_NONE);
                        continue;
                }
                t->method = PMU_TOPDOWN_ARM_SLOTS;
                snprintf(t->core, sizeof(t->core), "neoverse-v2 r0p1");
                set_level1(t, 0.1, 0.2, 0.3, 0.4);
        }
        set_level1(&s->cpus[2].topdown, 0.25, 0.05, 0.5, 0.2);
        for (unsigned i = 0; i < 4; i += i == 0 ? 2 : 1)
                s->cpus[i].topdown.computes[PMU_TOPDOWN_L1D_MPKI] = true; /* the V2 CPUs alike */
        s->cpus[0].topdown.last.present[PMU_TOPDOWN_L1D_MPKI] = true;
        s->cpus[0].topdown.last.value[PMU_TOPDOWN_L1D_MPKI] = 30;
        s->cpus[4].cpu = 4;
        s->cpus[4].topdown.method = PMU_TOPDOWN_AMD_PIPELINE;
        snprintf(s->cpus[4].topdown.core, sizeof(s->cpus[4].topdown.core), "zen4 family 0x19 model 0x11");
        set_level1(&s->cpus[4].topdown, 0.2, 0.05, 0.35, 0.3);
        s->cpus[4].topdown.computes[PMU_TOPDOWN_SMT_CONTENTION] = true;
        s->cpus[4].topdown.last.present[PMU_TOPDOWN_SMT_CONTENTION] = true;
        s->cpus[4].topdown.last.value[PMU_TOPDOWN_SMT_CONTENTION] = 0.1;

        /* A mesh counting, and one that could not be opened. */
        s->n_bandwidth = 2;
        s->bandwidth = xcalloc(2, sizeof(*s->bandwidth));
        s->bandwidth[0] = (struct pmu_bandwidth_value) { .pmu = "arm_cmn_0", .cpu = 0, .method = PMU_BANDWIDTH_CMN_HNF_MC,
                                                         .bytes_total = 60800000, .counted = true };
        s->bandwidth[1] = (struct pmu_bandwidth_value) { .pmu = "arm_cmn_1", .cpu = 2, .method = PMU_BANDWIDTH_CMN_HNF_MC,
                                                         .error = -EACCES };
        memset(&s->cpus[3].topdown.last, 0, sizeof(s->cpus[3].topdown.last));
        return s;
}

static void test_metrics(void **state) {
        struct pmu_snapshot *s = make();
        _cleanup_(prom_writer_freep) struct prom_writer *w = prom_writer_new();
        struct strbuf out = STRBUF_INIT;

        counters_write_metrics(s, w);
        prom_render(w, PROM_FORMAT_TEXT, &out);
        assert_non_null(strstr(out.buf, "# TYPE armprofd_topdown_fraction gauge\n"));
        assert_non_null(strstr(out.buf, "\narmprofd_topdown_fraction{cpu=\"0\",level=\"1\",category=\"frontend_bound\"} 0.1\n"));
        assert_non_null(strstr(out.buf, "\narmprofd_topdown_fraction{cpu=\"0\",level=\"1\",category=\"backend_bound\"} 0.4\n"));
        assert_non_null(strstr(out.buf, "\narmprofd_topdown_fraction{cpu=\"2\",level=\"1\",category=\"retiring\"} 0.5\n"));
        /* CPU 1 cannot, CPU 3's group did not run: no sample, never a 0. */
        assert_null(strstr(out.buf, "armprofd_topdown_fraction{cpu=\"1\""));
        assert_null(strstr(out.buf, "armprofd_topdown_fraction{cpu=\"3\""));
        assert_non_null(strstr(out.buf, "\narmprofd_topdown_fraction{cpu=\"4\",level=\"1\",category=\"smt_contention\"} 0.1\n"));
        /* MPKI on a family of its own, not among the fractions. */
        assert_non_null(strstr(out.buf, "\narmprofd_mpki{cpu=\"0\",event=\"l1d_cache\"} 30\n"));
        assert_null(strstr(out.buf, "category=\"l1d_cache_mpki\""));
        /* Bytes as a counter, for the PMU that counts only. */
        assert_non_null(strstr(out.buf, "# TYPE armprofd_memory_bytes_total counter\n"));
        assert_non_null(strstr(out.buf, "\narmprofd_memory_bytes_total{pmu=\"arm_cmn_0\",cpu=\"0\",method=\"cmn-hnf-mc\"} 60800000\n"));
        assert_null(strstr(out.buf, "arm_cmn_1"));
        strbuf_done(&out);
        pmu_snapshot_free(s);
}

static void test_status(void **state) {
        struct pmu_snapshot *s = make();
        json_t *st = counters_status_json(s, NULL), *td = json_object_get(st, "topdown"), *e;

        /* CPUs 0, 2, 3 are alike (same core, method, note): one entry; CPU 1 its own. */
        assert_int_equal(json_array_size(td), 3);
        e = json_array_get(td, 0);
        assert_int_equal(json_array_size(json_object_get(e, "cpus")), 3);
        assert_int_equal(json_integer_value(json_array_get(json_object_get(e, "cpus"), 0)), 0);
        assert_int_equal(json_integer_value(json_array_get(json_object_get(e, "cpus"), 1)), 2);
        assert_int_equal(json_integer_value(json_array_get(json_object_get(e, "cpus"), 2)), 3);
        assert_string_equal(json_string_value(json_object_get(e, "level1")), "complete");
        assert_string_equal(json_string_value(json_object_get(e, "method")), "arm-slots");
        assert_int_equal(json_array_size(json_object_get(e, "computes")), 5); /* level 1 and l1d_cache_mpki */
        /* Level 2 is not computed there, and says so. */
        assert_non_null(json_object_get(json_object_get(e, "cannot"), "memory_bound"));
        /* AMD's fifth category is no gap elsewhere. */
        assert_null(json_object_get(json_object_get(e, "cannot"), "smt_contention"));

        e = json_array_get(td, 1);
        assert_int_equal(json_integer_value(json_array_get(json_object_get(e, "cpus"), 0)), 1);
        assert_string_equal(json_string_value(json_object_get(e, "level1")), "unavailable");
        assert_int_equal(json_array_size(json_object_get(e, "computes")), 0);
        assert_string_equal(json_string_value(json_object_get(json_object_get(e, "cannot"), "retiring")), NOTE_NONE);

        e = json_array_get(td, 2);
        assert_int_equal(json_integer_value(json_array_get(json_object_get(e, "cpus"), 0)), 4);
        assert_string_equal(json_string_value(json_object_get(e, "method")), "amd-pipeline");
        assert_int_equal(json_array_size(json_object_get(e, "computes")), 5);

        e = json_object_get(st, "bandwidth");
        assert_int_equal(json_array_size(json_object_get(e, "sources")), 2);
        assert_true(json_is_true(json_object_get(json_array_get(json_object_get(e, "sources"), 0), "counting")));
        assert_true(json_is_false(json_object_get(json_array_get(json_object_get(e, "sources"), 1), "counting")));
        assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(e, "sources"), 1), "error")),
                            "Permission denied");
        json_decref(st);
        pmu_snapshot_free(s);
}

static void test_counters_bar(void **state) {
        struct pmu_snapshot *s = make();
        json_t *answer = counters_to_json(s, 1.0, -1);
        struct view v = {};
        struct strbuf out = STRBUF_INIT;
        char want0[64], want2[64];

        assert_int_equal(view_counters(answer, &(struct view_context) { "host", "live", "" }, &v), 0);
        view_render_text(&v, &out);
        /* 40 cells: 0.1 0.2 0.3 0.4 -> 4 F, 8 S, 12 R, 16 B; 0.25 0.05 0.5 0.2 -> 10, 2, 20, 8. */
        snprintf(want0, sizeof(want0), "%.4s%.8s%.12s%.16s", "FFFFFFFFFFFFFFFFFFFF", "SSSSSSSSSSSSSSSSSSSS",
                 "RRRRRRRRRRRRRRRRRRRR", "BBBBBBBBBBBBBBBBBBBB");
        snprintf(want2, sizeof(want2), "%.10s%.2s%.20s%.8s", "FFFFFFFFFFFFFFFFFFFF", "SSSSSSSSSSSSSSSSSSSS",
                 "RRRRRRRRRRRRRRRRRRRR", "BBBBBBBBBBBBBBBBBBBB");
        assert_int_equal(strlen(want0), 40);
        assert_int_equal(strlen(want2), 40);
        assert_non_null(strstr(out.buf, want0));
        assert_non_null(strstr(out.buf, want2));
        assert_non_null(strstr(out.buf, "25.0%"));
        /* CPU 4: 0.2 0.05 0.35 0.3 0.1 -> cumulative 8, 10, 24, 36, 40 cells. */
        assert_non_null(strstr(out.buf, "FFFFFFFFSSRRRRRRRRRRRRRRBBBBBBBBBBBBTTTT"));
        /* CPUs 1 and 3 have no bar: no row made of their name and letters. */
        {
                const char *p = strstr(out.buf, "Top-down");

                assert_non_null(p);
                assert_null(strstr(p, "CPU1  FF"));
        }
        strbuf_done(&out);
        view_done(&v);
        json_decref(answer);
        pmu_snapshot_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_metrics),
                cmocka_unit_test(test_status),
                cmocka_unit_test(test_counters_bar),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
