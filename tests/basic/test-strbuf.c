/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/strbuf.c: printf appends formatted once where the buffer has room
 * and measured first where not, so every length around the capacity is
 * tried against snprintf()'s own text; strbuf_put_u64() against PRIu64.
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
#include "strbuf.h"

static void test_printf_around_capacity(void **state) {
        /* The first allocation is 256 bytes: prefixes up to past it, texts from empty to longer than it. */
        for (size_t prefix = 0; prefix < 300; prefix += 7)
                for (size_t n = 0; n < 600; n += 13) {
                        struct strbuf sb = STRBUF_INIT;
                        char *want = xmalloc(prefix + n + 32);
                        int len;

                        for (size_t i = 0; i < prefix; i++)
                                strbuf_putc(&sb, (char) ('a' + i % 26));
                        strbuf_printf(&sb, "%0*d|%s", (int) n, 7, "end");
                        len = snprintf(want, prefix + n + 32, "%.*s%0*d|%s", (int) prefix, sb.buf, (int) n, 7, "end");
                        assert_int_equal(sb.len, (size_t) len);
                        assert_string_equal(sb.buf, want);
                        assert_true(sb.cap > sb.len);
                        free(want);
                        strbuf_done(&sb);
                }
}

static void test_printf_appends(void **state) {
        struct strbuf sb = STRBUF_INIT;

        strbuf_printf(&sb, "%s", "");
        assert_int_equal(sb.len, 0);
        strbuf_printf(&sb, "%d-%s", 42, "x");
        strbuf_puts(&sb, "/");
        strbuf_printf(&sb, "%.2f", 1.5);
        assert_string_equal(sb.buf, "42-x/1.50");
        assert_int_equal(sb.len, strlen("42-x/1.50"));
        strbuf_done(&sb);
}

static void test_put_u64(void **state) {
        static const uint64_t cases[] = {
                0, 1, 9, 10, 99, 100, 4294967295U, 4294967296U, 9999999999999999999U, 10000000000000000000U,
                UINT64_MAX - 1, UINT64_MAX,
        };
        struct strbuf sb = STRBUF_INIT, want = STRBUF_INIT;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                strbuf_put_u64(&sb, cases[i]);
                strbuf_putc(&sb, ' ');
                strbuf_printf(&want, "%" PRIu64 " ", cases[i]);
        }
        for (uint64_t v = 1; v < UINT64_MAX / 3; v = v * 3 + 1) {
                strbuf_put_u64(&sb, v);
                strbuf_putc(&sb, ',');
                strbuf_printf(&want, "%" PRIu64 ",", v);
        }
        assert_string_equal(sb.buf, want.buf);
        assert_int_equal(sb.len, want.len);
        strbuf_done(&sb);
        strbuf_done(&want);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_printf_around_capacity),
                cmocka_unit_test(test_printf_appends),
                cmocka_unit_test(test_put_u64),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
