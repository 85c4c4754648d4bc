/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Writer for the Prometheus text exposition format 0.0.4
 * (prometheus/docs exposition_formats.md): one HELP and one TYPE line per
 * family before its samples, samples of a family grouped together, label
 * values escaped, no timestamps.
 */

#include <stdint.h>

#include "strbuf.h"

#define PROM_TEXT_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

enum prom_type {
        PROM_COUNTER,
        PROM_GAUGE,
        PROM_HISTOGRAM,
        PROM_UNTYPED,
};

struct prom_writer {
        struct strbuf *out;
};

/* Starts a family: HELP and TYPE lines. */
void prom_family(struct prom_writer *w, const char *name, enum prom_type type, const char *help);

/*
 * One sample. `labels` is NULL or a NULL-terminated list of name, value
 * pairs; values are escaped here.
 */
void prom_sample_u64(struct prom_writer *w, const char *name, const char *const *labels, uint64_t v);
void prom_sample_double(struct prom_writer *w, const char *name, const char *const *labels, double v);

/* Escape a label value (\\, \", \n) onto out. */
void prom_escape_label_value(struct strbuf *out, const char *value);
