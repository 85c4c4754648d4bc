/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "parse-util.h"

static void test_safe_atou64(void **state) {
        static const struct {
                const char *in;
                int r;
                uint64_t v;
        } cases[] = {
                { "0", 0, 0 },
                { "42", 0, 42 },
                { "18446744073709551615", 0, UINT64_MAX },
                { "18446744073709551616", -ERANGE, 0 },
                { "", -EINVAL, 0 },
                { " 1", -EINVAL, 0 },
                { "1 ", -EINVAL, 0 },
                { "-1", -EINVAL, 0 },
                { "+1", -EINVAL, 0 },
                { "0x10", -EINVAL, 0 },
                { "12abc", -EINVAL, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                uint64_t v = 0xdead;
                int r = safe_atou64(cases[i].in, &v);

                assert_int_equal(r, cases[i].r);
                assert_int_equal(v, r == 0 ? cases[i].v : 0xdead); /* untouched on error */
        }
}

static void test_safe_atou32_atoi32(void **state) {
        uint32_t u;
        int32_t i;

        assert_int_equal(safe_atou32("4294967295", &u), 0);
        assert_int_equal(u, UINT32_MAX);
        assert_int_equal(safe_atou32("4294967296", &u), -ERANGE);
        assert_int_equal(safe_atoi32("-2147483648", &i), 0);
        assert_int_equal(i, INT32_MIN);
        assert_int_equal(safe_atoi32("2147483648", &i), -ERANGE);
        assert_int_equal(safe_atoi32("-2147483649", &i), -ERANGE);
        assert_int_equal(safe_atoi32("--1", &i), -EINVAL);
}

static void test_hex_digit_value(void **state) {
        static const char digits[] = "0123456789abcdef";

        for (int i = 0; i < 16; i++) {
                assert_int_equal(hex_digit_value(digits[i]), i);
                assert_int_equal(hex_digit_value((char) toupper((unsigned char) digits[i])), i);
        }
        for (const char *c = "gGxX /:@`\x7f"; *c; c++)
                assert_int_equal(hex_digit_value(*c), -1);
        assert_int_equal(hex_digit_value('\0'), -1);
}

static void test_parse_bool(void **state) {
        static const struct {
                const char *in;
                int r;
                bool v;
        } cases[] = {
                { "yes", 0, true }, { "YES", 0, true }, { "on", 0, true }, { "1", 0, true },
                { "true", 0, true }, { "no", 0, false }, { "Off", 0, false }, { "0", 0, false },
                { "false", 0, false }, { "", -EINVAL, false }, { "maybe", -EINVAL, false },
                { "2", -EINVAL, false },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                bool v = !cases[i].v;
                assert_int_equal(parse_bool(cases[i].in, &v), cases[i].r);
                if (cases[i].r == 0)
                        assert_int_equal(v, cases[i].v);
        }
}

static void test_parse_duration(void **state) {
        static const struct {
                const char *in;
                int r;
                uint64_t usec;
        } cases[] = {
                { "10s", 0, 10 * USEC_PER_SEC },
                { "500ms", 0, 500 * USEC_PER_MSEC },
                { "250us", 0, 250 },
                { "2m", 0, 120 * USEC_PER_SEC },
                { "1min", 0, 60 * USEC_PER_SEC },
                { "1h", 0, 3600 * USEC_PER_SEC },
                { "7", 0, 7 * USEC_PER_SEC },
                { "0", 0, 0 },
                { "10 s", -EINVAL, 0 },
                { "10sec", 0, 10 * USEC_PER_SEC },
                { "10d", -EINVAL, 0 },
                { "s", -EINVAL, 0 },
                { "-1s", -EINVAL, 0 },
                { "1.5s", -EINVAL, 0 },
                { "99999999999999999999s", -ERANGE, 0 },
                { "18446744073710s", -ERANGE, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                uint64_t v = 0;
                int r = parse_duration_usec(cases[i].in, &v);

                if (r != cases[i].r)
                        fail_msg("'%s': got %d, want %d", cases[i].in, r, cases[i].r);
                if (r == 0)
                        assert_int_equal(v, cases[i].usec);
        }
}

static void test_parse_size(void **state) {
        static const struct {
                const char *in;
                int r;
                uint64_t bytes;
        } cases[] = {
                { "4096", 0, 4096 },
                { "64K", 0, 64 * 1024 },
                { "64KiB", 0, 64 * 1024 },
                { "64MiB", 0, UINT64_C(64) << 20 },
                { "2GB", 0, UINT64_C(2) << 30 },
                { "1T", 0, UINT64_C(1) << 40 },
                { "12B", 0, 12 },
                { "64mib", -EINVAL, 0 },
                { "64 MiB", -EINVAL, 0 },
                { "MiB", -EINVAL, 0 },
                { "16777216T", -ERANGE, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                uint64_t v = 0;
                int r = parse_size(cases[i].in, &v);

                if (r != cases[i].r)
                        fail_msg("'%s': got %d, want %d", cases[i].in, r, cases[i].r);
                if (r == 0)
                        assert_int_equal(v, cases[i].bytes);
        }
}

static void test_parse_listen_addr(void **state) {
        static const struct {
                const char *in;
                int r;
                const char *canonical;
                int family;
        } cases[] = {
                { "127.0.0.1:9769", 0, "127.0.0.1:9769", AF_INET },
                { "0.0.0.0:80", 0, "0.0.0.0:80", AF_INET },
                { "localhost:1", 0, "127.0.0.1:1", AF_INET },
                { "[::1]:9769", 0, "[::1]:9769", AF_INET6 },
                { "[fe80::1]:0", 0, "[fe80::1]:0", AF_INET6 },
                { "[1111:2222:3333:4444:5555:6666:7777:8888]:65535", 0,
                  "[1111:2222:3333:4444:5555:6666:7777:8888]:65535", AF_INET6 },
                { ":9769", 0, ":9769", AF_INET6 },
                { "127.0.0.1", -EINVAL, NULL, 0 },
                { "127.0.0.1:", -EINVAL, NULL, 0 },
                { "127.0.0.1:65536", -ERANGE, NULL, 0 },
                { "::1:9769", -EINVAL, NULL, 0 },
                { "[::1]9769", -EINVAL, NULL, 0 },
                { "[::1:9769", -EINVAL, NULL, 0 },
                { "[]:1", -EINVAL, NULL, 0 },
                { "256.0.0.1:1", -EINVAL, NULL, 0 },
                { "example.com:80", -EINVAL, NULL, 0 },
                { "1.2.3.4:-1", -EINVAL, NULL, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct listen_addr a;
                char buf[LISTEN_ADDR_STR_MAX];
                int r = parse_listen_addr(cases[i].in, &a);

                if (r != cases[i].r)
                        fail_msg("'%s': got %d, want %d", cases[i].in, r, cases[i].r);
                if (r < 0)
                        continue;
                assert_int_equal(a.sa.ss_family, cases[i].family);
                assert_string_equal(listen_addr_to_string(&a, buf, sizeof(buf)), cases[i].canonical);
        }
}

static void test_parse_line_size(void **state) {
        static const struct {
                const char *in;
                int r;
        } cases[] = {
                { "16", 0 }, { "64", 0 }, { "128", 0 }, { "1024", 0 },
                { "0", -ERANGE }, { "8", -ERANGE }, { "96", -ERANGE }, { "2048", -ERANGE },
                { "", -EINVAL }, { "64\n", -EINVAL }, { " 64", -EINVAL }, { "sixty-four", -EINVAL },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                uint32_t v = 7;
                int r = parse_line_size(cases[i].in, &v);

                if (r != cases[i].r)
                        fail_msg("'%s': got %d, want %d", cases[i].in, r, cases[i].r);
                /* Written only on success. */
                assert_int_equal(v, r == 0 ? (uint32_t) strtoul(cases[i].in, NULL, 10) : 7);
        }
}

static void test_format_double_shortest(void **state) {
        /* Expected strings are what Python's repr() (shortest round trip) gives. */
        static const struct {
                double v;
                const char *want;
        } cases[] = {
                { 1795415724.06, "1795415724.06" }, /* %.17g: 1795415724.0599999 */
                { 0.1, "0.1" },
                { 0.1 + 0.2, "0.30000000000000004" },
                { 1.0 / 3.0, "0.3333333333333333" },
                { 1.5, "1.5" },
                { 0, "0" },
                { -2.5e-7, "-2.5e-07" },
                { 1e21, "1e+21" },
                { 123456789012345680.0, "1.2345678901234568e+17" },
                { 2.2250738585072014e-308, "2.2250738585072014e-308" },
        };
        char buf[FORMAT_DOUBLE_MAX];

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                assert_string_equal(format_double_shortest(cases[i].v, buf), cases[i].want);

        /* Whatever the digits, the text reads back as the same double. */
        for (double v = 1e-300; v < 1e300; v *= 7.3890560989306495)
                for (int k = -3; k <= 3; k++) {
                        /* v and its neighbours k ulps away (IEEE 754 bit patterns are ordered). */
                        uint64_t bits;
                        double x;

                        memcpy(&bits, &v, sizeof(bits));
                        bits += (uint64_t) (int64_t) k;
                        memcpy(&x, &bits, sizeof(x));
                        assert_true(strtod(format_double_shortest(x, buf), NULL) == x);
                        assert_true(strtod(format_double_shortest(-x, buf), NULL) == -x);
                }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_safe_atou64),
                cmocka_unit_test(test_safe_atou32_atoi32),
                cmocka_unit_test(test_hex_digit_value),
                cmocka_unit_test(test_parse_bool),
                cmocka_unit_test(test_parse_duration),
                cmocka_unit_test(test_parse_size),
                cmocka_unit_test(test_parse_listen_addr),
                cmocka_unit_test(test_parse_line_size),
                cmocka_unit_test(test_format_double_shortest),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
