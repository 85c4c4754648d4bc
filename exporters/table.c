/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "table.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"

void table_init(struct table *t, const struct table_column *cols, size_t ncols) {
        *t = (struct table) { .cols = cols, .ncols = ncols };
}

void table_done(struct table *t) {
        for (size_t i = 0; i < t->ncells; i++)
                free(t->cells[i].text);
        free(t->cells);
        free(t->rows);
        *t = (struct table) {};
}

/* The cells of the last row, or of none. */
static size_t row_cells(const struct table *t) {
        return t->nrows ? t->ncells - t->rows[t->nrows - 1].first : 0;
}

static void cell(struct table *t, char *text, bool numeric, double key) {
        if (t->nrows == 0 || row_cells(t) >= t->ncols) {
                /* A caller's bug, not the client's: the table stays whole. */
                free(text);
                return;
        }
        if (t->ncells == t->cells_cap) {
                t->cells_cap = t->cells_cap ? 2 * t->cells_cap : 64;
                t->cells = xrealloc(t->cells, t->cells_cap * sizeof(*t->cells));
        }
        t->cells[t->ncells++] = (struct table_cell) { text, key, numeric };
}

void table_row(struct table *t, enum table_row_kind kind) {
        while (t->nrows && row_cells(t) < t->ncols)
                table_text(t, NULL);
        if (t->nrows == t->rows_cap) {
                t->rows_cap = t->rows_cap ? 2 * t->rows_cap : 16;
                t->rows = xrealloc(t->rows, t->rows_cap * sizeof(*t->rows));
        }
        t->rows[t->nrows++] = (struct table_row) { kind, t->ncells };
}

void table_text(struct table *t, const char *s) {
        cell(t, xstrdup(s ?: ""), false, 0);
}

void table_textf(struct table *t, const char *fmt, ...) {
        struct strbuf b = STRBUF_INIT;
        va_list ap;

        va_start(ap, fmt);
        strbuf_vprintf(&b, fmt, ap);
        va_end(ap);
        cell(t, strbuf_steal(&b, NULL) ?: xstrdup(""), false, 0);
}

void table_u64(struct table *t, uint64_t v) {
        char buf[DECIMAL_STR_MAX(uint64_t)];

        snprintf(buf, sizeof(buf), "%" PRIu64, v);
        cell(t, xstrdup(buf), true, (double) v);
}

void table_num(struct table *t, double key, const char *fmt, ...) {
        struct strbuf b = STRBUF_INIT;
        va_list ap;

        va_start(ap, fmt);
        strbuf_vprintf(&b, fmt, ap);
        va_end(ap);
        cell(t, strbuf_steal(&b, NULL) ?: xstrdup(""), true, key);
}

static const struct table_cell *cell_at(const struct table *t, size_t row, size_t col) {
        size_t first = t->rows[row].first, end = row + 1 < t->nrows ? t->rows[row + 1].first : t->ncells;

        return first + col < end ? &t->cells[first + col] : NULL;
}

/* Characters a terminal shows, counted as UTF-8 (continuation bytes are not characters). */
static size_t text_width(const char *s) {
        size_t n = 0;

        for (; *s; s++)
                n += ((unsigned char) *s & 0xc0) != 0x80;
        return n;
}

void text_escape(struct strbuf *out, const char *s) {
        for (; *s; s++)
                strbuf_putc(out, (unsigned char) *s < 0x20 || *s == 0x7f ? '?' : *s);
}

static void pad(struct strbuf *out, char c, size_t n) {
        for (size_t i = 0; i < n; i++)
                strbuf_putc(out, c);
}

static void put_aligned(struct strbuf *out, const char *s, size_t width, enum table_align align) {
        size_t w = text_width(s), fill = w < width ? width - w : 0;

        if (align == TABLE_RIGHT)
                pad(out, ' ', fill);
        text_escape(out, s);
        if (align == TABLE_LEFT)
                pad(out, ' ', fill);
}

#define COL_GAP 2

/* The columns from `first` sharing its group: how many. */
static size_t group_span(const struct table *t, size_t first) {
        size_t n = 1;

        while (t->cols[first].group && !t->cols[first].alone && first + n < t->ncols && t->cols[first + n].group &&
               !t->cols[first + n].alone &&
               streq(t->cols[first + n].group, t->cols[first].group))
                n++;
        return n;
}

static size_t span_width(const size_t *width, size_t first, size_t n) {
        size_t w = 0;

        for (size_t i = first; i < first + n; i++)
                w += width[i] + (i > first ? COL_GAP : 0);
        return w;
}

/* Trailing blanks off the line just written, then its newline. */
static void end_line(struct strbuf *out) {
        while (out->len > 0 && out->buf[out->len - 1] == ' ')
                out->len--;
        strbuf_putc(out, '\n');
}

static void render_group_line(const struct table *t, const size_t *width, struct strbuf *out) {
        strbuf_puts(out, "# ");
        for (size_t c = 0; c < t->ncols;) {
                size_t n = group_span(t, c), w = span_width(width, c, n);
                const char *g = t->cols[c].group;

                if (c > 0)
                        pad(out, ' ', COL_GAP);
                if (!g)
                        pad(out, ' ', w);
                else if (n == 1)
                        put_aligned(out, g, w, t->cols[c].align);
                else {
                        /* "----- Cacheline -----": the label centred in dashes across the run. */
                        size_t lw = text_width(g) + 2, left = (w - lw) / 2;

                        pad(out, '-', left);
                        strbuf_putc(out, ' ');
                        text_escape(out, g);
                        strbuf_putc(out, ' ');
                        pad(out, '-', w - lw - left);
                }
                c += n;
        }
        end_line(out);
}

void table_render_text(const struct table *t, struct strbuf *out) {
        _cleanup_free_ size_t *width = xcalloc(t->ncols ?: 1, sizeof(*width));
        bool groups = false;
        size_t total;

        for (size_t c = 0; c < t->ncols; c++) {
                width[c] = text_width(t->cols[c].name);
                for (size_t r = 0; r < t->nrows; r++) {
                        const struct table_cell *x = cell_at(t, r, c);

                        width[c] = MAX(width[c], x ? text_width(x->text) : 0);
                }
                groups |= t->cols[c].group != NULL;
        }
        /* A group label wider than its columns widens the last of them. */
        for (size_t c = 0; c < t->ncols;) {
                size_t n = group_span(t, c), need = t->cols[c].group ? text_width(t->cols[c].group) : 0;

                if (n > 1)
                        need += 4; /* at least one dash and a blank on each side */
                /* Spread over them, the remainder to the last. */
                if (need > span_width(width, c, n)) {
                        size_t extra = need - span_width(width, c, n);

                        for (size_t i = c; i < c + n; i++)
                                width[i] += extra / n + (i == c + n - 1 ? extra % n : 0);
                }
                c += n;
        }
        total = span_width(width, 0, t->ncols);
        if (groups)
                render_group_line(t, width, out);
        strbuf_puts(out, "# ");
        for (size_t c = 0; c < t->ncols; c++) {
                if (c > 0)
                        pad(out, ' ', COL_GAP);
                put_aligned(out, t->cols[c].name, width[c], t->cols[c].align);
        }
        end_line(out);
        strbuf_puts(out, "# ");
        for (size_t c = 0; c < t->ncols; c++) {
                if (c > 0)
                        pad(out, ' ', COL_GAP);
                pad(out, '.', width[c]);
        }
        end_line(out);
        strbuf_puts(out, "#\n");
        for (size_t r = 0; r < t->nrows; r++) {
                bool summary = t->rows[r].kind == TABLE_ROW_SUMMARY;

                if (summary) {
                        if (r > 0)
                                strbuf_putc(out, '\n');
                        strbuf_puts(out, "  ");
                        pad(out, '-', total);
                        strbuf_putc(out, '\n');
                }
                strbuf_puts(out, "  ");
                for (size_t c = 0; c < t->ncols; c++) {
                        const struct table_cell *x = cell_at(t, r, c);

                        if (c > 0)
                                pad(out, ' ', COL_GAP);
                        put_aligned(out, x ? x->text : "", width[c], t->cols[c].align);
                }
                end_line(out);
                if (summary) {
                        strbuf_puts(out, "  ");
                        pad(out, '-', total);
                        strbuf_putc(out, '\n');
                }
        }
}

void html_escape(struct strbuf *out, const char *s) {
        for (; *s; s++)
                switch (*s) {
                case '&': strbuf_puts(out, "&amp;"); break;
                case '<': strbuf_puts(out, "&lt;"); break;
                case '>': strbuf_puts(out, "&gt;"); break;
                case '"': strbuf_puts(out, "&quot;"); break;
                case '\'': strbuf_puts(out, "&#39;"); break;
                default: strbuf_putc(out, *s); break;
                }
}

static const char *align_class(enum table_align a) {
        return a == TABLE_RIGHT ? "num" : "txt";
}

void table_render_html(const struct table *t, const char *id, struct strbuf *out) {
        bool groups = false, open = false;

        for (size_t c = 0; c < t->ncols; c++)
                groups |= t->cols[c].group != NULL;
        strbuf_puts(out, "<table class=\"sortable\" id=\"");
        html_escape(out, id);
        strbuf_puts(out, "\">\n<thead>\n");
        if (groups) {
                strbuf_puts(out, "<tr class=\"groups\">");
                for (size_t c = 0; c < t->ncols;) {
                        size_t n = group_span(t, c);

                        strbuf_printf(out, "<th colspan=\"%zu\">", n);
                        html_escape(out, t->cols[c].group ?: "");
                        strbuf_puts(out, "</th>");
                        c += n;
                }
                strbuf_puts(out, "</tr>\n");
        }
        strbuf_puts(out, "<tr>");
        for (size_t c = 0; c < t->ncols; c++) {
                strbuf_printf(out, "<th class=\"%s\" aria-sort=\"none\"", align_class(t->cols[c].align));
                if (t->cols[c].help) {
                        strbuf_puts(out, " title=\"");
                        html_escape(out, t->cols[c].help);
                        strbuf_putc(out, '"');
                }
                strbuf_puts(out, "><button type=\"button\">");
                html_escape(out, t->cols[c].name);
                strbuf_puts(out, "</button></th>");
        }
        strbuf_puts(out, "</tr>\n</thead>\n");
        for (size_t r = 0; r < t->nrows; r++) {
                bool summary = t->rows[r].kind == TABLE_ROW_SUMMARY;

                if (summary || !open) {
                        if (open)
                                strbuf_puts(out, "</tbody>\n");
                        strbuf_puts(out, "<tbody>\n");
                        open = true;
                }
                strbuf_puts(out, summary ? "<tr class=\"summary\">" : "<tr>");
                for (size_t c = 0; c < t->ncols; c++) {
                        const struct table_cell *x = cell_at(t, r, c);

                        strbuf_printf(out, "<td class=\"%s\"", align_class(t->cols[c].align));
                        if (x && x->numeric)
                                strbuf_printf(out, " data-v=\"%.17g\"", x->key);
                        strbuf_putc(out, '>');
                        html_escape(out, x ? x->text : "");
                        strbuf_puts(out, "</td>");
                }
                strbuf_puts(out, "</tr>\n");
        }
        if (open)
                strbuf_puts(out, "</tbody>\n");
        strbuf_puts(out, "</table>\n");
}
