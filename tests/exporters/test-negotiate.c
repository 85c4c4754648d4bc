/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "negotiate.h"

#define PB "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"

static void test_prom_format(void **state) {
        static const struct {
                const char *accept;
                enum prom_format want;
        } cases[] = {
                /* What Prometheus 2.42 sends by default, and with native histograms on. */
                { "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                  "text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
                  PROM_FORMAT_OPENMETRICS },
                { PB ";q=0.5,application/openmetrics-text;version=1.0.0;q=0.4,"
                     "application/openmetrics-text;version=0.0.1;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1",
                  PROM_FORMAT_PROTOBUF },
                /* Prometheus 3's default, with escaping parameters. */
                { "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,"
                  "application/openmetrics-text;version=0.0.1;q=0.4,"
                  "text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1",
                  PROM_FORMAT_OPENMETRICS },
                { NULL, PROM_FORMAT_TEXT },
                { "", PROM_FORMAT_TEXT },
                { "*/*", PROM_FORMAT_TEXT },
                { "text/*", PROM_FORMAT_TEXT },
                { "text/plain", PROM_FORMAT_TEXT },
                { "application/openmetrics-text", PROM_FORMAT_OPENMETRICS },
                { "APPLICATION/OpenMetrics-Text ; Version=1.0.0", PROM_FORMAT_OPENMETRICS },
                { "application/openmetrics-text; version=\"1.0.0\"", PROM_FORMAT_OPENMETRICS },
                /* A version we do not speak does not match; fall back to text. */
                { "application/openmetrics-text;version=2.0.0", PROM_FORMAT_TEXT },
                /* Protobuf needs the proto parameter. */
                { "application/vnd.google.protobuf", PROM_FORMAT_TEXT },
                { "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily", PROM_FORMAT_PROTOBUF },
                { "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text",
                  PROM_FORMAT_TEXT },
                /* q=0 excludes; the more specific range decides the quality. */
                { "application/openmetrics-text;q=0, */*", PROM_FORMAT_TEXT },
                { "*/*;q=0.1, application/openmetrics-text;q=0", PROM_FORMAT_TEXT },
                { "text/plain;q=0, application/*;q=0.5", PROM_FORMAT_OPENMETRICS },
                { "text/plain;q=0.2, application/openmetrics-text;q=0.9", PROM_FORMAT_OPENMETRICS },
                /* Ties go to our preference (text). */
                { "application/openmetrics-text, text/plain", PROM_FORMAT_TEXT },
                /* Garbage is skipped, not fatal. */
                { "garbage", PROM_FORMAT_TEXT },
                { ";;;,,,/", PROM_FORMAT_TEXT },
                { "application/openmetrics-text;q=2", PROM_FORMAT_TEXT },
                { "application/openmetrics-text;q=0.1234", PROM_FORMAT_TEXT },
                { "application/openmetrics-text;q=abc, text/plain;q=0.1", PROM_FORMAT_TEXT },
                { "*/plain", PROM_FORMAT_TEXT },
                { "image/png", PROM_FORMAT_TEXT },
                { "bogus, application/openmetrics-text;version=1.0.0", PROM_FORMAT_OPENMETRICS },
                { "application/openmetrics-text;version=\"1.0.0", PROM_FORMAT_TEXT },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                enum prom_format f = negotiate_prom_format(cases[i].accept);

                if (f != cases[i].want)
                        fail_msg("case %zu '%s': got %d, want %d", i, cases[i].accept ?: "(null)", f,
                                 cases[i].want);
        }
}

static void test_oversized_header(void **state) {
        char big[NEGOTIATE_MAX_HEADER + 64];

        memset(big, ' ', sizeof(big));
        memcpy(big + sizeof(big) - 40, "application/openmetrics-text", 28);
        big[sizeof(big) - 1] = '\0';
        assert_int_equal(negotiate_prom_format(big), PROM_FORMAT_TEXT);
}

static void test_json_protobuf_offers(void **state) {
        static const struct media_offer offers[] = {
                { "application", "json", NULL },
                { "application", "x-protobuf", NULL },
        };

        assert_int_equal(negotiate("application/x-protobuf", offers, 2), 1);
        assert_int_equal(negotiate("application/json", offers, 2), 0);
        assert_int_equal(negotiate("*/*", offers, 2), 0);
        assert_int_equal(negotiate("text/html", offers, 2), -1);
        assert_int_equal(negotiate("application/*;q=0.5, application/x-protobuf;q=0.9", offers, 2), 1);
}

static void test_gzip(void **state) {
        static const struct {
                const char *in;
                bool want;
        } cases[] = {
                { NULL, false }, { "", false }, { "gzip", true }, { "GZIP", true },
                { "deflate, gzip;q=1.0, *;q=0.5", true }, { "gzip;q=0", false }, { "identity", false },
                { "*", true }, { "*;q=0", false }, { "gzip;q=0, *", false }, { "br, x-gzip", true },
                { "gzip;q=garbage", false }, { "gzip;level=9", false },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                if (negotiate_gzip(cases[i].in) != cases[i].want)
                        fail_msg("case %zu '%s'", i, cases[i].in ?: "(null)");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_prom_format),
                cmocka_unit_test(test_oversized_header),
                cmocka_unit_test(test_json_protobuf_offers),
                cmocka_unit_test(test_gzip),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
