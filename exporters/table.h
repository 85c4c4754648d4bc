/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * A table of an answer for people: columns (with the group headers perf
 * draws above them), rows of cells that keep both their text and the number
 * they sort by. One table renders two ways: fixed-width text sized to its
 * data, the layout of `perf c2c report --stdio` and `perf report --stdio`
 * (header lines behind "#", columns two spaces apart), and an HTML <table>
 * whose header cells sort it (views.h).
 *
 * Summary rows split a table into blocks (perf c2c's Pareto: one block per
 * cache line): in text each is framed by separator lines, in HTML it starts
 * a <tbody>, and sorting reorders the rows inside each block only.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

enum table_align {
        TABLE_RIGHT, /* numbers */
        TABLE_LEFT,  /* names */
};

struct table_column {
        const char *group; /* the header above a run of columns with the same group; NULL none */
        const char *name;
        enum table_align align;
        const char *help;  /* what the column means (HTML title); NULL none */
        bool alone;        /* its group stands over it alone, even beside a column of the same group */
};

enum table_row_kind {
        TABLE_ROW,
        TABLE_ROW_SUMMARY,
};

struct table_cell {
        char *text;
        double key;   /* the sort key of a numeric cell */
        bool numeric;
};

struct table_row {
        enum table_row_kind kind;
        size_t first; /* its first cell in cells[] */
};

struct table {
        const struct table_column *cols; /* static: outlives the table */
        size_t ncols;
        struct table_row *rows;
        size_t nrows, rows_cap;
        struct table_cell *cells;
        size_t ncells, cells_cap;
};

void table_init(struct table *t, const struct table_column *cols, size_t ncols);
void table_done(struct table *t);

/*
 * A new row; then exactly ncols cells, left to right, each with one of the
 * calls below (a row left short is completed with empty cells).
 */
void table_row(struct table *t, enum table_row_kind kind);
/* Text, sorted as text. NULL or "" is an empty cell, which sorts first. */
void table_text(struct table *t, const char *s);
void table_textf(struct table *t, const char *fmt, ...) _printf_(2, 3);
/* A count. */
void table_u64(struct table *t, uint64_t v);
/* A formatted number (a percentage, a ratio) sorted by `key`. */
void table_num(struct table *t, double key, const char *fmt, ...) _printf_(3, 4);

/*
 * Fixed-width text: header lines start with "# ", rows with two spaces, so
 * that both align; every column as wide as its widest cell or name. Control
 * characters in cells are shown as '?' (a name cannot move the cursor of
 * the terminal it is printed on); everything else is written as it is.
 * Widths count UTF-8 characters.
 */
void table_render_text(const struct table *t, struct strbuf *out);

/* An HTML <table class="sortable">, every cell escaped; numeric cells carry data-v with their key. */
void table_render_html(const struct table *t, const char *id, struct strbuf *out);

/* Text for an HTML text node or a quoted attribute value: & < > " ' escaped. */
void html_escape(struct strbuf *out, const char *s);

/* Text for a terminal: control characters as '?', the rest as it is. */
void text_escape(struct strbuf *out, const char *s);
