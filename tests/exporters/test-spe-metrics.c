/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * exporters/spe-metrics.c against figures the test writes itself: each
 * classic latency bucket le="2^c" counts the values put in that are <= 2^c,
 * and every per-CPU family has one sample per CPU, labelled with that CPU's
 * number, in the order of the input.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "prom.h"
#include "spe-metrics.h"
#include "strbuf.h"

static void test_latency_classic_buckets(void **state) {
        static const uint32_t values[] = { 0, 1, 1, 2, 3, 4, 5, 7, 8, 9, 100, 127, 128, 129, 1000, 1024, 1025,
                                           4096, 30000, 32768, 32769, 65535 };
        struct store_latency_cumulative *lat = xcalloc(1, sizeof(*lat));
        struct store_totals totals = {};
        _cleanup_(prom_writer_freep) struct prom_writer *w = prom_writer_new();
        struct strbuf out = STRBUF_INIT;
        uint64_t sum = 0;

        for (size_t i = 0; i < ELEMENTSOF(values); i++) {
                struct lathist_merged *m = &lat->h[STORE_LAT_ISSUE][HOTPCS_OP_STORE];

                m->count[lathist_index(values[i])]++;
                m->n++;
                m->sum += values[i];
                sum += values[i];
        }
        spe_metrics_write(&(struct spe_metrics_input) { .totals = &totals, .latency = lat, .up = true }, w);
        prom_render(w, PROM_FORMAT_TEXT, &out);

        for (unsigned c = 0; c <= 16; c++) {
                char want[256];
                uint64_t n = 0;

                for (size_t i = 0; i < ELEMENTSOF(values); i++)
                        n += values[i] <= (UINT32_C(1) << c);
                snprintf(want, sizeof(want),
                         "\narmprofd_spe_latency_cycles_bucket{kind=\"issue\",op=\"store\",le=\"%u\"} %" PRIu64 "\n",
                         1U << c, n);
                assert_non_null(strstr(out.buf, want));
                /* The other histograms are empty. */
                snprintf(want, sizeof(want),
                         "\narmprofd_spe_latency_cycles_bucket{kind=\"total\",op=\"store\",le=\"%u\"} 0\n", 1U << c);
                assert_non_null(strstr(out.buf, want));
        }
        assert_non_null(strstr(out.buf, "\narmprofd_spe_latency_cycles_bucket{kind=\"issue\",op=\"store\",le=\"+Inf\"} 22\n"));
        assert_non_null(strstr(out.buf, "\narmprofd_spe_latency_cycles_count{kind=\"issue\",op=\"store\"} 22\n"));
        assert_int_equal(sum, 168741);
        assert_non_null(strstr(out.buf, "\narmprofd_spe_latency_cycles_sum{kind=\"issue\",op=\"store\"} 168741\n"));
        strbuf_done(&out);
        free(lat);
}

static void test_per_cpu_labels(void **state) {
        static const uint32_t ids[] = { 0, 7, 191, 4294967295U };
        static const char *const seconds[] = { "1.5", "1.500000001", "1.500000002", "1.500000003" };
        struct spe_stream_stats cpus[ELEMENTSOF(ids)] = {};
        struct store_totals totals = {};
        _cleanup_(prom_writer_freep) struct prom_writer *w = prom_writer_new();
        struct strbuf out = STRBUF_INIT;
        const char *p;

        for (size_t i = 0; i < ELEMENTSOF(ids); i++) {
                cpus[i].cpu = ids[i];
                cpus[i].records = 1000 + i;
                cpus[i].bytes = 64000 + i;
                cpus[i].aux_stalls = 10 + i;
                cpus[i].aux_fault_restarts = 20 + i;
                cpus[i].not_sampling_ns = 1500000000 + i;
        }
        spe_metrics_write(&(struct spe_metrics_input) { .totals = &totals, .cpus = cpus, .n_cpus = ELEMENTSOF(ids),
                                                        .up = true },
                          w);
        prom_render(w, PROM_FORMAT_TEXT, &out);
        p = out.buf;
        for (size_t i = 0; i < ELEMENTSOF(ids); i++) {
                char want[128];

                snprintf(want, sizeof(want), "\narmprofd_spe_records_total{cpu=\"%" PRIu32 "\"} %zu\n", ids[i], 1000 + i);
                p = strstr(p, want);
                assert_non_null(p);
        }
        for (size_t i = 0; i < ELEMENTSOF(ids); i++) {
                char want[128];

                snprintf(want, sizeof(want), "\narmprofd_spe_bytes_total{cpu=\"%" PRIu32 "\"} %zu\n", ids[i], 64000 + i);
                assert_non_null(strstr(out.buf, want));
                snprintf(want, sizeof(want), "\narmprofd_spe_aux_stalls_total{cpu=\"%" PRIu32 "\"} %zu\n", ids[i], 10 + i);
                assert_non_null(strstr(out.buf, want));
                snprintf(want, sizeof(want), "\narmprofd_spe_aux_fault_restarts_total{cpu=\"%" PRIu32 "\"} %zu\n", ids[i],
                         20 + i);
                assert_non_null(strstr(out.buf, want));
                snprintf(want, sizeof(want), "\narmprofd_spe_not_sampling_seconds_total{cpu=\"%" PRIu32 "\"} %s\n",
                         ids[i], seconds[i]);
                assert_non_null(strstr(out.buf, want));
        }
        strbuf_done(&out);
}

/* Each bounded table's evictions under its own label, the PC-by-context (profile) table's included, and the records
 * they are out of. */
static void test_evictions_by_table(void **state) {
        const struct store_totals totals = {
                .records = 1000,
                .evictions = {
                        [STORE_TABLE_HOTPCS] = 11, [STORE_TABLE_HOTLINES] = 22, [STORE_TABLE_OFFSETS] = 33,
                        [STORE_TABLE_SAMPLES] = 44,
                },
        };
        _cleanup_(prom_writer_freep) struct prom_writer *w = prom_writer_new();
        struct strbuf out = STRBUF_INIT;

        spe_metrics_write(&(struct spe_metrics_input) { .totals = &totals, .up = true }, w);
        prom_render(w, PROM_FORMAT_TEXT, &out);
        assert_non_null(strstr(out.buf, "\narmprofd_store_evictions_total{table=\"hotpcs\"} 11\n"));
        assert_non_null(strstr(out.buf, "\narmprofd_store_evictions_total{table=\"hotlines\"} 22\n"));
        assert_non_null(strstr(out.buf, "\narmprofd_store_evictions_total{table=\"offsets\"} 33\n"));
        assert_non_null(strstr(out.buf, "\narmprofd_store_evictions_total{table=\"samples\"} 44\n"));
        assert_non_null(strstr(out.buf, "\narmprofd_store_records_total 1000\n"));
        strbuf_done(&out);

        /* No SPE source (a sampler-only host): the sampler's leaf PCs fill the hot-PC table, which says so. */
        _cleanup_(prom_writer_freep) struct prom_writer *sampler_only = prom_writer_new();

        spe_metrics_write(&(struct spe_metrics_input) { .totals = &totals, .up = false }, sampler_only);
        prom_render(sampler_only, PROM_FORMAT_TEXT, &out);
        assert_non_null(strstr(out.buf, "\narmprofd_store_evictions_total{table=\"hotpcs\"} 11\n"));
        assert_null(strstr(out.buf, "armprofd_store_records_total"));
        assert_null(strstr(out.buf, "armprofd_spe_"));
        strbuf_done(&out);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_latency_classic_buckets),
                cmocka_unit_test(test_per_cpu_labels),
                cmocka_unit_test(test_evictions_by_table),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
