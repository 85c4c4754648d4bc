/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "prom.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "io/prometheus/client/metrics.pb-c.h"
#include "parse-util.h"
#include "pb-scratch.h"

/* Strings and arrays of one exposition live in chunks freed together. */
struct arena_chunk {
        struct arena_chunk *next;
        size_t used, size;
        max_align_t data[];
};

#define ARENA_CHUNK_SIZE (64 * 1024)
/*
 * The longest family name whose counter OpenMetrics renders as "x" with
 * samples "x_total". Our names are literals far shorter; a longer one would
 * be written whole, as in the Prometheus text format.
 */
#define PROM_FAMILY_NAME_MAX 256U

struct prom_sample {
        const char *const *labels; /* NULL-terminated pairs, in the arena */
        size_t n_labels;           /* pairs */
        bool is_u64;
        uint64_t u64;
        double value;
        struct prom_histogram *hist; /* in the arena */
};

struct prom_family_rec {
        const char *name, *unit, *help;
        enum prom_type type;
        size_t first_sample, n_samples;
};

struct prom_writer {
        struct arena_chunk *arena;
        struct prom_family_rec *families;
        size_t n_families, cap_families;
        struct prom_sample *samples;
        size_t n_samples, cap_samples;
        /*
         * About the text exposition's length: names, help and label strings
         * with room for the values, so that rendering grows its buffer once
         * rather than copying it at each doubling.
         */
        size_t text_bytes;
};

static void *arena_alloc(struct prom_writer *w, size_t n) {
        struct arena_chunk *c = w->arena;

        n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
        if (!c || c->size - c->used < n) {
                size_t size = MAX(n, (size_t) ARENA_CHUNK_SIZE);

                c = xmalloc(sizeof(*c) + size);
                c->next = w->arena;
                c->used = 0;
                c->size = size;
                w->arena = c;
        }
        void *p = (uint8_t *) c->data + c->used;
        c->used += n;
        return p;
}

static const char *arena_strdup(struct prom_writer *w, const char *s) {
        size_t n = strlen(s) + 1;

        return memcpy(arena_alloc(w, n), s, n);
}

static void *arena_memdup(struct prom_writer *w, const void *p, size_t n) {
        return n ? memcpy(arena_alloc(w, n), p, n) : NULL;
}

struct prom_writer *prom_writer_new(void) {
        return xcalloc(1, sizeof(struct prom_writer));
}

struct prom_writer *prom_writer_free(struct prom_writer *w) {
        if (!w)
                return NULL;
        while (w->arena) {
                struct arena_chunk *next = w->arena->next;
                free(w->arena);
                w->arena = next;
        }
        free(w->families);
        free(w->samples);
        free(w);
        return NULL;
}

void prom_family_unit(struct prom_writer *w, const char *name, enum prom_type type, const char *unit,
                      const char *help) {
        if (w->n_families == w->cap_families) {
                w->cap_families = w->cap_families ? w->cap_families * 2 : 32;
                w->families = xrealloc(w->families, w->cap_families * sizeof(*w->families));
        }
        w->text_bytes += 2 * strlen(name) + strlen(help) + (unit ? strlen(name) + strlen(unit) : 0) + 32;
        w->families[w->n_families++] = (struct prom_family_rec) {
                .name = arena_strdup(w, name),
                .unit = unit ? arena_strdup(w, unit) : NULL,
                .help = arena_strdup(w, help),
                .type = type,
                .first_sample = w->n_samples,
        };
}

static struct prom_sample *new_sample(struct prom_writer *w, const char *const *labels) {
        struct prom_sample *s;
        const char **copy;
        size_t n = 0, bytes = 0;
        char *p;

        /* A sample outside any family is a programming error in the caller. */
        if (w->n_families == 0)
                abort();
        while (labels && labels[2 * n] && labels[2 * n + 1]) {
                bytes += strlen(labels[2 * n]) + strlen(labels[2 * n + 1]) + 2;
                n++;
        }
        /* The pointers, then the strings they point to, in one allocation. */
        copy = arena_alloc(w, (2 * n + 1) * sizeof(char *) + bytes);
        p = (char *) (copy + 2 * n + 1);
        for (size_t i = 0; i < 2 * n; i++) {
                size_t len = strlen(labels[i]) + 1;

                copy[i] = memcpy(p, labels[i], len);
                p += len;
        }
        copy[2 * n] = NULL;

        if (w->n_samples == w->cap_samples) {
                w->cap_samples = w->cap_samples ? w->cap_samples * 2 : 128;
                w->samples = xrealloc(w->samples, w->cap_samples * sizeof(*w->samples));
        }
        s = &w->samples[w->n_samples++];
        *s = (struct prom_sample) { .labels = copy, .n_labels = n };
        w->families[w->n_families - 1].n_samples++;
        /* The name, the labels with their quotes and a value of up to 24 characters. */
        w->text_bytes += strlen(w->families[w->n_families - 1].name) + bytes + 4 * n + 32;
        return s;
}

void prom_sample_u64(struct prom_writer *w, const char *const *labels, uint64_t v) {
        struct prom_sample *s = new_sample(w, labels);

        s->is_u64 = true;
        s->u64 = v;
        s->value = (double) v;
}

void prom_write_counter_rows(struct prom_writer *w, const struct prom_counter_row *rows, size_t n) {
        for (size_t i = 0; i < n; i++) {
                if (i == 0 || !streq(rows[i].name, rows[i - 1].name))
                        prom_family(w, rows[i].name, PROM_COUNTER, rows[i].help);
                prom_sample_u64(w,
                                rows[i].label ? (const char *const[]) { rows[i].label, rows[i].label_value, NULL }
                                              : NULL,
                                rows[i].value);
        }
}

void prom_sample_double(struct prom_writer *w, const char *const *labels, double v) {
        new_sample(w, labels)->value = v;
}

void prom_sample_histogram(struct prom_writer *w, const char *const *labels,
                           const struct prom_histogram *h) {
        size_t before = w->text_bytes;
        struct prom_sample *s = new_sample(w, labels);
        struct prom_histogram *c = arena_memdup(w, h, sizeof(*h));

        c->upper_bounds = arena_memdup(w, h->upper_bounds, h->n_buckets * sizeof(double));
        c->cumulative_counts = arena_memdup(w, h->cumulative_counts, h->n_buckets * sizeof(uint64_t));
        c->native_index = arena_memdup(w, h->native_index, h->n_native * sizeof(int32_t));
        c->native_count = arena_memdup(w, h->native_count, h->n_native * sizeof(uint64_t));
        s->hist = c;
        /* Each bucket, the sum and the count repeat the series with a suffix (and le="..."). */
        w->text_bytes = w->text_bytes + (h->n_buckets + 3) * (w->text_bytes - before + 24);
}

/* Text formats. */

/* Only these need escaping: a scan finds the runs between them, copied whole. */
static void escape(struct strbuf *out, const char *s, bool quotes) {
        const char *special = quotes ? "\\\n\"" : "\\\n";

        for (;;) {
                size_t n = strcspn(s, special);

                strbuf_append(out, s, n);
                s += n;
                if (!*s)
                        return;
                strbuf_append(out, *s == '\\' ? "\\\\" : *s == '\n' ? "\\n" : "\\\"", 2);
                s++;
        }
}

void prom_escape_label_value(struct strbuf *out, const char *value) {
        escape(out, value, true);
}

/* An integral v, |v| < 1e15: its sign (of -0 too) and digits, as "%.15g" writes it. */
static void write_integral(struct strbuf *out, double v) {
        if (signbit(v))
                strbuf_putc(out, '-');
        strbuf_put_u64(out, (uint64_t) fabs(v));
}

static void write_double(struct strbuf *out, double v, bool openmetrics) {
        if (isnan(v))
                strbuf_puts(out, "NaN");
        else if (isinf(v))
                strbuf_puts(out, v > 0 ? "+Inf" : "-Inf");
        else if (v == floor(v) && fabs(v) < 1e15) {
                /* "%.15g" of such a value is its digits; OpenMetrics writes integral floats as "16.0" ("%.1f"). */
                write_integral(out, v);
                if (openmetrics)
                        strbuf_puts(out, ".0");
        } else {
                /* The shortest text that parses back to v, as Go's strconv.FormatFloat(v, 'g', -1, 64). */
                char buf[FORMAT_DOUBLE_MAX];

                strbuf_puts(out, format_double_shortest(v, buf));
        }
}

/* name, suffix and the sample's labels up to where "le" would go: "x_bucket{op=\"load\"" */
static void write_series_start(struct strbuf *out, const char *name, const char *suffix,
                               const struct prom_sample *s, bool le) {
        strbuf_puts(out, name);
        strbuf_puts(out, suffix);
        if (s->n_labels > 0 || le)
                strbuf_putc(out, '{');
        for (size_t i = 0; i < s->n_labels; i++) {
                if (i > 0)
                        strbuf_putc(out, ',');
                strbuf_puts(out, s->labels[2 * i]);
                strbuf_append(out, "=\"", 2);
                escape(out, s->labels[2 * i + 1], true);
                strbuf_putc(out, '"');
        }
}

static void write_series(struct strbuf *out, const char *name, const char *suffix,
                         const struct prom_sample *s) {
        write_series_start(out, name, suffix, s, false);
        if (s->n_labels > 0)
                strbuf_putc(out, '}');
        strbuf_putc(out, ' ');
}

static void write_u64_line(struct strbuf *out, uint64_t v) {
        strbuf_put_u64(out, v);
        strbuf_putc(out, '\n');
}

static void write_histogram_text(struct strbuf *out, const char *name, const struct prom_sample *s,
                                 bool openmetrics) {
        const struct prom_histogram *h = s->hist;
        struct strbuf bucket = STRBUF_INIT;

        /* Every bucket's series starts alike: written once, copied per bucket. */
        write_series_start(&bucket, name, "_bucket", s, true);
        if (s->n_labels > 0)
                strbuf_putc(&bucket, ',');
        strbuf_append(&bucket, "le=\"", 4);
        for (size_t i = 0; i < h->n_buckets; i++) {
                strbuf_append(out, bucket.buf, bucket.len);
                write_double(out, h->upper_bounds[i], openmetrics);
                strbuf_append(out, "\"} ", 3);
                write_u64_line(out, h->cumulative_counts[i]);
        }
        strbuf_append(out, bucket.buf, bucket.len);
        strbuf_append(out, "+Inf\"} ", 7);
        write_u64_line(out, h->count);
        write_series(out, name, "_sum", s);
        write_double(out, h->sum, openmetrics);
        strbuf_putc(out, '\n');
        write_series(out, name, "_count", s);
        write_u64_line(out, h->count);
        strbuf_done(&bucket);
}

static const char *const type_names[] = {
        [PROM_COUNTER] = "counter",
        [PROM_GAUGE] = "gauge",
        [PROM_HISTOGRAM] = "histogram",
        [PROM_UNTYPED] = "untyped",
};

static void render_text(const struct prom_writer *w, bool openmetrics, struct strbuf *out) {
        strbuf_reserve(out, w->text_bytes);
        for (size_t f = 0; f < w->n_families; f++) {
                const struct prom_family_rec *fam = &w->families[f];
                char base[PROM_FAMILY_NAME_MAX];
                const char *meta = fam->name, *sample_suffix = "";

                /* OpenMetrics: the counter family is "x", its sample "x_total". */
                if (openmetrics && fam->type == PROM_COUNTER) {
                        size_t n = strlen(fam->name);

                        if (n > 6 && n - 6 < sizeof(base) && streq(fam->name + n - 6, "_total")) {
                                memcpy(base, fam->name, n - 6);
                                base[n - 6] = '\0';
                                meta = base;
                                sample_suffix = "_total";
                        }
                }
                strbuf_printf(out, "# HELP %s ", meta);
                escape(out, fam->help, openmetrics);
                strbuf_printf(out, "\n# TYPE %s %s\n", meta,
                              openmetrics && fam->type == PROM_UNTYPED ? "unknown" : type_names[fam->type]);
                if (openmetrics && fam->unit)
                        strbuf_printf(out, "# UNIT %s %s\n", meta, fam->unit);

                for (size_t i = 0; i < fam->n_samples; i++) {
                        const struct prom_sample *s = &w->samples[fam->first_sample + i];

                        if (s->hist) {
                                write_histogram_text(out, meta, s, openmetrics);
                                continue;
                        }
                        write_series(out, meta, sample_suffix, s);
                        if (s->is_u64)
                                write_u64_line(out, s->u64);
                        else {
                                write_double(out, s->value, openmetrics);
                                strbuf_putc(out, '\n');
                        }
                }
        }
        if (openmetrics)
                strbuf_puts(out, "# EOF\n");
}

/* Protobuf: one length-delimited MetricFamily after another. */

/* A u64 in 7-bit groups: ceil(64 / 7) bytes (protobuf's encoding, "Base 128 Varints"). */
#define VARINT_MAX_BYTES 10U

static void put_varint(struct strbuf *out, uint64_t v) {
        uint8_t b[VARINT_MAX_BYTES];
        size_t n = 0;

        do {
                b[n] = (uint8_t) (v & 0x7f);
                v >>= 7;
                if (v)
                        b[n] |= 0x80;
                n++;
        } while (v);
        strbuf_append(out, b, n);
}

static Io__Prometheus__Client__Histogram *pb_histogram(struct pb_scratch *sc, const struct prom_histogram *h) {
        Io__Prometheus__Client__Histogram *ph = pb_scratch_alloc(sc, sizeof(*ph));

        io__prometheus__client__histogram__init(ph);
        ph->has_sample_count = true;
        ph->sample_count = h->count;
        ph->has_sample_sum = true;
        ph->sample_sum = h->sum;
        ph->n_bucket = h->n_buckets;
        ph->bucket = pb_scratch_alloc(sc, (h->n_buckets + 1) * sizeof(*ph->bucket));
        for (size_t i = 0; i < h->n_buckets; i++) {
                Io__Prometheus__Client__Bucket *b = pb_scratch_alloc(sc, sizeof(*b));

                io__prometheus__client__bucket__init(b);
                b->has_cumulative_count = b->has_upper_bound = true;
                b->cumulative_count = h->cumulative_counts[i];
                b->upper_bound = h->upper_bounds[i];
                ph->bucket[i] = b;
        }
        if (!h->native)
                return ph;

        ph->has_schema = ph->has_zero_threshold = ph->has_zero_count = true;
        ph->schema = h->schema;
        ph->zero_threshold = h->zero_threshold;
        ph->zero_count = h->zero_count;

        /* Spans of consecutive indexes; the first offset is absolute, then gaps. */
        ph->positive_span = pb_scratch_alloc(sc, (h->n_native + 1) * sizeof(*ph->positive_span));
        ph->positive_delta = pb_scratch_alloc(sc, (h->n_native + 1) * sizeof(*ph->positive_delta));
        for (size_t i = 0; i < h->n_native; i++) {
                Io__Prometheus__Client__BucketSpan *span;

                if (i == 0 || h->native_index[i] != h->native_index[i - 1] + 1) {
                        span = pb_scratch_alloc(sc, sizeof(*span));
                        io__prometheus__client__bucket_span__init(span);
                        span->has_offset = span->has_length = true;
                        span->offset = i == 0 ? h->native_index[0]
                                              : h->native_index[i] - h->native_index[i - 1] - 1;
                        ph->positive_span[ph->n_positive_span++] = span;
                }
                ph->positive_span[ph->n_positive_span - 1]->length++;
                ph->positive_delta[ph->n_positive_delta++] =
                        (int64_t) h->native_count[i] - (i == 0 ? 0 : (int64_t) h->native_count[i - 1]);
        }
        if (h->n_native == 0) {
                /* A no-op span marks an empty histogram as native (native_histograms.md). */
                Io__Prometheus__Client__BucketSpan *span = pb_scratch_alloc(sc, sizeof(*span));

                io__prometheus__client__bucket_span__init(span);
                span->has_offset = span->has_length = true;
                ph->positive_span[ph->n_positive_span++] = span;
        }
        return ph;
}

static void render_protobuf(const struct prom_writer *w, struct strbuf *out) {
        static const Io__Prometheus__Client__MetricType types[] = {
                [PROM_COUNTER] = IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER,
                [PROM_GAUGE] = IO__PROMETHEUS__CLIENT__METRIC_TYPE__GAUGE,
                [PROM_HISTOGRAM] = IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM,
                [PROM_UNTYPED] = IO__PROMETHEUS__CLIENT__METRIC_TYPE__UNTYPED,
        };

        for (size_t f = 0; f < w->n_families; f++) {
                const struct prom_family_rec *fam = &w->families[f];
                Io__Prometheus__Client__MetricFamily mf = IO__PROMETHEUS__CLIENT__METRIC_FAMILY__INIT;
                struct pb_scratch sc = {};
                size_t len;

                mf.name = (char *) fam->name;
                mf.help = (char *) fam->help;
                mf.has_type = true;
                mf.type = types[fam->type];
                if (fam->unit)
                        mf.unit = (char *) fam->unit;
                mf.n_metric = fam->n_samples;
                mf.metric = pb_scratch_alloc(&sc, (fam->n_samples + 1) * sizeof(*mf.metric));

                for (size_t i = 0; i < fam->n_samples; i++) {
                        const struct prom_sample *s = &w->samples[fam->first_sample + i];
                        Io__Prometheus__Client__Metric *m = pb_scratch_alloc(&sc, sizeof(*m));

                        io__prometheus__client__metric__init(m);
                        m->n_label = s->n_labels;
                        m->label = pb_scratch_alloc(&sc, (s->n_labels + 1) * sizeof(*m->label));
                        for (size_t l = 0; l < s->n_labels; l++) {
                                Io__Prometheus__Client__LabelPair *lp = pb_scratch_alloc(&sc, sizeof(*lp));

                                io__prometheus__client__label_pair__init(lp);
                                lp->name = (char *) s->labels[2 * l];
                                lp->value = (char *) s->labels[2 * l + 1];
                                m->label[l] = lp;
                        }
                        if (s->hist)
                                m->histogram = pb_histogram(&sc, s->hist);
                        else if (fam->type == PROM_COUNTER) {
                                m->counter = pb_scratch_alloc(&sc, sizeof(*m->counter));
                                io__prometheus__client__counter__init(m->counter);
                                m->counter->has_value = true;
                                m->counter->value = s->value;
                        } else if (fam->type == PROM_GAUGE) {
                                m->gauge = pb_scratch_alloc(&sc, sizeof(*m->gauge));
                                io__prometheus__client__gauge__init(m->gauge);
                                m->gauge->has_value = true;
                                m->gauge->value = s->value;
                        } else {
                                m->untyped = pb_scratch_alloc(&sc, sizeof(*m->untyped));
                                io__prometheus__client__untyped__init(m->untyped);
                                m->untyped->has_value = true;
                                m->untyped->value = s->value;
                        }
                        mf.metric[i] = m;
                }

                len = io__prometheus__client__metric_family__get_packed_size(&mf);
                put_varint(out, len);
                strbuf_reserve(out, len);
                io__prometheus__client__metric_family__pack(&mf, (uint8_t *) out->buf + out->len);
                out->len += len;
                out->buf[out->len] = '\0';
                pb_scratch_free(&sc);
        }
}

void prom_render(const struct prom_writer *w, enum prom_format format, struct strbuf *out) {
        switch (format) {
        case PROM_FORMAT_PROTOBUF:
                render_protobuf(w, out);
                break;
        case PROM_FORMAT_OPENMETRICS:
                render_text(w, true, out);
                break;
        case PROM_FORMAT_TEXT:
        default:
                render_text(w, false, out);
                break;
        }
}
