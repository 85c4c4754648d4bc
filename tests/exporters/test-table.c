/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * exporters/table.c: the text layout holds whatever the cells hold (16-digit
 * addresses, a 300-character symbol, UTF-8, control characters), checked by
 * finding each column's name in the header line and each cell at that place
 * in its row, not by comparing with a stored rendering; the HTML form escapes
 * every cell and carries the sort keys.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "table.h"

static const struct table_column cols[] = {
        { NULL, "Index", TABLE_RIGHT, NULL },
        { "Cacheline", "Address", TABLE_RIGHT, NULL },
        { "Cacheline", "Node", TABLE_RIGHT, NULL },
        { "Total", "records", TABLE_RIGHT, NULL, true },
        { "Total", "Loads", TABLE_RIGHT, NULL, true },
        { NULL, "Symbol", TABLE_LEFT, NULL },
        { NULL, "Object", TABLE_LEFT, NULL },
};

#define NROWS 4
static const char *const addresses[NROWS] = { "0xffffffffffffffff", "0x0", "0xaaaac0001000", "[anon]+0x40" };
static const uint64_t records[NROWS] = { 18446744073709551615ULL, 0, 7, 123456 };
static char long_symbol[301];
static const char *symbols[NROWS] = { NULL, "[.] café_crème_ünïcödé", "[.] a\tb\x1b[31mred", "" };

/* Byte offset of the idx-th character (UTF-8) of line, or NULL past its end. */
static const char *char_at(const char *line, size_t idx) {
        for (size_t n = 0; *line; line++)
                if (((unsigned char) *line & 0xc0) != 0x80 && n++ == idx)
                        return line;
        return idx == 0 || *line == '\0' ? NULL : line;
}

static size_t chars(const char *s, size_t bytes) {
        size_t n = 0;

        for (size_t i = 0; i < bytes && s[i]; i++)
                n += ((unsigned char) s[i] & 0xc0) != 0x80;
        return n;
}

/* What the text shows of a cell: control characters as '?'. */
static void shown(const char *cell, char *buf, size_t len) {
        size_t i = 0;

        for (; *cell && i + 1 < len; cell++)
                buf[i++] = (unsigned char) *cell < 0x20 || *cell == 0x7f ? '?' : *cell;
        buf[i] = '\0';
}

static void build(struct table *t) {
        memset(long_symbol, 'x', sizeof(long_symbol) - 1);
        memcpy(long_symbol, "[.] ", 4);
        symbols[0] = long_symbol;
        table_init(t, cols, ELEMENTSOF(cols));
        for (size_t r = 0; r < NROWS; r++) {
                table_row(t, r == 2 ? TABLE_ROW_SUMMARY : TABLE_ROW);
                table_u64(t, r);
                table_text(t, addresses[r]);
                table_text(t, r % 2 ? "N/A" : "0");
                table_u64(t, records[r]);
                table_num(t, (double) r / 3, "%.2f%%", 100.0 * (double) r / 3);
                table_text(t, symbols[r]);
                if (r < 3)
                        table_text(t, "t.elf"); /* the last row is left short: completed empty */
        }
        table_row(t, TABLE_ROW); /* a row without cells */
}

static void test_text_alignment(void **state) {
        struct table t;
        struct strbuf out = STRBUF_INIT;
        char *save = NULL, *line, *names = NULL;
        size_t start[ELEMENTSOF(cols)], end[ELEMENTSOF(cols)], row = 0, lines = 0;

        build(&t);
        table_render_text(&t, &out);
        printf("%s", out.buf);
        for (line = strtok_r(out.buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char cells[ELEMENTSOF(cols)][512];

                lines++;
                /* No control character reaches the terminal. */
                for (const char *p = line; *p; p++)
                        assert_false((unsigned char) *p < 0x20 || *p == 0x7f);
                if (strncmp(line, "# ", 2) == 0 && strstr(line, "Index") && strstr(line, "Symbol")) {
                        const char *p = line;

                        names = line;
                        for (size_t c = 0; c < ELEMENTSOF(cols); c++) {
                                const char *at = strstr(p, cols[c].name);

                                assert_non_null(at);
                                start[c] = chars(line, (size_t) (at - line));
                                end[c] = start[c] + strlen(cols[c].name);
                                p = at + strlen(cols[c].name);
                        }
                        continue;
                }
                if (line[0] == '#' || strspn(line, " -") == strlen(line))
                        continue;
                assert_non_null(names);
                /* A data row: each cell where its column's name is, right- or left-aligned to it. */
                snprintf(cells[0], sizeof(cells[0]), "%zu", row);
                snprintf(cells[1], sizeof(cells[1]), "%s", addresses[row]);
                snprintf(cells[2], sizeof(cells[2]), "%s", row % 2 ? "N/A" : "0");
                snprintf(cells[3], sizeof(cells[3]), "%llu", (unsigned long long) records[row]);
                snprintf(cells[4], sizeof(cells[4]), "%.2f%%", 100.0 * (double) row / 3);
                shown(symbols[row] ?: "", cells[5], sizeof(cells[5]));
                snprintf(cells[6], sizeof(cells[6]), "%s", row < 3 ? "t.elf" : "");
                for (size_t c = 0; c < ELEMENTSOF(cols); c++) {
                        size_t w = chars(cells[c], strlen(cells[c]));
                        size_t at = cols[c].align == TABLE_RIGHT ? end[c] - w : start[c];
                        const char *p = char_at(line, at);

                        if (w == 0)
                                continue;
                        /* The column is at least as wide as its widest cell: a right-aligned one grows left. */
                        if (cols[c].align == TABLE_RIGHT)
                                assert_true(end[c] >= w);
                        assert_non_null(p);
                        if (strncmp(p, cells[c], strlen(cells[c])) != 0)
                                fail_msg("row %zu column %s: '%s' not at character %zu of '%s'", row, cols[c].name,
                                         cells[c], at, line);
                        /* Separated from its left neighbour by blanks. */
                        if (at > 0)
                                assert_int_equal(*char_at(line, at - 1), ' ');
                }
                row++;
        }
        /* Every row was found; the row without cells is an empty line, trimmed. */
        assert_int_equal(row, NROWS);
        assert_true(lines > NROWS);
        table_done(&t);
        strbuf_done(&out);
}

/* perf's "Cacheline" over two columns in dashes, "Total" over each of its own columns alone. */
static void test_group_line(void **state) {
        struct table t;
        struct strbuf out = STRBUF_INIT;
        char *first;

        build(&t);
        table_render_text(&t, &out);
        first = strndup(out.buf, strcspn(out.buf, "\n"));
        assert_non_null(strstr(first, "- Cacheline -"));
        assert_non_null(strstr(strstr(first, "Total") + 1, "Total"));
        assert_null(strstr(first, "- Total -"));
        free(first);
        table_done(&t);
        strbuf_done(&out);
}

static void test_html(void **state) {
        static const struct table_column c[] = {
                { "G\"<", "Name <b>", TABLE_LEFT, "what's \"this\"" },
                { NULL, "N", TABLE_RIGHT, NULL },
        };
        struct table t;
        struct strbuf out = STRBUF_INIT;

        table_init(&t, c, ELEMENTSOF(c));
        table_row(&t, TABLE_ROW_SUMMARY);
        table_text(&t, "<script>alert('x')</script> & \"q\"");
        table_u64(&t, 42);
        table_row(&t, TABLE_ROW);
        table_text(&t, "plain");
        table_num(&t, 0.125, "%.1f%%", 12.5);
        table_render_html(&t, "id\"x", &out);
        printf("%s", out.buf);
        assert_null(strstr(out.buf, "<script"));
        assert_null(strstr(out.buf, "<b>"));
        assert_non_null(strstr(out.buf, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"));
        assert_non_null(strstr(out.buf, "id=\"id&quot;x\""));
        assert_non_null(strstr(out.buf, "title=\"what&#39;s &quot;this&quot;\""));
        assert_non_null(strstr(out.buf, "data-v=\"42\""));
        assert_non_null(strstr(out.buf, "data-v=\"0.125\">12.5%"));
        /* The summary row opens a block of its own, sorted apart. */
        assert_non_null(strstr(out.buf, "<tbody>\n<tr class=\"summary\">"));
        table_done(&t);
        strbuf_done(&out);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_text_alignment),
                cmocka_unit_test(test_group_line),
                cmocka_unit_test(test_html),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
