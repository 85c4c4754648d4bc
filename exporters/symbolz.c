/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "symbolz.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "parse-util.h"

static bool is_separator(char c) {
        return c == '+' || c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/*
 * One word: 0x-prefixed hex or decimal, within 64 bits, not 0. A decimal
 * with a leading 0 is Go's octal (strconv "base prefix"): not ours to read
 * as decimal, so skipped, as are Go's 0o/0b prefixes and underscores.
 */
static bool parse_word(const char *w, size_t len, uint64_t *ret) {
        uint64_t v = 0;

        if (len > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X')) {
                for (size_t i = 2; i < len; i++) {
                        int d = hex_digit_value(w[i]);

                        if (d < 0 || v >> 60)
                                return false;
                        v = v << 4 | (uint64_t) d;
                }
        } else {
                if (len == 0 || (w[0] == '0' && len > 1))
                        return false;
                for (size_t i = 0; i < len; i++) {
                        uint64_t d = (uint64_t) (w[i] - '0');

                        if (w[i] < '0' || w[i] > '9' || v > (UINT64_MAX - d) / 10)
                                return false;
                        v = v * 10 + d;
                }
        }
        *ret = v;
        return v != 0;
}

int symbolz_parse(const char *text, size_t len, struct symbolz_query *ret) {
        struct symbolz_query q = {};

        if (len > SYMBOLZ_BODY_MAX)
                return -E2BIG;
        /* A word and its separator are at least two bytes. */
        q.addrs = xcalloc(len / 2 + 1, sizeof(*q.addrs));
        for (size_t i = 0; i < len;) {
                size_t start = i;
                uint64_t v;

                while (i < len && !is_separator(text[i]))
                        i++;
                if (parse_word(text + start, i - start, &v))
                        q.addrs[q.n++] = v;
                i++;
        }
        *ret = q;
        return 0;
}

void symbolz_query_done(struct symbolz_query *q) {
        free(q->addrs);
        *q = (struct symbolz_query) {};
}

static int u64_cmp(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

struct names {
        struct strbuf text;     /* the names, each NUL-terminated */
        size_t *at;             /* per distinct address: its name's offset in text + 1, 0 for none */
};

static void found(void *ctx, size_t i, const char *name) {
        struct names *n = ctx;

        /* An empty name would be a line pprof reads as naming the address "". */
        if (!name || !*name)
                return;
        n->at[i] = n->text.len + 1;
        strbuf_puts(&n->text, name);
        strbuf_putc(&n->text, '\0');
}

/* A name on one line: what would end or split it as \xNN. */
static void put_name(struct strbuf *out, const char *name) {
        for (const char *p = name; *p; p++) {
                uint8_t c = (uint8_t) *p;

                if (c < 0x20 || c == 0x7f)
                        strbuf_printf(out, "\\x%02x", c);
                else
                        strbuf_putc(out, (char) c);
        }
}

void symbolz_answer(const struct symbolz_query *q, symbolz_names_fn names, void *userdata, struct strbuf *out) {
        _cleanup_free_ uint64_t *sorted = xcalloc(q->n ? q->n : 1, sizeof(*sorted));
        struct names n = { .text = STRBUF_INIT };
        size_t n_sorted = 0;

        /* Go's: "Pprof only cares whether this number is 0 (no symbols available) or > 0." */
        strbuf_puts(out, "num_symbols: 1\n");
        if (q->n == 0 || !names)
                return;
        memcpy(sorted, q->addrs, q->n * sizeof(*sorted));
        qsort(sorted, q->n, sizeof(*sorted), u64_cmp);
        for (size_t i = 0; i < q->n; i++)
                if (n_sorted == 0 || sorted[n_sorted - 1] != sorted[i])
                        sorted[n_sorted++] = sorted[i];
        n.at = xcalloc(n_sorted, sizeof(*n.at));
        names(userdata, sorted, n_sorted, found, &n);
        for (size_t i = 0; i < q->n; i++) {
                const uint64_t *hit = bsearch(&q->addrs[i], sorted, n_sorted, sizeof(*sorted), u64_cmp);
                size_t at = hit ? n.at[hit - sorted] : 0;

                if (at == 0)
                        continue;
                /* Go's "%#x". */
                strbuf_printf(out, "0x%" PRIx64 " ", q->addrs[i]);
                put_name(out, n.text.buf + at - 1);
                strbuf_putc(out, '\n');
        }
        free(n.at);
        strbuf_done(&n.text);
}
