/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/strbuf.c: printf appends formatted once where the buffer has room
 * and measured first where not, so every length around the capacity is
 * tried against snprintf()'s own text; strbuf_put_u64() against PRIu64;
 * escape_bytes() on every byte value and at every cut.
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

static void test_escape_bytes(void **state) {
        char src[256], out[1100], want[1100];
        size_t o = 0;

        /* Every byte, NUL included: printable ASCII as is, the rest as \xNN. */
        for (unsigned c = 0; c < 256; c++) {
                src[c] = (char) c;
                o += (size_t) (c >= 0x20 && c < 0x7f ? snprintf(want + o, sizeof(want) - o, "%c", c)
                                                     : snprintf(want + o, sizeof(want) - o, "\\x%02x", c));
        }
        escape_bytes(out, sizeof(out), src, sizeof(src));
        assert_string_equal(out, want);
        assert_int_equal(strlen(out), 95 + 161 * 4);

        /* Cut short: a prefix of the whole, never half an escape, always terminated. */
        for (size_t size = 1; size < 40; size++) {
                char cut[40];

                memset(cut, 'Z', sizeof(cut));
                escape_bytes(cut, size, "\xff" "ab" "\x01", 4);
                assert_true(strlen(cut) < size);
                assert_memory_equal(cut, "\\xffab\\x01", strlen(cut));
                assert_true(strlen(cut) == 0 || strlen(cut) == 4 || strlen(cut) == 5 || strlen(cut) == 6 ||
                            strlen(cut) == 10);
        }
        escape_bytes(out, 1, "abc", 3);
        assert_string_equal(out, "");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_printf_around_capacity),
                cmocka_unit_test(test_printf_appends),
                cmocka_unit_test(test_put_u64),
                cmocka_unit_test(test_escape_bytes),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
