/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * One scrape's exposition, built once and rendered in the format the
 * scraper negotiated:
 *  - Prometheus text 0.0.4 (exposition_formats.md): HELP and TYPE before a
 *    family's samples, samples grouped, label values escaped, no timestamps;
 *  - OpenMetrics 1.0.0: counter families named without "_total" (the sample
 *    keeps it), UNIT where the family has one, "# EOF" at the end;
 *  - protobuf: varint-length-delimited io.prometheus.client.MetricFamily,
 *    histograms carrying classic buckets and, when given, native buckets.
 *
 * Producers call prom_family() and then its samples; strings are copied, so
 * callers may pass temporaries.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "negotiate.h"
#include "strbuf.h"

enum prom_type {
        PROM_COUNTER,
        PROM_GAUGE,
        PROM_HISTOGRAM,
        PROM_UNTYPED,
};

struct prom_histogram {
        uint64_t count;
        double sum;
        /* Classic buckets: increasing upper bounds, cumulative counts; +Inf implied. */
        size_t n_buckets;
        const double *upper_bounds;
        const uint64_t *cumulative_counts;
        /*
         * Native buckets (Prometheus native histograms): bucket i covers
         * (2^((i-1)/2^schema), 2^(i/2^schema)]. Indexes strictly increasing,
         * counts non-cumulative. Values <= zero_threshold go to zero_count.
         */
        bool native;
        int32_t schema;
        double zero_threshold;
        uint64_t zero_count;
        size_t n_native;
        const int32_t *native_index;
        const uint64_t *native_count;
};

struct prom_writer;

struct prom_writer *prom_writer_new(void);
struct prom_writer *prom_writer_free(struct prom_writer *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct prom_writer *, prom_writer_free);

/*
 * Starts a family. `name` is the text-format name (counters end in
 * "_total"); `unit` (e.g. "seconds", "bytes") or NULL, and when set the
 * name (without "_total") must end in "_<unit>".
 */
void prom_family_unit(struct prom_writer *w, const char *name, enum prom_type type, const char *unit,
                      const char *help);
static inline void prom_family(struct prom_writer *w, const char *name, enum prom_type type,
                               const char *help) {
        prom_family_unit(w, name, type, NULL, help);
}

/* `labels`: NULL or a NULL-terminated list of name, value pairs. */
void prom_sample_u64(struct prom_writer *w, const char *const *labels, uint64_t v);
void prom_sample_double(struct prom_writer *w, const char *const *labels, double v);
void prom_sample_histogram(struct prom_writer *w, const char *const *labels,
                           const struct prom_histogram *h);

/*
 * A table of counters from a module the exporters do not know (the symbol
 * cache's, say): consecutive rows of the same name are one family, each row
 * one sample, labelled label="label_value" when label is set.
 */
struct prom_counter_row {
        const char *name;               /* text-format name, ending in "_total" */
        const char *help;
        const char *label, *label_value;
        uint64_t value;
};

void prom_write_counter_rows(struct prom_writer *w, const struct prom_counter_row *rows, size_t n);

void prom_render(const struct prom_writer *w, enum prom_format format, struct strbuf *out);

/* Escape a label value (\\, \", \n) onto out. */
void prom_escape_label_value(struct strbuf *out, const char *value);
