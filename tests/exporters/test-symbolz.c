/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * exporters/symbolz.c: what go tool pprof posts to /debug/pprof/symbol
 * (github.com/google/pprof internal/symbolz: "%#x" addresses joined by '+')
 * and what Go's net/http/pprof Symbol() would answer, written out here by
 * hand: "num_symbols: 1", then one "0xADDR NAME" line per address in
 * request order, duplicates too, nothing for an address not named, and
 * words Go's strconv.ParseUint(word, 0, 64) reads as something else or not
 * at all skipped.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "strbuf.h"
#include "symbolz.h"

static void parse(const char *text, const uint64_t *want, size_t n_want) {
        struct symbolz_query q;

        assert_int_equal(symbolz_parse(text, strlen(text), &q), 0);
        assert_int_equal(q.n, n_want);
        for (size_t i = 0; i < n_want; i++)
                assert_int_equal(q.addrs[i], want[i]);
        symbolz_query_done(&q);
}

static void test_parse(void **state) {
        /* pprof's own body. */
        parse("0x401000+0x7f0012345678+0x401000", (const uint64_t[]) { 0x401000, 0x7f0012345678, 0x401000 }, 3);
        /* A GET query as libmicrohttpd hands it over ('+' decoded to ' '), and a hand-typed body. */
        parse("0x1f 0X2F\t31\n0xffffffffffffffff", (const uint64_t[]) { 0x1f, 0x2f, 31, UINT64_MAX }, 4);
        parse("18446744073709551615+0x00000000000000000001", (const uint64_t[]) { UINT64_MAX, 1 }, 2);
        /* Skipped: 0 (Go answers only pc != 0), 2^64, Go's octal 017 and other bases, junk, empty words. */
        parse("0+0x0+0x10000000000000000+18446744073709551616+017+0o17+0b1+0x_1+0x+x1+1a+-1+++ +", NULL, 0);
        parse("", NULL, 0);
        parse("+0x10+", (const uint64_t[]) { 0x10 }, 1);
}

static void test_parse_bound(void **state) {
        struct symbolz_query q = { .n = 7 };
        struct strbuf big = STRBUF_INIT;
        size_t n = 0;

        /* At the bound: every word read. */
        while (big.len + 4 <= SYMBOLZ_BODY_MAX) {
                strbuf_puts(&big, "0x1+");
                n++;
        }
        assert_int_equal(symbolz_parse(big.buf, big.len, &q), 0);
        assert_int_equal(q.n, n);
        symbolz_query_done(&q);
        /* A byte over: refused, q untouched. */
        strbuf_putc(&big, '+');
        while (big.len <= SYMBOLZ_BODY_MAX)
                strbuf_putc(&big, '1');
        q.n = 7;
        assert_int_equal(symbolz_parse(big.buf, big.len, &q), -E2BIG);
        assert_int_equal(q.n, 7);
        strbuf_done(&big);
}

/* The names the test's symbolizer knows, and what it was asked. */
struct fake {
        uint64_t asked[16];
        size_t n_asked;
};

static void fake_names(void *userdata, const uint64_t *addrs, size_t n, symbolz_found_fn found, void *ctx) {
        struct fake *f = userdata;

        assert_true(n <= ELEMENTSOF(f->asked));
        for (size_t i = 0; i < n; i++) {
                f->asked[f->n_asked++] = addrs[i];
                if (addrs[i] == 0x401000)
                        found(ctx, i, "main");
                else if (addrs[i] == 0x401010)
                        found(ctx, i, "ns::f<int>(char const*)");
                else if (addrs[i] == 0x401020)
                        found(ctx, i, "evil\n0x401000 forged\r\x7f");
                else if (addrs[i] == 0x401030)
                        found(ctx, i, "");
        }
}

static void answer(const char *request, struct fake *f, const char *want) {
        struct symbolz_query q;
        struct strbuf out = STRBUF_INIT;

        assert_int_equal(symbolz_parse(request, strlen(request), &q), 0);
        symbolz_answer(&q, fake_names, f, &out);
        assert_string_equal(out.buf, want);
        symbolz_query_done(&q);
        strbuf_done(&out);
}

static void test_answer(void **state) {
        struct fake f = {};

        answer("0x401010+0x999+0x401000+0x401010", &f,
               "num_symbols: 1\n"
               "0x401010 ns::f<int>(char const*)\n"
               "0x401000 main\n"
               "0x401010 ns::f<int>(char const*)\n");
        /* Asked once per distinct address, in ascending order. */
        assert_int_equal(f.n_asked, 3);
        assert_int_equal(f.asked[0], 0x999);
        assert_int_equal(f.asked[1], 0x401000);
        assert_int_equal(f.asked[2], 0x401010);

        /* A name cannot make a line of its own; an empty one is no name. */
        f = (struct fake) {};
        answer("0x401020+0x401030", &f, "num_symbols: 1\n0x401020 evil\\x0a0x401000 forged\\x0d\\x7f\n");

        /* Nothing asked (a GET with no query), or nothing known. */
        f = (struct fake) {};
        answer("", &f, "num_symbols: 1\n");
        assert_int_equal(f.n_asked, 0);
        {
                struct symbolz_query q = {};
                struct strbuf out = STRBUF_INIT;

                assert_int_equal(symbolz_parse("0x401000", 8, &q), 0);
                symbolz_answer(&q, NULL, NULL, &out);
                assert_string_equal(out.buf, "num_symbols: 1\n");
                symbolz_query_done(&q);
                strbuf_done(&out);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_parse_bound),
                cmocka_unit_test(test_answer),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
