/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Each format rendered from one exposition, against hand-written expected output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "io/prometheus/client/metrics.pb-c.h"
#include "macro.h"
#include "prom.h"

static struct prom_writer *example(void) {
        static const double upper[] = { 16, 64 };
        static const uint64_t cum[] = { 3, 7 };
        static const int32_t idx[] = { -1, 0, 1, 5, 6 };
        static const uint64_t cnt[] = { 1, 2, 0, 4, 3 };
        struct prom_writer *w = prom_writer_new();
        char tmp[32];

        prom_family_unit(w, "x_cpu_seconds_total", PROM_COUNTER, "seconds", "CPU time.\nWith \\ and \"quotes\".");
        prom_sample_double(w, NULL, 1.5);
        prom_family(w, "x_requests_total", PROM_COUNTER, "Requests.");
        strcpy(tmp, "a\"b\\c\nd");
        prom_sample_u64(w, (const char *const[]) { "code", "200", "path", tmp, NULL }, 18446744073709551615ULL);
        strcpy(tmp, "overwritten"); /* the writer copied it */
        prom_family(w, "x_ratio", PROM_GAUGE, "A ratio.");
        prom_sample_double(w, (const char *const[]) { "cpu", "0", NULL }, 0.25);
        prom_family(w, "x_latency_cycles", PROM_HISTOGRAM, "Latency.");
        prom_sample_histogram(w, (const char *const[]) { "op", "load", NULL },
                              &(struct prom_histogram) {
                                      .count = 10, .sum = 321.5,
                                      .n_buckets = 2, .upper_bounds = upper, .cumulative_counts = cum,
                                      .native = true, .schema = 3, .zero_threshold = 0.5, .zero_count = 0,
                                      .n_native = 5, .native_index = idx, .native_count = cnt,
                              });
        return w;
}

static void test_text(void **state) {
        _cleanup_(prom_writer_freep) struct prom_writer *w = example();
        struct strbuf out = STRBUF_INIT;

        prom_render(w, PROM_FORMAT_TEXT, &out);
        assert_string_equal(out.buf,
                "# HELP x_cpu_seconds_total CPU time.\\nWith \\\\ and \"quotes\".\n"
                "# TYPE x_cpu_seconds_total counter\n"
                "x_cpu_seconds_total 1.5\n"
                "# HELP x_requests_total Requests.\n"
                "# TYPE x_requests_total counter\n"
                "x_requests_total{code=\"200\",path=\"a\\\"b\\\\c\\nd\"} 18446744073709551615\n"
                "# HELP x_ratio A ratio.\n"
                "# TYPE x_ratio gauge\n"
                "x_ratio{cpu=\"0\"} 0.25\n"
                "# HELP x_latency_cycles Latency.\n"
                "# TYPE x_latency_cycles histogram\n"
                "x_latency_cycles_bucket{op=\"load\",le=\"16\"} 3\n"
                "x_latency_cycles_bucket{op=\"load\",le=\"64\"} 7\n"
                "x_latency_cycles_bucket{op=\"load\",le=\"+Inf\"} 10\n"
                "x_latency_cycles_sum{op=\"load\"} 321.5\n"
                "x_latency_cycles_count{op=\"load\"} 10\n");
        strbuf_done(&out);
}

static void test_openmetrics(void **state) {
        _cleanup_(prom_writer_freep) struct prom_writer *w = example();
        struct strbuf out = STRBUF_INIT;

        prom_render(w, PROM_FORMAT_OPENMETRICS, &out);
        assert_string_equal(out.buf,
                "# HELP x_cpu_seconds CPU time.\\nWith \\\\ and \\\"quotes\\\".\n"
                "# TYPE x_cpu_seconds counter\n"
                "# UNIT x_cpu_seconds seconds\n"
                "x_cpu_seconds_total 1.5\n"
                "# HELP x_requests Requests.\n"
                "# TYPE x_requests counter\n"
                "x_requests_total{code=\"200\",path=\"a\\\"b\\\\c\\nd\"} 18446744073709551615\n"
                "# HELP x_ratio A ratio.\n"
                "# TYPE x_ratio gauge\n"
                "x_ratio{cpu=\"0\"} 0.25\n"
                "# HELP x_latency_cycles Latency.\n"
                "# TYPE x_latency_cycles histogram\n"
                "x_latency_cycles_bucket{op=\"load\",le=\"16.0\"} 3\n"
                "x_latency_cycles_bucket{op=\"load\",le=\"64.0\"} 7\n"
                "x_latency_cycles_bucket{op=\"load\",le=\"+Inf\"} 10\n"
                "x_latency_cycles_sum{op=\"load\"} 321.5\n"
                "x_latency_cycles_count{op=\"load\"} 10\n"
                "# EOF\n");
        strbuf_done(&out);
}

static void test_protobuf(void **state) {
        _cleanup_(prom_writer_freep) struct prom_writer *w = example();
        struct strbuf out = STRBUF_INIT;
        size_t pos = 0, frames = 0;
        Io__Prometheus__Client__MetricFamily *mf[4] = {};

        prom_render(w, PROM_FORMAT_PROTOBUF, &out);
        /* Split the varint-delimited frames ourselves. */
        while (pos < out.len) {
                uint64_t len = 0;
                unsigned shift = 0;
                uint8_t b;

                do {
                        b = (uint8_t) out.buf[pos++];
                        len |= (uint64_t) (b & 0x7f) << shift;
                        shift += 7;
                } while (b & 0x80);
                assert_true(frames < 4);
                assert_true(pos + len <= out.len);
                mf[frames] = io__prometheus__client__metric_family__unpack(NULL, len, (uint8_t *) out.buf + pos);
                assert_non_null(mf[frames]);
                pos += len;
                frames++;
        }
        assert_int_equal(frames, 4);

        assert_string_equal(mf[0]->name, "x_cpu_seconds_total");
        assert_string_equal(mf[0]->unit, "seconds");
        assert_int_equal(mf[0]->type, IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER);
        assert_true(mf[0]->metric[0]->counter->value == 1.5);

        assert_string_equal(mf[1]->metric[0]->label[1]->value, "a\"b\\c\nd");
        assert_true(mf[1]->metric[0]->counter->value == 18446744073709551615.0);
        assert_int_equal(mf[2]->type, IO__PROMETHEUS__CLIENT__METRIC_TYPE__GAUGE);
        assert_true(mf[2]->metric[0]->gauge->value == 0.25);

        /* Histogram: classic and native side by side. */
        Io__Prometheus__Client__Histogram *h = mf[3]->metric[0]->histogram;
        assert_int_equal(mf[3]->type, IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM);
        assert_int_equal(h->sample_count, 10);
        assert_true(h->sample_sum == 321.5);
        assert_int_equal(h->n_bucket, 2);
        assert_int_equal(h->bucket[1]->cumulative_count, 7);
        assert_true(h->bucket[1]->upper_bound == 64);
        assert_int_equal(h->schema, 3);
        assert_true(h->zero_threshold == 0.5);
        /* Indexes -1,0,1 then 5,6: spans (offset -1, len 3), (gap 3, len 2). */
        assert_int_equal(h->n_positive_span, 2);
        assert_int_equal(h->positive_span[0]->offset, -1);
        assert_int_equal(h->positive_span[0]->length, 3);
        assert_int_equal(h->positive_span[1]->offset, 3);
        assert_int_equal(h->positive_span[1]->length, 2);
        /* Counts 1,2,0,4,3 as deltas. */
        int64_t want[] = { 1, 1, -2, 4, -1 };
        assert_int_equal(h->n_positive_delta, 5);
        for (size_t i = 0; i < 5; i++)
                assert_int_equal(h->positive_delta[i], want[i]);

        for (size_t i = 0; i < frames; i++)
                io__prometheus__client__metric_family__free_unpacked(mf[i], NULL);
        strbuf_done(&out);
}

static void test_empty_native_histogram_has_noop_span(void **state) {
        _cleanup_(prom_writer_freep) struct prom_writer *w = prom_writer_new();
        struct strbuf out = STRBUF_INIT;
        Io__Prometheus__Client__MetricFamily *mf;

        prom_family(w, "h", PROM_HISTOGRAM, "Empty.");
        prom_sample_histogram(w, NULL, &(struct prom_histogram) { .native = true, .schema = 7 });
        prom_render(w, PROM_FORMAT_PROTOBUF, &out);
        mf = io__prometheus__client__metric_family__unpack(NULL, (uint8_t) out.buf[0], (uint8_t *) out.buf + 1);
        assert_non_null(mf);
        assert_int_equal(mf->metric[0]->histogram->n_positive_span, 1);
        assert_int_equal(mf->metric[0]->histogram->positive_span[0]->length, 0);
        io__prometheus__client__metric_family__free_unpacked(mf, NULL);
        strbuf_done(&out);
}

/* Reals are written as the shortest text that reads back as the same double. */
static void test_reals_shortest(void **state) {
        static const enum prom_format formats[] = { PROM_FORMAT_TEXT, PROM_FORMAT_OPENMETRICS };
        static const double bounds[] = { 0.1, 2.5e-05 };
        static const uint64_t cum[] = { 1, 2 };

        for (size_t f = 0; f < ELEMENTSOF(formats); f++) {
                _cleanup_(prom_writer_freep) struct prom_writer *w = prom_writer_new();
                struct strbuf out = STRBUF_INIT;

                prom_family(w, "process_start_time_seconds", PROM_GAUGE, "Start time.");
                /* %.17g prints this as 1795415724.0599999 */
                prom_sample_double(w, NULL, 1795415724.06);
                prom_family(w, "x_sum", PROM_GAUGE, "A sum.");
                prom_sample_double(w, NULL, 0.1 + 0.2);
                prom_family(w, "x_seconds", PROM_HISTOGRAM, "Durations.");
                prom_sample_histogram(w, NULL,
                                      &(struct prom_histogram) {
                                              .count = 2, .sum = 0.7,
                                              .n_buckets = 2, .upper_bounds = bounds, .cumulative_counts = cum,
                                      });
                prom_render(w, formats[f], &out);
                assert_non_null(strstr(out.buf, "\nprocess_start_time_seconds 1795415724.06\n"));
                assert_non_null(strstr(out.buf, "\nx_sum 0.30000000000000004\n"));
                assert_non_null(strstr(out.buf, "\nx_seconds_bucket{le=\"0.1\"} 1\n"));
                assert_non_null(strstr(out.buf, "\nx_seconds_bucket{le=\"2.5e-05\"} 2\n"));
                assert_non_null(strstr(out.buf, "\nx_seconds_sum 0.7\n"));
                strbuf_done(&out);
        }
}

/* Integral reals: the text format's digits ("%.15g"), OpenMetrics' "N.0" ("%.1f"), the sign of -0; from 1e15 on, shortest. */
static void test_reals_integral(void **state) {
        static const double values[] = { 0, -0.0, 16, -3, 99999999999999, 1e15, 123456789012345678.0 };
        static const char *const text[] = { "0", "-0", "16", "-3", "99999999999999", "1e+15",
                                            "1.2345678901234568e+17" };
        static const char *const om[] = { "0.0", "-0.0", "16.0", "-3.0", "99999999999999.0", "1e+15",
                                          "1.2345678901234568e+17" };

        for (int f = 0; f < 2; f++) {
                _cleanup_(prom_writer_freep) struct prom_writer *w = prom_writer_new();
                struct strbuf out = STRBUF_INIT, want = STRBUF_INIT;

                prom_family(w, "x", PROM_GAUGE, "Reals.");
                for (size_t i = 0; i < ELEMENTSOF(values); i++)
                        prom_sample_double(w, NULL, values[i]);
                prom_render(w, f ? PROM_FORMAT_OPENMETRICS : PROM_FORMAT_TEXT, &out);
                strbuf_puts(&want, "# HELP x Reals.\n# TYPE x gauge\n");
                for (size_t i = 0; i < ELEMENTSOF(values); i++)
                        strbuf_printf(&want, "x %s\n", f ? om[i] : text[i]);
                if (f)
                        strbuf_puts(&want, "# EOF\n");
                assert_string_equal(out.buf, want.buf);
                strbuf_done(&out);
                strbuf_done(&want);
        }
}

/* Counter rows: one family per run of a name, a label only where a row has one; hand-written text. */
static void test_counter_rows(void **state) {
        static const struct prom_counter_row rows[] = {
                { "x_evictions_total", "Evicted.", "table", "a", 1 },
                { "x_evictions_total", "Evicted.", "table", "b", 2 },
                { "x_loaded_total", "Loaded.", .value = 3 },
        };
        _cleanup_(prom_writer_freep) struct prom_writer *w = prom_writer_new();
        struct strbuf out = STRBUF_INIT;

        prom_write_counter_rows(w, rows, ELEMENTSOF(rows));
        prom_render(w, PROM_FORMAT_TEXT, &out);
        assert_string_equal(out.buf,
                            "# HELP x_evictions_total Evicted.\n"
                            "# TYPE x_evictions_total counter\n"
                            "x_evictions_total{table=\"a\"} 1\n"
                            "x_evictions_total{table=\"b\"} 2\n"
                            "# HELP x_loaded_total Loaded.\n"
                            "# TYPE x_loaded_total counter\n"
                            "x_loaded_total 3\n");
        strbuf_done(&out);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_text),
                cmocka_unit_test(test_counter_rows),
                cmocka_unit_test(test_openmetrics),
                cmocka_unit_test(test_protobuf),
                cmocka_unit_test(test_empty_native_histogram_has_noop_span),
                cmocka_unit_test(test_reals_shortest),
                cmocka_unit_test(test_reals_integral),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
